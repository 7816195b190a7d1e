// Echo server of suite `io` in Go (runtime `go`): goroutines and the net package, the way Go
// programs are written. The network echo runs a goroutine per connection (net.Listener.Accept
// loop), the terminal echo one goroutine over stdin/stdout; the compute kernel is fib(n) with
// a goroutine + sync.WaitGroup per call above the cutoff (the `core` suite's algorithm), with
// GOMAXPROCS = --workers. Go has no task priorities: its scheduler and netpoller decide.
// Protocol with the driver (control lines on fd 3): bench/io/echo_server.hpp.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"
)

var cutoff = 12

func fibSerial(n int) int {
	if n < 2 {
		return n
	}
	return fibSerial(n-1) + fibSerial(n-2)
}

func fib(n int) int {
	if n < cutoff {
		return fibSerial(n)
	}
	var x int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		x = fib(n - 1)
		wg.Done()
	}()
	y := fib(n - 2)
	wg.Wait()
	return x + y
}

// the fairly prompt paper Sec. 6.2.1: accept a line of text and echo it back.
func echoLines(r io.Reader, w io.Writer) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			if _, werr := w.Write([]byte(line)); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func main() {
	mode := flag.String("mode", "net", "net or term")
	workers := flag.Int("workers", 2, "GOMAXPROCS")
	n := flag.Int("n", 36, "fib argument")
	flag.IntVar(&cutoff, "cutoff", 12, "calls with n < cutoff run serially")
	warmup := flag.Int("warmup", 1, "warm-up repetitions")
	reps := flag.Int("reps", 3, "timed repetitions")
	minLoadedMs := flag.Int("min-loaded-ms", 0, "continue until the measured loaded runs add up to this")
	flag.Parse()
	if flag.NArg() > 0 || (*mode != "net" && *mode != "term") {
		fmt.Fprintln(os.Stderr, "error: bad arguments")
		os.Exit(2)
	}
	if cutoff < 2 {
		cutoff = 2
	}
	runtime.GOMAXPROCS(*workers)
	control := os.NewFile(3, "control")
	say := func(line string) {
		if _, err := control.Write([]byte(line + "\n")); err != nil {
			fmt.Fprintln(os.Stderr, "echo server: control channel:", err)
			os.Exit(3)
		}
	}

	termDone := make(chan struct{})
	if *mode == "net" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			os.Exit(3)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					echoLines(c, c)
				}()
			}
		}()
		say(fmt.Sprintf("ready port=%d", l.Addr().(*net.TCPAddr).Port))
	} else {
		go func() {
			echoLines(os.Stdin, os.Stdout)
			close(termDone)
		}()
		say("ready")
	}

	// Alone and loaded runs alternate; measured ones continue past reps until the loaded
	// ones add up to min-loaded-ms (echo_server.hpp: run_phases).
	loadedS := 0.0
	for i := 0; ; i++ {
		measured := i >= *warmup
		if measured && i >= *warmup+*reps && loadedS*1000 >= float64(*minLoadedMs) {
			break
		}
		for _, phase := range []string{"alone", "loaded"} {
			say(fmt.Sprintf("phase %s %d", phase, i))
			t0 := time.Now()
			v := fib(*n)
			s := time.Since(t0).Seconds()
			if measured && phase == "loaded" {
				loadedS += s
			}
			say(fmt.Sprintf("time %s %d %.9f %d", phase, i, s, v))
		}
	}
	say("done")

	if *mode == "net" {
		io.Copy(io.Discard, os.Stdin) // returns at EOF: the driver closed our stdin
	} else {
		<-termDone
	}
}
