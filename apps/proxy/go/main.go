// The caching web proxy in Go: the peer a Go programmer would write instead of apps/proxy
// (same behaviour, same driver; see ../README.md). net/http serves the clients (a goroutine
// per connection), a miss fetches the page with an http.Client, the cache is a sharded map of
// immutable pages, and two goroutines with tickers resize the cache and collect statistics.
// Go has no priorities: every goroutine is alike (the papers' priority-oblivious baseline).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"promptly/apps/common"
)

const shards = 64

type shard struct {
	mu    sync.Mutex
	pages map[string][]byte
	order []string // insertion order, for eviction
}

type cache struct {
	shards [shards]shard
	bytes  atomic.Int64
}

func (c *cache) shardOf(url string) *shard {
	h := fnv.New32a()
	h.Write([]byte(url))
	return &c.shards[h.Sum32()%shards]
}

func (c *cache) find(url string) []byte {
	s := c.shardOf(url)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages[url]
}

func (c *cache) insert(url string, p []byte) {
	s := c.shardOf(url)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pages[url]; ok {
		return
	}
	s.pages[url] = p
	s.order = append(s.order, url)
	c.bytes.Add(int64(len(p)))
}

func (c *cache) shrinkTo(limit int64) (evicted uint64) {
	for k, empty := 0, 0; empty < shards && c.bytes.Load() > limit; k = (k + 1) % shards {
		s := &c.shards[k]
		s.mu.Lock()
		if len(s.order) == 0 {
			empty++
		} else {
			empty = 0
			url := s.order[0]
			s.order = s.order[1:]
			c.bytes.Add(-int64(len(s.pages[url])))
			delete(s.pages, url)
			evicted++
		}
		s.mu.Unlock()
	}
	return
}

func (c *cache) census() (pages, size int) {
	for k := range c.shards {
		s := &c.shards[k]
		s.mu.Lock()
		pages += len(s.pages)
		for _, p := range s.pages {
			size += len(p)
		}
		s.mu.Unlock()
	}
	return
}

type counters struct {
	Requests, Hits, Misses, Errors, Evictions, StatsRuns, CachedPages, CachedBytes uint64
}

type proxy struct {
	cache   cache
	limit   int64
	client  *http.Client
	mu      sync.Mutex
	k       counters
	statsUs common.RecentSamples
}

func (p *proxy) count(f func(*counters)) {
	p.mu.Lock()
	f(&p.k)
	p.mu.Unlock()
}

func (p *proxy) statsJSON() []byte {
	p.mu.Lock()
	k := p.k
	us := append([]float64(nil), p.statsUs.Values...)
	p.mu.Unlock()
	sort.Float64s(us)
	rank := func(q float64) float64 {
		if len(us) == 0 {
			return 0
		}
		i := int(q * float64(len(us)))
		if i >= len(us) {
			i = len(us) - 1
		}
		return us[i]
	}
	mean := 0.0
	for _, v := range us {
		mean += v / float64(len(us))
	}
	b, _ := json.Marshal(map[string]any{"requests": k.Requests, "hits": k.Hits, "misses": k.Misses,
		"errors": k.Errors, "evictions": k.Evictions, "stats_runs": k.StatsRuns, "cached_pages": k.CachedPages,
		"cached_bytes": k.CachedBytes, "stats_us_mean": mean, "stats_us_p50": rank(0.5), "stats_us_p99": rank(0.99)})
	// encoding/json writes "key":value; the drivers read `"key": value` (the C++ servers' form).
	return bytes.ReplaceAll(b, []byte(`":`), []byte(`": `))
}

// The clock of the C++ proxy's X-Reacted-At-Ns header: CLOCK_MONOTONIC in nanoseconds, shared
// by every process on the machine. Go's monotonic readings (CLOCK_MONOTONIC as well) are not
// exposed as absolute times, so the clock is read once here, by a system call, beside a
// time.Now(); monotonicNs carries it forward with time.Since, so a request costs no system call.
// The two start-up readings are taken back to back: the offset is off by far less than a
// request's loopback round trip.
var monoAtStart, timeAtStart = func() (int64, time.Time) {
	t := time.Now()
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano(), t
}()

func monotonicNs() int64 { return monoAtStart + int64(time.Since(timeAtStart)) }

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The reaction, as the C++ proxy's: the handler holds the request and decides how to answer.
	w.Header().Set("X-Reacted-At-Ns", strconv.FormatInt(monotonicNs(), 10))
	p.count(func(k *counters) { k.Requests++ })
	if r.URL.Path == "/proxy-stats" && r.URL.Host == "" {
		w.Write(p.statsJSON())
		return
	}
	if r.Method != http.MethodGet {
		p.count(func(k *counters) { k.Errors++ })
		http.Error(w, "only GET is proxied", http.StatusMethodNotAllowed)
		return
	}
	host := r.URL.Hostname()
	if !r.URL.IsAbs() || (host != "127.0.0.1" && host != "localhost") {
		p.count(func(k *counters) { k.Errors++ })
		http.Error(w, "this proxy fetches only http://127.0.0.1 or http://localhost URLs", http.StatusForbidden)
		return
	}
	url := r.URL.String()
	if page := p.cache.find(url); page != nil {
		p.count(func(k *counters) { k.Hits++ })
		w.Header().Set("X-Cache", "HIT")
		w.Write(page)
		return
	}
	p.count(func(k *counters) { k.Misses++ })
	resp, err := p.client.Get(url)
	if err != nil {
		p.count(func(k *counters) { k.Errors++ })
		http.Error(w, "origin fetch failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		p.count(func(k *counters) { k.Errors++ })
		http.Error(w, "origin answered "+resp.Status, resp.StatusCode)
		return
	}
	p.cache.insert(url, body)
	w.Header().Set("X-Cache", "MISS")
	w.Write(body)
}

func (p *proxy) every(d time.Duration, stop <-chan struct{}, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

// limitListener refuses connections past max open ones with a 503 and closes them, as the C++
// proxy does (net/http has no such limit of its own).
type limitListener struct {
	net.Listener
	slots chan struct{}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			body := fmt.Sprintf("the proxy has %d connections open (its limit); retry later\n", cap(l.slots))
			c.SetWriteDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\nContent-Type: text/plain\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
			c.Close()
		}
	}
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port (0: any free port)")
	workers := flag.Int("workers", 0, "GOMAXPROCS (0: Go's default)")
	cacheMiB := flag.Int("cache-mib", 16, "cache capacity")
	maxConnections := flag.Int("max-connections", 1024, "client connections open at once; more are answered 503")
	idleTimeoutMs := flag.Int("idle-timeout-ms", 60000, "time a client has to send a request, from its connect or the last response (0: no limit)")
	flag.Parse()
	if flag.NArg() > 0 || *cacheMiB < 0 || *maxConnections < 1 || *idleTimeoutMs < 0 {
		fmt.Fprintln(os.Stderr, "proxy (go): bad arguments")
		os.Exit(2)
	}
	if *workers > 0 {
		runtime.GOMAXPROCS(*workers)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy (go):", err)
		os.Exit(1)
	}
	p := &proxy{limit: int64(*cacheMiB) << 20, client: &http.Client{Timeout: 5 * time.Second}}
	for k := range p.cache.shards {
		p.cache.shards[k].pages = map[string][]byte{}
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		p.every(50*time.Millisecond, stop, func() {
			if n := p.cache.shrinkTo(p.limit); n > 0 {
				p.count(func(k *counters) { k.Evictions += n })
			}
		})
	}()
	go func() {
		defer bg.Done()
		p.every(250*time.Millisecond, stop, func() {
			t0 := time.Now()
			pages, size := p.cache.census()
			us := float64(time.Since(t0).Nanoseconds()) / 1e3
			p.mu.Lock()
			p.k.CachedPages, p.k.CachedBytes = uint64(pages), uint64(size)
			p.k.StatsRuns++
			p.statsUs.Add(us)
			p.mu.Unlock()
		})
	}()
	// The idiomatic bound on idle and slow clients, as the C++ proxy's --idle-timeout-ms.
	idle := time.Duration(*idleTimeoutMs) * time.Millisecond
	srv := &http.Server{Handler: p, ReadHeaderTimeout: idle, IdleTimeout: idle}
	fmt.Printf("LISTENING %d\n", ln.Addr().(*net.TCPAddr).Port)
	fmt.Fprintf(os.Stderr, "proxy (go): listening on %s, GOMAXPROCS %d\n", ln.Addr(), runtime.GOMAXPROCS(0))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(&limitListener{Listener: ln, slots: make(chan struct{}, *maxConnections)}) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	// Clean stop: no new connections, every request under way answered (Shutdown waits).
	srv.Shutdown(context.Background())
	<-done
	close(stop)
	bg.Wait()
	fmt.Fprintf(os.Stderr, "proxy (go): stopped; %s\n", p.statsJSON())
}
