// The `preempt` bench (suite `priority`) in Go: the protocol of
// bench/priority/preempt_driver.hpp, step by step, with the same urgent jobs (spin() chain and
// seeds), the same fib background and the same strand work (chunks of spin(x, 4000), the chunk
// count calibrated here the same way).
// Strand background: one goroutine loops over rounds of 2 x workers goroutines, each one serial
// strand, and waits on a sync.WaitGroup. Go has no priorities; its asynchronous preemption
// (sysmon, a signal to a goroutine running for more than 10 ms, Go 1.14+) is what lets the urgent
// goroutines in during a long strand.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const strandChunkIters = 4000

type strandBackground struct {
	tasks, chunks int
	stop          atomic.Bool
	progress      [64]shard
	sink          atomic.Uint64
	rounds        atomic.Int64
	finished      chan struct{}
}

func (bg *strandBackground) total() uint64 {
	var s uint64
	for i := range bg.progress {
		s += atomic.LoadUint64(&bg.progress[i].v)
	}
	return s
}

// One serial strand: no blocking call inside.
func (bg *strandBackground) strand(i uint64) {
	x := i + 1
	for c := 0; c < bg.chunks; c++ {
		x = spin(x, strandChunkIters)
		atomic.AddUint64(&bg.progress[i&63].v, 1)
	}
	bg.sink.Add(x)
}

func medianOf(f func() float64, n int) float64 {
	t := make([]float64, n)
	for i := range t {
		t[i] = f()
	}
	return median(t)
}

func runPreempt(p params, workers, warmup, reps int, list string, settleMs, withoutMs int) {
	var backgrounds []string
	for _, b := range strings.Split(list, ",") {
		if b != "fib" {
			if ms, err := strconv.Atoi(b); err != nil || ms < 1 || ms > 10000 {
				fail(fmt.Sprintf("--backgrounds: '%s' is neither fib nor a strand length in ms (1..10000)", b))
			}
		}
		backgrounds = append(backgrounds, b)
	}
	var x uint64 = 1
	chunkUs := medianOf(func() float64 {
		t0 := time.Now()
		x = spin(x, strandChunkIters)
		return time.Since(t0).Seconds() * 1e6
	}, 300)
	var sink uint64
	i := 0
	workUs := medianOf(func() float64 {
		t0 := time.Now()
		sink += jobValueSerial(uint64(i), p.rootIters, p.subIters)
		i++
		return time.Since(t0).Seconds() * 1e6
	}, 200)
	if x == 42 && sink == 42 {
		fmt.Fprintln(os.Stderr, "")
	}
	fmt.Fprintf(os.Stderr, "one strand chunk (spin %d): %.2f us\n", strandChunkIters, chunkUs)
	period := time.Duration(p.periodUs) * time.Microsecond
	key := func(b string) string {
		if b == "fib" {
			return "fib"
		}
		return "s" + b + "ms"
	}

	var results []map[string]float64
	var checksum uint64
	total := p.floorJobs + len(backgrounds)*p.windowJobs
	for rep := 0; rep < warmup+reps; rep++ {
		m := map[string]float64{}
		jobs := make([]job, total)
		for k := range jobs {
			jobs[k].id, jobs[k].rootIters, jobs[k].subIters = uint64(k), p.rootIters, p.subIters
		}
		lat := func(first, last int) []float64 {
			var v []float64
			for k := first; k < last; k++ {
				v = append(v, jobs[k].doneAt.Sub(jobs[k].submitted).Seconds()*1e6)
			}
			return v
		}
		submitWindow(jobs, 0, p.floorJobs, time.Now(), period)
		waitDone(jobs, 0, p.floorJobs)
		floor := lat(0, p.floorJobs)
		m["floor_p50_us"], m["floor_p99_us"] = percentile(floor, 50), percentile(floor, 99)
		cpu0, wall0 := cpuSeconds(), time.Now()
		worst := 0.0
		next := p.floorJobs
		for _, b := range backgrounds {
			k := key(b)
			var count func() uint64
			var stop func()
			strandMs := 0
			cores := 0.0
			if b == "fib" {
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
				count = bg.total
				stop = func() {
					bg.stop.Store(true)
					<-bg.finished
					if bg.wrong.Load() != 0 {
						fail("a background fib computed a wrong value")
					}
				}
			} else {
				strandMs, _ = strconv.Atoi(b)
				bg := &strandBackground{tasks: 2 * workers, finished: make(chan struct{})}
				bg.chunks = int(math.Max(1, math.Round(float64(strandMs)*1000/chunkUs)))
				go func() {
					for !bg.stop.Load() {
						var wg sync.WaitGroup
						wg.Add(bg.tasks)
						for t := 0; t < bg.tasks; t++ {
							go func(t int) {
								bg.strand(uint64(t))
								wg.Done()
							}(t)
						}
						wg.Wait()
						bg.rounds.Add(1)
					}
					close(bg.finished)
				}()
				count = bg.total
				stop = func() {
					bg.stop.Store(true)
					<-bg.finished
					if bg.rounds.Load() < 1 {
						fail("the " + b + " ms strand background finished no round")
					}
				}
			}
			settle := settleMs
			if 2*strandMs > settle {
				settle = 2 * strandMs
			}
			time.Sleep(time.Duration(settle) * time.Millisecond)
			t0, c0 := time.Now(), count()
			time.Sleep(time.Duration(withoutMs) * time.Millisecond)
			t1, c1 := time.Now(), count()
			submitWindow(jobs, next, p.windowJobs, t1, period)
			waitDone(jobs, next, next+p.windowJobs)
			t2, c2 := time.Now(), count()
			stop()
			without := float64(c1-c0) / t1.Sub(t0).Seconds()
			with := float64(c2-c1) / t2.Sub(t1).Seconds()
			if b != "fib" {
				cores = without * chunkUs * 1e-6
				m["bg_cores_"+k] = cores
			}
			l := lat(next, next+p.windowJobs)
			next += p.windowJobs
			m["p50_us_"+k], m["p99_us_"+k], m["max_us_"+k] = percentile(l, 50), percentile(l, 99), percentile(l, 100)
			m["bg_kept_"+k] = 0
			if without > 0 {
				m["bg_kept_"+k] = with / without
			}
			if b != "fib" {
				worst = math.Max(worst, m["p99_us_"+k])
			}
			fmt.Fprintf(os.Stderr, "%-6s urgent p50 %8.0f us  p99 %8.0f us  max %8.0f us; background kept %.3f, %.2f cores\n",
				k, m["p50_us_"+k], m["p99_us_"+k], m["max_us_"+k], m["bg_kept_"+k], cores)
		}
		m["util"] = (cpuSeconds() - cpu0) / time.Since(wall0).Seconds()
		if worst == 0 {
			worst = m["p99_us_fib"]
		}
		m["strands_worst_p99_us"] = worst
		var sum uint64
		for k := range jobs {
			j := &jobs[k]
			if j.value != jobValueSerial(j.id, p.rootIters, p.subIters) {
				fail(fmt.Sprintf("urgent job %d computed a wrong value", k))
			}
			sum += j.value
		}
		if rep > 0 && sum != checksum {
			fail("checksum changed between repetitions")
		}
		checksum = sum
		if rep >= warmup {
			results = append(results, m)
		}
	}
	metrics := map[string]float64{}
	var names []string
	for k := range results[0] {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		var v []float64
		for _, r := range results {
			v = append(v, r[k])
		}
		metrics[k] = median(v)
	}
	worstMin := math.Inf(1)
	for _, r := range results {
		worstMin = math.Min(worstMin, r["strands_worst_p99_us"])
	}
	metrics["region_s"] = metrics["strands_worst_p99_us"] * 1e-6
	metrics["region_s_min"] = worstMin * 1e-6
	metrics["run_util"] = metrics["util"]
	delete(metrics, "util")
	metrics["chunk_us"], metrics["job_work_us"] = chunkUs, workUs
	out, _ := json.Marshal(map[string]any{
		"result":  map[string]any{"jobs": total, "checksum": checksum, "backgrounds": strings.Join(backgrounds, ",")},
		"metrics": metrics,
	})
	fmt.Printf("RESULT %s\n", out)
}
