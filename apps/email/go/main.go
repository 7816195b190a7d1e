// The email server in Go: the peer a Go programmer would write instead of apps/email (same
// protocol, same behaviour, same driver; see ../README.md). A goroutine per connection reads
// requests and acknowledges each, a goroutine per request does its work and writes the DONE
// line, a goroutine per mailbox runs the periodic compression check. Go has no priorities: the
// scheduler treats every goroutine alike (the papers' priority-oblivious baseline, written the
// idiomatic Go way).
//
// Print and compress of one message coordinate like the C++ server: each swaps its own "done"
// channel into the message's slot with a compare-and-swap and waits for the one it displaced.
// Huffman coding: compress/flate at level HuffmanOnly (the zlib Z_HUFFMAN_ONLY of the C++ server).
package main

import (
	"bufio"
	"bytes"
	"compress/flate"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"promptly/apps/common"
)

const maxLine = 64 * 1024
const writeTimeout = 5 * time.Second

type message struct {
	id         uint64
	from       string
	size       int
	body       []byte // plain text or its Huffman code; touched only inside the op chain
	compressed atomic.Bool
	lastOp     atomic.Pointer[chan struct{}]
}

type mailbox struct {
	owner    string
	mu       sync.Mutex
	messages []*message
	bytes    int // plain-text bytes of messages
}

type counters struct {
	Requests, Sends, Sorts, Prints, Errors, CompressTasks, MessagesCompressed uint64
	Periods, MissedPeriods, WriteFailures, InFlight                           uint64
	Busy                                                                      uint64 // refused at an in-flight limit
	RefusedConnections                                                        uint64 // refused at max-connections
	TimedOutConnections                                                       uint64 // closed at idle-timeout
}

type server struct {
	capacity, seedMessages, seedBytes, chunk int
	maxInFlightPerConn, maxInFlight          uint64 // acknowledged requests not yet answered, at most
	maxMailboxes                             int
	mailboxBytes                             int           // plain-text bytes kept per mailbox
	idleTimeout                              time.Duration // 0: none
	period                                   time.Duration
	ln                                       net.Listener
	stopping                                 chan struct{}

	boxMu  sync.Mutex
	boxes  map[string]*mailbox
	nextID atomic.Uint64

	statMu     sync.Mutex
	stats      counters
	compressUs common.RecentSamples

	conns    sync.WaitGroup // connection goroutines
	checkers sync.WaitGroup
	requests sync.WaitGroup // acknowledged requests not yet answered
	connMu   sync.Mutex
	live     map[net.Conn]struct{}
}

type conn struct {
	c        net.Conn
	wmu      sync.Mutex
	user     string
	box      *mailbox
	seq      uint64
	busy     sync.WaitGroup // this connection's requests still running
	inFlight uint64         // its acknowledged requests not yet answered; under server.statMu
}

func (s *server) count(f func(*counters)) {
	s.statMu.Lock()
	f(&s.stats)
	s.statMu.Unlock()
}

func (s *server) writeLine(c *conn, line string) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		s.count(func(k *counters) { k.WriteFailures++ })
		return false
	}
	return true
}

func (s *server) endRequest(c *conn, f func(*counters)) {
	s.count(func(k *counters) { f(k); k.InFlight--; c.inFlight-- })
	s.requests.Done()
}

// ---- message text (the format of ../message_text.hpp) -----------------------------------

var vocabulary = []string{"the", "meeting", "is", "moved", "to", "thursday", "please", "review",
	"attached", "report", "and", "send", "your", "comments", "before", "noon",
	"we", "need", "a", "budget", "for", "next", "quarter", "thanks",
	"regards", "project", "status", "update", "server", "release", "notes", "team"}

func fnv1a(b []byte) uint64 {
	h := uint64(1469598103934665603)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func makeBody(from string, k uint64, size int, seed uint64) []byte {
	x := seed*0x9E3779B97F4A7C15 + k + 1
	next := func() uint64 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		return x * 2685821657736338717
	}
	prefix := fmt.Sprintf("from=%s n=%d sum=", from, k)
	want := size - (len(prefix) + 17)
	if want < 0 {
		want = 0
	}
	var text []byte
	for len(text) < want {
		text = append(text, vocabulary[next()%uint64(len(vocabulary))]...)
		text = append(text, ' ')
	}
	text = text[:want]
	if len(text) > 0 {
		text[len(text)-1] = '.'
	}
	return []byte(fmt.Sprintf("%s%016x %s", prefix, fnv1a(text), text))
}

// ---- Huffman coding ------------------------------------------------------------------------

// flate writers and readers allocate large tables; pools reuse them, as Go's documentation
// suggests for compressors on hot paths.
var writers = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.HuffmanOnly); return w }}
var readers = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

func huffmanCompress(plain []byte) []byte {
	var b bytes.Buffer
	w := writers.Get().(*flate.Writer)
	w.Reset(&b)
	w.Write(plain)
	w.Close()
	writers.Put(w)
	return b.Bytes()
}

func huffmanDecompress(packed []byte, size int) ([]byte, error) {
	out := make([]byte, size)
	r := readers.Get().(io.ReadCloser)
	defer readers.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(packed), nil); err != nil {
		return nil, fmt.Errorf("huffman: %v", err)
	}
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("huffman: %v", err)
	}
	return out, nil
}

// ---- mailboxes -----------------------------------------------------------------------------

// deliver keeps at most capacity messages of at most maxBytes of text together, dropping the
// oldest (as the C++ server; m itself fits, its sender checked).
func (b *mailbox) deliver(m *message, capacity, maxBytes int) {
	b.mu.Lock()
	b.messages = append(b.messages, m)
	b.bytes += m.size
	drop := 0
	for len(b.messages)-drop > capacity || b.bytes > maxBytes {
		b.bytes -= b.messages[drop].size
		drop++
	}
	if drop > 0 {
		b.messages = append([]*message(nil), b.messages[drop:]...)
	}
	b.mu.Unlock()
}

func (b *mailbox) snapshot() []*message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*message(nil), b.messages...)
}

// open returns the user's mailbox and whether this call created it; a new mailbox is seeded
// before anyone else can see it (two first logins of one user at once both find the seeds).
// open returns name's mailbox and whether it created it; nil when name has none and the server
// holds maxMailboxes already.
func (s *server) open(name string) (*mailbox, bool) {
	s.boxMu.Lock()
	b, ok := s.boxes[name]
	full := len(s.boxes) >= s.maxMailboxes
	s.boxMu.Unlock()
	if ok {
		return b, false
	}
	if full {
		return nil, false
	}
	b = &mailbox{owner: name}
	salt := fnv1a([]byte(name))
	for k := 0; k < s.seedMessages; k++ {
		body := makeBody("postmaster", uint64(k), s.seedBytes, salt)
		b.deliver(&message{id: s.nextID.Add(1), from: "postmaster", size: len(body), body: body}, s.capacity, s.mailboxBytes)
	}
	s.boxMu.Lock()
	defer s.boxMu.Unlock()
	if old, ok := s.boxes[name]; ok {
		return old, false
	}
	if len(s.boxes) >= s.maxMailboxes {
		return nil, false
	}
	s.boxes[name] = b
	return b, true
}

func (s *server) find(name string) *mailbox {
	s.boxMu.Lock()
	defer s.boxMu.Unlock()
	return s.boxes[name]
}

// ---- print and compress ----------------------------------------------------------------------

// messageOp runs one print (c != nil) or compress of m after the operation it displaces.
func (s *server) messageOp(m *message, c *conn, seq uint64) {
	mine := make(chan struct{})
	prev := m.lastOp.Swap(&mine) // a CAS loop in the C++ server; Swap is the same exchange
	if prev != nil {
		<-*prev
	}
	defer close(mine)
	if c != nil {
		if m.compressed.Load() {
			plain, err := huffmanDecompress(m.body, m.size)
			if err != nil {
				s.writeLine(c, fmt.Sprintf("DONE %d ERR %v", seq, err))
				s.endRequest(c, func(k *counters) { k.Prints++ })
				return
			}
			m.body = plain
			m.compressed.Store(false)
		}
		s.writeLine(c, fmt.Sprintf("DONE %d PRINT %d %s", seq, m.id, m.body))
		s.endRequest(c, func(k *counters) { k.Prints++ })
	} else if !m.compressed.Load() {
		m.body = huffmanCompress(m.body)
		m.compressed.Store(true)
		s.count(func(k *counters) { k.MessagesCompressed++ })
	}
}

func (s *server) compressChunk(chunk []*message, created time.Time) {
	var wg sync.WaitGroup
	for _, m := range chunk {
		wg.Add(1)
		go func(m *message) { defer wg.Done(); s.messageOp(m, nil, 0) }(m)
	}
	wg.Wait()
	us := float64(time.Since(created).Nanoseconds()) / 1e3
	s.statMu.Lock()
	s.stats.CompressTasks++
	s.compressUs.Add(us)
	s.statMu.Unlock()
}

func (s *server) checker(b *mailbox) {
	defer s.checkers.Done()
	start := time.Now()
	t := time.NewTicker(s.period)
	defer t.Stop()
	var seen uint64
	for {
		select {
		case <-s.stopping:
			return
		case now := <-t.C:
			// A Ticker drops ticks a slow receiver misses; count them from the schedule.
			due := uint64(now.Sub(start) / s.period)
			if due <= seen {
				due = seen + 1
			}
			ticks := due - seen
			seen = due
			s.count(func(k *counters) { k.Periods += ticks; k.MissedPeriods += ticks - 1 })
			var todo []*message
			for _, m := range b.snapshot() {
				if !m.compressed.Load() {
					todo = append(todo, m)
				}
			}
			var wg sync.WaitGroup
			for i := 0; i < len(todo); i += s.chunk {
				j := i + s.chunk
				if j > len(todo) {
					j = len(todo)
				}
				wg.Add(1)
				go func(chunk []*message, created time.Time) { defer wg.Done(); s.compressChunk(chunk, created) }(todo[i:j], time.Now())
			}
			wg.Wait()
		}
	}
}

// ---- requests -----------------------------------------------------------------------------

func validName(n string) bool {
	if len(n) == 0 || len(n) > 32 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func (s *server) send(c *conn, seq uint64, from, to, text string) {
	reply := fmt.Sprintf("DONE %d", seq)
	if b := s.find(to); b != nil {
		m := &message{id: s.nextID.Add(1), from: from, size: len(text), body: []byte(text)}
		reply += fmt.Sprintf(" SEND %d", m.id)
		b.deliver(m, s.capacity, s.mailboxBytes)
	} else {
		reply += fmt.Sprintf(" ERR no such user '%s'", to)
	}
	s.writeLine(c, reply)
	s.endRequest(c, func(k *counters) { k.Sends++ })
}

func (s *server) sortBox(c *conn, seq uint64, b *mailbox, key string) {
	ms := b.snapshot()
	sort.SliceStable(ms, func(i, j int) bool {
		a, z := ms[i], ms[j]
		switch key {
		case "sender":
			if a.from != z.from {
				return a.from < z.from
			}
		case "size":
			if a.size != z.size {
				return a.size < z.size
			}
		}
		return a.id < z.id
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "DONE %d SORT %s %d", seq, key, len(ms))
	for _, m := range ms {
		switch key {
		case "date":
			fmt.Fprintf(&sb, " %d:%d", m.id, m.id)
		case "sender":
			fmt.Fprintf(&sb, " %d:%s", m.id, m.from)
		default:
			fmt.Fprintf(&sb, " %d:%d", m.id, m.size)
		}
	}
	s.writeLine(c, sb.String())
	s.endRequest(c, func(k *counters) { k.Sorts++ })
}

func (s *server) statsJSON() string {
	s.statMu.Lock()
	k := s.stats
	us := append([]float64(nil), s.compressUs.Values...)
	s.statMu.Unlock()
	sort.Float64s(us)
	rank := func(q float64) float64 {
		if len(us) == 0 {
			return 0
		}
		i := int(float64(len(us))*q+0.999999) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(us) {
			i = len(us) - 1
		}
		return us[i]
	}
	mean, max := 0.0, 0.0
	for _, v := range us {
		mean += v
	}
	if len(us) > 0 {
		mean /= float64(len(us))
		max = us[len(us)-1]
	}
	return fmt.Sprintf(`{"requests": %d, "sends": %d, "sorts": %d, "prints": %d, "errors": %d, "compress_tasks": %d, "messages_compressed": %d, "periods": %d, "missed_periods": %d, "write_failures": %d, "in_flight": %d, "busy": %d, "refused_connections": %d, "timed_out_connections": %d, "compress_us_mean": %.1f, "compress_us_p50": %.1f, "compress_us_p95": %.1f, "compress_us_p99": %.1f, "compress_us_max": %.1f}`,
		k.Requests, k.Sends, k.Sorts, k.Prints, k.Errors, k.CompressTasks, k.MessagesCompressed, k.Periods,
		k.MissedPeriods, k.WriteFailures, k.InFlight, k.Busy, k.RefusedConnections, k.TimedOutConnections, mean, rank(0.5), rank(0.95), rank(0.99), max)
}

const helpText = "USER <name>: log in | SEND <to> <text>: send | SORT <date|sender|size>: sort my mailbox | " +
	"PRINT <index>: print my index-th message (0 = oldest) | STATS | RESET | QUIT."

func (s *server) login(c *conn, name string) bool {
	b, created := s.open(name)
	if b == nil {
		return false
	}
	if created {
		s.checkers.Add(1)
		go s.checker(b)
	}
	c.user, c.box = name, b
	return true
}

// ack acknowledges the connection's next request, then starts its goroutine (so the ACK
// precedes the DONE), or refuses it with "ERR busy" at an in-flight limit, as the C++ server.
func (s *server) ack(c *conn, work func(seq uint64)) bool {
	refused := ""
	s.statMu.Lock()
	if c.inFlight >= s.maxInFlightPerConn {
		refused = fmt.Sprintf("%d requests of this connection are not answered yet (its limit); read the replies, then retry", c.inFlight)
	} else if s.stats.InFlight >= s.maxInFlight {
		refused = fmt.Sprintf("the server has %d requests not answered yet (its limit); retry later", s.stats.InFlight)
	}
	if refused != "" {
		s.stats.Busy++
	} else {
		s.stats.InFlight++
		c.inFlight++
	}
	s.statMu.Unlock()
	if refused != "" {
		return s.writeLine(c, "ERR busy: "+refused)
	}
	s.requests.Add(1)
	c.seq++
	seq := c.seq
	ok := s.writeLine(c, fmt.Sprintf("ACK %d", seq))
	c.busy.Add(1)
	go func() { defer c.busy.Done(); work(seq) }()
	return ok
}

func (s *server) serveConn(nc net.Conn) {
	defer s.conns.Done()
	c := &conn{c: nc}
	defer func() {
		s.connMu.Lock()
		delete(s.live, nc)
		s.connMu.Unlock()
		// The socket closes once the last request of this connection has answered.
		go func() { c.busy.Wait(); nc.Close() }()
	}()
	r := bufio.NewReaderSize(nc, 16*1024)
	// As the C++ server: a fresh deadline per line (bytes trickled into one line do not extend
	// it), set under connMu unless the server is stopping (stop's past deadline must win).
	armIdle := func() {
		if s.idleTimeout == 0 {
			return
		}
		s.connMu.Lock()
		select {
		case <-s.stopping:
		default:
			nc.SetReadDeadline(time.Now().Add(s.idleTimeout))
		}
		s.connMu.Unlock()
	}
	var carry []byte // a line's part read before a timeout that found requests in flight
	refuse := func(why string) bool {
		s.count(func(k *counters) { k.Errors++ })
		return s.writeLine(c, "ERR "+why)
	}
	for {
		armIdle()
		line, err := r.ReadSlice('\n')
		if len(carry) > 0 {
			line, carry = append(carry, line...), nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLine {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			if len(long) > maxLine {
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = r.ReadSlice('\n')
				}
				if err != nil || !refuse(fmt.Sprintf("request longer than %d bytes", maxLine)) {
					return
				}
				continue
			}
			line = long
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && s.idleTimeout > 0 {
			select {
			case <-s.stopping:
				return
			default:
			}
			s.statMu.Lock()
			waiting := c.inFlight > 0
			s.statMu.Unlock()
			if waiting { // waiting for its replies, not idle
				carry = append([]byte(nil), line...)
				continue
			}
			s.count(func(k *counters) { k.TimedOutConnections++ })
			s.writeLine(c, fmt.Sprintf("ERR idle: no request for %d ms (the server's idle timeout); closing", s.idleTimeout.Milliseconds()))
			return
		}
		if err != nil {
			return
		}
		text := strings.TrimRight(string(line), "\r\n")
		cmd, rest, _ := strings.Cut(text, " ")
		rest = strings.TrimLeft(rest, " ")
		needLogin := cmd == "SEND" || cmd == "SORT" || cmd == "PRINT"
		if needLogin && c.box == nil {
			if !refuse("log in first: USER <name>") {
				return
			}
			continue
		}
		ok := true
		switch cmd {
		case "USER":
			if !validName(strings.TrimSpace(rest)) {
				ok = refuse("USER needs a name of 1-32 characters [A-Za-z0-9_.-]")
				break
			}
			s.count(func(k *counters) { k.Requests++ })
			if name := strings.TrimSpace(rest); !s.login(c, name) {
				ok = refuse(fmt.Sprintf("no mailbox for '%s' and the server holds %d mailboxes (its limit); log in as an existing user", name, s.maxMailboxes))
				break
			}
			c.box.mu.Lock()
			n := len(c.box.messages)
			c.box.mu.Unlock()
			ok = s.writeLine(c, fmt.Sprintf("OK %s %d", c.user, n))
		case "SEND":
			to, body, _ := strings.Cut(rest, " ")
			body = strings.TrimLeft(body, " ")
			if !validName(to) || body == "" {
				ok = refuse("SEND needs a recipient and a text")
				break
			}
			s.count(func(k *counters) { k.Requests++ })
			if len(body) > s.mailboxBytes {
				ok = refuse(fmt.Sprintf("a message of %d bytes does not fit a mailbox (%d bytes)", len(body), s.mailboxBytes))
				break
			}
			from := c.user
			ok = s.ack(c, func(seq uint64) { s.send(c, seq, from, to, body) })
		case "SORT":
			key := strings.TrimSpace(rest)
			if key != "date" && key != "sender" && key != "size" {
				ok = refuse("SORT needs a key: date, sender or size")
				break
			}
			s.count(func(k *counters) { k.Requests++ })
			b := c.box
			ok = s.ack(c, func(seq uint64) { s.sortBox(c, seq, b, key) })
		case "PRINT":
			i, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				ok = refuse("PRINT needs a message index (0 = oldest)")
				break
			}
			ms := c.box.snapshot()
			if i >= uint64(len(ms)) {
				ok = refuse(fmt.Sprintf("no message %d (the mailbox holds %d)", i, len(ms)))
				break
			}
			s.count(func(k *counters) { k.Requests++ })
			m := ms[i]
			ok = s.ack(c, func(seq uint64) { s.messageOp(m, c, seq) })
		case "STATS":
			s.count(func(k *counters) { k.Requests++ })
			ok = s.writeLine(c, s.statsJSON())
		case "RESET":
			s.statMu.Lock()
			s.stats = counters{InFlight: s.stats.InFlight}
			s.compressUs = common.RecentSamples{}
			s.statMu.Unlock()
			ok = s.writeLine(c, "OK reset")
		case "HELP":
			ok = s.writeLine(c, helpText)
		case "QUIT":
			s.writeLine(c, "BYE")
			return
		case "":
			ok = refuse("empty request; HELP lists the requests")
		default:
			if len(cmd) > 32 {
				cmd = cmd[:32]
			}
			ok = refuse(fmt.Sprintf("unknown request '%s'; HELP lists the requests", cmd))
		}
		if !ok {
			return
		}
	}
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port (0: any free port)")
	workers := flag.Int("workers", 0, "GOMAXPROCS (0: Go's default)")
	capacity := flag.Int("capacity", 64, "messages kept per mailbox")
	mailboxKiB := flag.Int("mailbox-kib", 1024, "text kept per mailbox, KiB (oldest messages dropped)")
	seedMessages := flag.Int("seed-messages", 16, "messages a new mailbox starts with")
	periodMs := flag.Int("period-ms", 250, "compression check period")
	chunk := flag.Int("chunk", 10, "messages per compress task")
	maxInFlightPerConn := flag.Int("max-in-flight-per-connection", 64, "acknowledged requests not yet answered, per connection")
	maxInFlight := flag.Int("max-in-flight", 4096, "acknowledged requests not yet answered, over the server")
	maxConnections := flag.Int("max-connections", 1024, "connections open at once; more get ERR busy and are closed")
	maxMailboxes := flag.Int("max-mailboxes", 1024, "mailboxes, at most; a login that would create one more is refused")
	idleTimeoutMs := flag.Int("idle-timeout-ms", 600000, "time a connection may send no request while none of its requests is in flight (0: no limit)")
	flag.Parse()
	if flag.NArg() > 0 || *capacity < 1 || *chunk < 1 || *periodMs < 1 || *seedMessages > *capacity || *seedMessages*8 > *mailboxKiB ||
		*maxInFlightPerConn < 1 || *maxInFlight < 1 || *maxConnections < 1 || *maxMailboxes < 1 || *idleTimeoutMs < 0 {
		fmt.Fprintln(os.Stderr, "email_server (go): bad arguments")
		os.Exit(2)
	}
	if *workers > 0 {
		runtime.GOMAXPROCS(*workers)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "email_server (go):", err)
		os.Exit(1)
	}
	s := &server{capacity: *capacity, seedMessages: *seedMessages, seedBytes: 8192, chunk: *chunk,
		maxInFlightPerConn: uint64(*maxInFlightPerConn), maxInFlight: uint64(*maxInFlight), maxMailboxes: *maxMailboxes, mailboxBytes: *mailboxKiB << 10,
		period: time.Duration(*periodMs) * time.Millisecond, idleTimeout: time.Duration(*idleTimeoutMs) * time.Millisecond,
		ln: ln, stopping: make(chan struct{}),
		boxes: map[string]*mailbox{}, live: map[net.Conn]struct{}{}}
	fmt.Printf("LISTENING %d\n", ln.Addr().(*net.TCPAddr).Port)
	fmt.Fprintf(os.Stderr, "email_server (go): listening on %s, GOMAXPROCS %d\n", ln.Addr(), runtime.GOMAXPROCS(0))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			nc, err := ln.Accept()
			if err != nil {
				select {
				case <-s.stopping:
					return
				default:
				}
				fmt.Fprintln(os.Stderr, "email_server (go): accept:", err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			nc.(*net.TCPConn).SetNoDelay(true)
			s.connMu.Lock()
			full := len(s.live) >= *maxConnections
			if !full {
				s.live[nc] = struct{}{}
			}
			s.connMu.Unlock()
			if full { // as the C++ server: say so, then close
				nc.SetWriteDeadline(time.Now().Add(time.Second))
				fmt.Fprintf(nc, "ERR busy: the server has %d connections open (its limit); try later\n", *maxConnections)
				nc.Close()
				s.count(func(k *counters) { k.RefusedConnections++ })
				continue
			}
			s.conns.Add(1)
			go s.serveConn(nc)
		}
	}()
	<-sig
	// Clean stop: no new connections, every connection loop released (a read deadline in the
	// past), every checker ended, every acknowledged request answered.
	close(s.stopping)
	ln.Close()
	<-accepted
	s.connMu.Lock()
	for nc := range s.live {
		nc.SetReadDeadline(time.Now())
	}
	s.connMu.Unlock()
	s.conns.Wait()
	s.checkers.Wait()
	s.requests.Wait()
	fmt.Fprintln(os.Stderr, "email_server (go): stopped;", s.statsJSON())
}
