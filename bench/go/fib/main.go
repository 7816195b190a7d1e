// fib(n) with goroutines: every call with n >= cutoff runs its first branch in a new
// goroutine (one spawn per call, as in every other runtime of the `core` suite), computes the
// second inline and waits on a sync.WaitGroup; below the cutoff plain recursion.
// GOMAXPROCS = --workers. Protocol: bench/README.md (one RESULT line on stdout).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"
)

var cutoff = 2

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

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return 0.5 * (s[len(s)/2-1] + s[len(s)/2])
}

func main() {
	n := flag.Int("n", 32, "fib argument")
	flag.IntVar(&cutoff, "cutoff", 2, "calls with n < cutoff run serially")
	workers := flag.Int("workers", 2, "GOMAXPROCS")
	warmup := flag.Int("warmup", 2, "untimed repetitions")
	reps := flag.Int("reps", 10, "timed repetitions")
	flag.Parse()
	if flag.NArg() > 0 || *reps < 1 {
		fmt.Fprintln(os.Stderr, "error: bad arguments")
		os.Exit(2)
	}
	if cutoff < 2 {
		cutoff = 2
	}
	runtime.GOMAXPROCS(*workers)

	answer := -1
	var walls, utils []float64
	for i := 0; i < *warmup+*reps; i++ {
		c0, t0 := cpuSeconds(), time.Now()
		r := fib(*n)
		wall := time.Since(t0).Seconds()
		c1 := cpuSeconds()
		if i > 0 && r != answer {
			fmt.Fprintln(os.Stderr, "error: answer changed between repetitions")
			os.Exit(2)
		}
		answer = r
		if i >= *warmup {
			walls = append(walls, wall)
			utils = append(utils, (c1-c0)/wall)
		}
	}
	best := walls[0]
	for _, w := range walls {
		if w < best {
			best = w
		}
	}
	out, _ := json.Marshal(map[string]any{
		"result": answer,
		"metrics": map[string]float64{
			"region_s": median(walls), "region_s_min": best, "run_util": median(utils),
		},
	})
	fmt.Printf("RESULT %s\n", out)
}
