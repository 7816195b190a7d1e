// latency-under-load (suite `priority`) with Go goroutines; the protocol is the one of
// bench/priority/latency_driver.hpp, mirrored here step by step, with the same work: the same
// spin() chain and seeds for the interactive jobs, the same background call tree and leaves.
// GOMAXPROCS = --workers. With --protocol preempt it runs the `preempt` bench instead
// (bench/priority/preempt_driver.hpp; preempt.go).
// Background: one goroutine loops over fib(n); every call with n >= cutoff runs its first
// branch in a new goroutine and waits on a sync.WaitGroup (as bench/go/fib), serial leaves below
// the cutoff, each leaf counted in one of 64 padded counters (by its position in the tree).
// Interaction: the main goroutine starts each job with `go` on an absolute 10 ms schedule; the
// job's root spins, starts its 4 subtasks as goroutines and waits on a WaitGroup. Go has no
// priorities: the background and the jobs share the Ps (sysmon preempts long-running goroutines
// after 10 ms).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func spin(seed uint64, iters int) uint64 {
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := 0; i < iters; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 29
	}
	return x
}

func fibPlain(n int) int {
	if n < 2 {
		return n
	}
	return fibPlain(n-1) + fibPlain(n-2)
}

func fibValue(n int) int {
	a, b := 0, 1
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

type shard struct {
	v uint64
	_ [56]byte
}

type background struct {
	n, cutoff int
	stop      atomic.Bool
	leaves    [64]shard
	fibsDone  atomic.Int64
	wrong     atomic.Int64
	expect    int
	finished  chan struct{}
}

func (bg *background) total() uint64 {
	var s uint64
	for i := range bg.leaves {
		s += atomic.LoadUint64(&bg.leaves[i].v)
	}
	return s
}

func (bg *background) fib(n int, idx uint64) int {
	if n < bg.cutoff {
		r := fibPlain(n)
		atomic.AddUint64(&bg.leaves[idx&63].v, 1)
		return r
	}
	var x int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		x = bg.fib(n-1, 2*idx)
		wg.Done()
	}()
	y := bg.fib(n-2, 2*idx+1)
	wg.Wait()
	return x + y
}

type job struct {
	id                  uint64
	rootIters, subIters int
	submitted, doneAt   time.Time
	value               uint64
	done                atomic.Bool
}

func (j *job) seed(k uint64) uint64 { return j.id*5 + k }

func (j *job) run() {
	v := spin(j.seed(0), j.rootIters)
	var sub [4]uint64
	var wg sync.WaitGroup
	wg.Add(4)
	for k := 0; k < 4; k++ {
		go func(k int) {
			sub[k] = spin(j.seed(uint64(k+1)), j.subIters)
			wg.Done()
		}(k)
	}
	wg.Wait()
	j.value = v + sub[0] + sub[1] + sub[2] + sub[3]
	j.doneAt = time.Now()
	j.done.Store(true)
}

func jobValueSerial(id uint64, rootIters, subIters int) uint64 {
	v := spin(id*5, rootIters)
	for k := uint64(1); k <= 4; k++ {
		v += spin(id*5+k, subIters)
	}
	return v
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	if k > 0 {
		k--
	}
	if k > len(s)-1 {
		k = len(s) - 1
	}
	return s[k]
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return 0.5 * (s[len(s)/2-1] + s[len(s)/2])
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}

type params struct {
	n, cutoff, rootIters, subIters, periodUs, windowJobs, windows, floorJobs int
}

type repResult struct {
	lat, floor            []float64
	rateWithout, rateWith float64
	util                  float64
	checksum              uint64
	jobs                  int
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "error:", msg)
	os.Exit(2)
}

func submitWindow(jobs []job, first, count int, t0 time.Time, period time.Duration) {
	for k := 0; k < count; k++ {
		time.Sleep(time.Until(t0.Add(time.Duration(k) * period)))
		j := &jobs[first+k]
		j.submitted = time.Now()
		go j.run()
	}
	time.Sleep(time.Until(t0.Add(time.Duration(count) * period)))
}

func waitDone(jobs []job, first, last int) {
	for i := first; i < last; i++ {
		for !jobs[i].done.Load() {
			time.Sleep(200 * time.Microsecond)
		}
	}
}

func oneRep(p params) repResult {
	var r repResult
	total := p.floorJobs + p.windows*p.windowJobs
	jobs := make([]job, total)
	for i := range jobs {
		jobs[i].id, jobs[i].rootIters, jobs[i].subIters = uint64(i), p.rootIters, p.subIters
	}
	period := time.Duration(p.periodUs) * time.Microsecond
	submitWindow(jobs, 0, p.floorJobs, time.Now(), period)
	waitDone(jobs, 0, p.floorJobs)
	for i := 0; i < p.floorJobs; i++ {
		r.floor = append(r.floor, jobs[i].doneAt.Sub(jobs[i].submitted).Seconds()*1e6)
	}

	bg := &background{n: p.n, cutoff: p.cutoff, expect: fibValue(p.n), finished: make(chan struct{})}
	go func() {
		for !bg.stop.Load() {
			if v := bg.fib(bg.n, 1); v != bg.expect {
				bg.wrong.Add(1)
			}
			bg.fibsDone.Add(1)
		}
		close(bg.finished)
	}()
	time.Sleep(300 * time.Millisecond)
	window := time.Duration(p.periodUs*p.windowJobs) * time.Microsecond
	var leavesWithout, sWithout, leavesWith, sWith float64
	cpu0, wall0 := cpuSeconds(), time.Now()
	next := p.floorJobs
	for w := 0; w < p.windows; w++ {
		t0 := time.Now()
		c0 := bg.total()
		time.Sleep(time.Until(t0.Add(window)))
		t1 := time.Now()
		c1 := bg.total()
		leavesWithout += float64(c1 - c0)
		sWithout += t1.Sub(t0).Seconds()

		submitWindow(jobs, next, p.windowJobs, t1, period)
		t2 := time.Now()
		c2 := bg.total()
		leavesWith += float64(c2 - c1)
		sWith += t2.Sub(t1).Seconds()
		waitDone(jobs, next, next+p.windowJobs)
		next += p.windowJobs
	}
	r.util = (cpuSeconds() - cpu0) / time.Since(wall0).Seconds()
	bg.stop.Store(true)
	<-bg.finished
	if bg.wrong.Load() != 0 {
		fail("a background fib computed a wrong value")
	}
	if bg.fibsDone.Load() < 1 {
		fail("the background finished no fib at all")
	}
	fmt.Fprintf(os.Stderr, "background: %d fib(%d) finished\n", bg.fibsDone.Load(), p.n)
	r.rateWithout, r.rateWith = leavesWithout/sWithout, leavesWith/sWith

	for i := range jobs {
		j := &jobs[i]
		if j.value != jobValueSerial(j.id, p.rootIters, p.subIters) {
			fail(fmt.Sprintf("job %d computed a wrong value", i))
		}
		r.checksum += j.value
		if i >= p.floorJobs {
			r.lat = append(r.lat, j.doneAt.Sub(j.submitted).Seconds()*1e6)
		}
	}
	r.jobs = total
	return r
}

func main() {
	var p params
	flag.IntVar(&p.n, "n", 36, "background fib argument")
	flag.IntVar(&p.cutoff, "cutoff", 16, "background: calls with n < cutoff run serially")
	flag.IntVar(&p.rootIters, "root-iters", 5000, "spin iterations of a job's root")
	flag.IntVar(&p.subIters, "sub-iters", 5000, "spin iterations of each of a job's 4 subtasks")
	flag.IntVar(&p.periodUs, "period-us", 10000, "one job every period")
	flag.IntVar(&p.windowJobs, "window-jobs", 100, "periods per window")
	flag.IntVar(&p.windows, "windows", 6, "pairs of windows (without, with interactions)")
	flag.IntVar(&p.floorJobs, "floor-jobs", 100, "jobs measured without background")
	workers := flag.Int("workers", 2, "GOMAXPROCS")
	warmup := flag.Int("warmup", 0, "untimed repetitions")
	reps := flag.Int("reps", 1, "timed repetitions")
	protocol := flag.String("protocol", "latency", "latency (latency-under-load) or preempt")
	backgrounds := flag.String("backgrounds", "fib,1,5,20,100", "preempt: fib and strand lengths in ms")
	settleMs := flag.Int("settle-ms", 100, "preempt: background run-in before measuring")
	withoutMs := flag.Int("without-ms", 300, "preempt: background progress window without urgent work")
	flag.Parse()
	if *protocol == "preempt" {
		if flag.NArg() > 0 || *reps < 1 || p.windowJobs < 1 || *settleMs < 0 || *withoutMs < 1 {
			fail("bad arguments")
		}
		runtime.GOMAXPROCS(*workers)
		runPreempt(p, *workers, *warmup, *reps, *backgrounds, *settleMs, *withoutMs)
		return
	}
	if *protocol != "latency" {
		fail("--protocol must be latency or preempt")
	}
	if flag.NArg() > 0 || *reps < 1 || p.windows < 1 || p.windowJobs < 1 {
		fail("bad arguments")
	}
	if p.cutoff < 2 {
		p.cutoff = 2
	}
	runtime.GOMAXPROCS(*workers)

	var times []float64
	var sink uint64
	for i := 0; i < 200; i++ {
		t0 := time.Now()
		sink += jobValueSerial(uint64(i), p.rootIters, p.subIters)
		times = append(times, time.Since(t0).Seconds()*1e6)
	}
	workUs := median(times)
	if sink == 42 {
		fmt.Fprintln(os.Stderr, "")
	}

	var results []repResult
	for i := 0; i < *warmup+*reps; i++ {
		r := oneRep(p)
		what := "rep"
		if i < *warmup {
			what = "warm-up"
		}
		fmt.Fprintf(os.Stderr, "%s %d: %d jobs, p50 %.0f us, p99 %.0f us, max %.0f us; floor p50 %.0f p99 %.0f us; "+
			"background %.0f leaves/s without, %.0f with (slowdown %.3f)\n", what, i, len(r.lat),
			percentile(r.lat, 50), percentile(r.lat, 99), percentile(r.lat, 100), percentile(r.floor, 50),
			percentile(r.floor, 99), r.rateWithout, r.rateWith, r.rateWithout/r.rateWith)
		if i >= *warmup {
			results = append(results, r)
		}
	}
	med := func(f func(r repResult) float64) float64 {
		var v []float64
		for _, r := range results {
			v = append(v, f(r))
		}
		return median(v)
	}
	p99min := math.Inf(1)
	for _, r := range results {
		if r.checksum != results[0].checksum {
			fail("checksum changed between repetitions")
		}
		p99min = math.Min(p99min, percentile(r.lat, 99))
	}
	p99 := med(func(r repResult) float64 { return percentile(r.lat, 99) })
	out, _ := json.Marshal(map[string]any{
		"result": map[string]any{"jobs": results[0].jobs, "checksum": results[0].checksum, "fib": fibValue(p.n)},
		"metrics": map[string]float64{
			"region_s":            p99 * 1e-6,
			"region_s_min":        p99min * 1e-6,
			"run_util":            med(func(r repResult) float64 { return r.util }),
			"latency_us_p50":      med(func(r repResult) float64 { return percentile(r.lat, 50) }),
			"latency_us_p99":      p99,
			"latency_us_max":      med(func(r repResult) float64 { return percentile(r.lat, 100) }),
			"background_slowdown": med(func(r repResult) float64 { return r.rateWithout / r.rateWith }),
			"floor_us_p50":        med(func(r repResult) float64 { return percentile(r.floor, 50) }),
			"floor_us_p99":        med(func(r repResult) float64 { return percentile(r.floor, 99) }),
			"bg_leaves_per_s":     med(func(r repResult) float64 { return r.rateWithout }),
			"job_work_us":         workUs,
			"jobs":                float64(results[0].jobs),
		},
	})
	fmt.Printf("RESULT %s\n", out)
}
