// Suite `jobs`, Go: the trace's jobs replayed open-loop as goroutines. It measures each job's
// flow time (its end - its intended arrival) when jobs arrive at load --rho, or with --sweep
// the highest load whose mean flow time stays bounded. A faithful Go rewrite of the C++ driver
// bench/jobs/jobs_common.hpp (same options, trace reader, unit calibration, arrival schedule,
// replay with absolute deadlines, flow statistics, sustained criterion and RESULT line); only
// the runtime's part differs.
//
// Each job is one goroutine, started with `go` by the main goroutine at the job's arrival. It
// runs the Bing-like parallel-for of bench/jobs/promptly_jobs.cpp: halving recursion over the
// job's pieces of piece_units units (the last one shorter); every split runs its first half in a
// new goroutine, computes the second inline and waits on a sync.WaitGroup (as bench/go/fib); a
// piece is the serial sum of the work unit of src/server/programs/bing_unit.hpp, written here
// with the same uint64 arithmetic. The job records its end time as its last action. Go has no
// scheduling policy to choose: all goroutines share GOMAXPROCS = --workers Ps, and the main
// goroutine that releases the jobs is one of them.
//
// Flow times use Go's monotonic clock (time.Since), from one base in this process. The answer is
// the wrapping uint64 sum of every job's checksum, equal to Promptly's when every unit of every
// job ran exactly once. Protocol: bench/README.md (one RESULT line on stdout).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ---- the work (src/server/programs/bing_unit.hpp) ----

const bingUnitRounds = 256

// bingUnit is the value of unit i: a dependent chain the compiler cannot fold.
func bingUnit(i uint64) uint64 {
	x := i | 1
	for r := 0; r < bingUnitRounds; r++ {
		x = (x^(x>>13))*0xff51afd7ed558ccd + uint64(r)
	}
	return x
}

// bingPiece is the sum of units [lo, hi) of the job with seed: one serial piece.
func bingPiece(lo, hi, seed uint64) uint64 {
	var s uint64
	for i := lo; i < hi; i++ {
		s += bingUnit(seed*0x100000001b3 + i)
	}
	return s
}

func minU64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

// sumPieces sums pieces [lo, hi) of a job of `units` units: the first half in a new goroutine,
// the second inline, down to one piece.
func sumPieces(lo, hi, units, piece, seed uint64) uint64 {
	if hi-lo == 1 {
		return bingPiece(lo*piece, minU64(units, hi*piece), seed)
	}
	mid := lo + (hi-lo)/2
	var a uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		a = sumPieces(lo, mid, units, piece, seed)
		wg.Done()
	}()
	b := sumPieces(mid, hi, units, piece, seed)
	wg.Wait()
	return a + b
}

// runJob is one job's whole work: its checksum.
func runJob(units, piece, seed uint64) uint64 {
	if units == 0 {
		return 0
	}
	return sumPieces(0, (units+piece-1)/piece, units, piece, seed)
}

// ---- the driver (bench/jobs/jobs_common.hpp) ----

func fail(msg string) {
	fmt.Fprintf(os.Stderr, "error: %s\n", msg)
	os.Exit(2)
}

type job struct {
	t     float64 // arrival in mean-job-work units (make_trace.py)
	units uint64  // work units
	seed  uint64  // the job's unit values
}

type trace struct {
	workload   string
	meanUnits  float64
	pieceUnits uint64
	jobs       []job
}

func readTrace(path string) *trace {
	f, err := os.Open(path)
	if err != nil {
		fail("cannot read trace '" + path + "'")
	}
	defer f.Close()
	tr := &trace{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			for _, w := range strings.Fields(line) {
				var err error
				switch {
				case strings.HasPrefix(w, "workload="):
					tr.workload = w[9:]
				case strings.HasPrefix(w, "mean_units="):
					tr.meanUnits, err = strconv.ParseFloat(w[11:], 64)
				case strings.HasPrefix(w, "piece_units="):
					tr.pieceUnits, err = strconv.ParseUint(w[12:], 10, 64)
				}
				if err != nil {
					fail("trace '" + path + "': bad header word '" + w + "'")
				}
			}
			continue
		}
		fs := strings.Fields(line)
		var j job
		var e1, e2, e3 error
		if len(fs) >= 3 {
			j.t, e1 = strconv.ParseFloat(fs[0], 64)
			j.units, e2 = strconv.ParseUint(fs[1], 10, 64)
			j.seed, e3 = strconv.ParseUint(fs[2], 10, 64)
		}
		if len(fs) < 3 || e1 != nil || e2 != nil || e3 != nil {
			fail("trace '" + path + "': bad line '" + line + "'")
		}
		tr.jobs = append(tr.jobs, j)
	}
	if err := sc.Err(); err != nil {
		fail("cannot read trace '" + path + "': " + err.Error())
	}
	if len(tr.jobs) == 0 || tr.meanUnits <= 0 || tr.pieceUnits == 0 {
		fail("trace '" + path + "' has no jobs or no mean_units/piece_units header")
	}
	return tr
}

// base is this process's origin of time: nowNs reads the monotonic clock (time.Since uses
// time.Time's monotonic reading), so flow times do not jump with the wall clock.
var base = time.Now()

func nowNs() int64 { return int64(time.Since(base)) }

// sleepUntilNs sleeps to the absolute deadline t (nowNs scale); time.Sleep sleeps at least d.
func sleepUntilNs(t int64) {
	for d := t - nowNs(); d > 0; d = t - nowNs() {
		time.Sleep(time.Duration(d))
	}
}

var sink uint64 // keeps the calibration's work observable

// calibrateUnitNs is the serial cost of one unit here, in ns: the fastest of 7 runs of 20,000
// units (the fastest, because a shared VM only ever slows a run down).
func calibrateUnitNs() float64 {
	best := math.Inf(1)
	for r := 0; r < 7; r++ {
		t0 := nowNs()
		sink += bingPiece(0, 20000, uint64(r))
		best = math.Min(best, float64(nowNs()-t0)/20000.0)
	}
	return best
}

// plan is one replay: jobs 0..count-1 of the trace, job i intended at t0 + arrivalNs[i].
type plan struct {
	tr        *trace
	count     int
	arrivalNs []int64
	workers   int
}

func makePlan(tr *trace, rho float64, count int, workers int, unitNs float64) *plan {
	p := &plan{tr: tr, workers: workers}
	// Job i arrives at t_i * E[work] / (rho * P): utilisation rho = lambda * E[work] / P.
	scaleNs := tr.meanUnits * unitNs / (rho * float64(workers))
	if count == 0 || count > len(tr.jobs) {
		fail("--jobs must be 1.." + strconv.Itoa(len(tr.jobs)) + " (the trace's length)")
	}
	for i := 0; i < count; i++ {
		p.arrivalNs = append(p.arrivalNs, int64(tr.jobs[i].t*scaleNs))
	}
	p.count = count
	return p
}

// replay releases job i at t0 + arrivalNs[i] by calling release(i); returns t0. The releasing
// goroutine sleeps to each arrival (absolute deadlines, so a late release does not delay the
// next).
func replay(p *plan, release func(i int)) int64 {
	t0 := nowNs() + 2000000 // 2 ms from now: the first arrival is on time
	for i := 0; i < p.count; i++ {
		due := t0 + p.arrivalNs[i]
		if nowNs() < due {
			sleepUntilNs(due)
		}
		release(i)
	}
	return t0
}

// runTrace is the runtime's part: each job a goroutine started at its arrival. The WaitGroup's
// Wait makes every job's writes to endNs and sums visible to this goroutine.
func runTrace(p *plan) (endNs []int64, checksum uint64, t0 int64) {
	endNs = make([]int64, p.count)
	sums := make([]uint64, p.count)
	piece := p.tr.pieceUnits
	var wg sync.WaitGroup
	t0 = replay(p, func(i int) {
		j := p.tr.jobs[i]
		wg.Add(1)
		go func() {
			sums[i] = runJob(j.units, piece, j.seed)
			endNs[i] = nowNs() // the job's last action: its end
			wg.Done()
		}()
	})
	wg.Wait()
	for _, s := range sums {
		checksum += s
	}
	return endNs, checksum, t0
}

type flowStats struct{ meanMs, p50Ms, p99Ms, maxMs float64 }

func percentile(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	if k > len(sorted)-1 {
		k = len(sorted) - 1
	}
	return sorted[k]
}

func summarise(ms []float64) flowStats {
	sort.Float64s(ms)
	var sum float64
	for _, v := range ms {
		sum += v
	}
	return flowStats{
		meanMs: sum / float64(len(ms)),
		p50Ms:  percentile(ms, 0.50),
		p99Ms:  percentile(ms, 0.99),
		maxMs:  ms[len(ms)-1],
	}
}

type replayResult struct {
	flow       flowStats
	checksum   uint64
	jobs       int
	lambdaPerS float64
}

func replayOnce(tr *trace, rho float64, count, workers int, unitNs float64) replayResult {
	p := makePlan(tr, rho, count, workers, unitNs)
	endNs, checksum, t0 := runTrace(p)
	flow := make([]float64, p.count)
	for i := 0; i < p.count; i++ {
		if endNs[i] == 0 {
			fail("job " + strconv.Itoa(i) + " never finished")
		}
		flow[i] = float64(endNs[i]-(t0+p.arrivalNs[i])) / 1e6
	}
	return replayResult{
		flow:       summarise(flow),
		checksum:   checksum,
		jobs:       p.count,
		lambdaPerS: rho * float64(workers) * 1e9 / (tr.meanUnits * unitNs),
	}
}

// sustained: the mean flow time stays within 20 x the mean job's work spread over the P workers
// (E[work] / P): beyond that the queue, not the job, is what a client waits for.
func sustained(r replayResult, tr *trace, workers int, unitNs float64) bool {
	boundMs := 20.0 * tr.meanUnits * unitNs / float64(workers) / 1e6
	return r.flow.meanMs <= boundMs
}

func parseList(s string) []float64 {
	var v []float64
	for _, item := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(item, 64)
		if err != nil || !(x > 0) {
			fail("--sweep needs loads > 0, like 0.5,0.7,0.9")
		}
		v = append(v, x)
	}
	if len(v) == 0 {
		fail("--sweep is empty")
	}
	return v
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

type metric struct {
	name  string
	value float64
}

// printResult prints the protocol's last line with the C++ driver's formats (bench_common.hpp).
func printResult(answer string, regionS, regionSMin, runUtil float64, extra []metric) {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT {\"result\": %q, \"metrics\": {\"region_s\": %.9g, \"region_s_min\": %.9g, \"run_util\": %.4g",
		answer, regionS, regionSMin, runUtil)
	for _, m := range extra {
		fmt.Fprintf(&b, ", \"%s\": %.9g", m.name, m.value)
	}
	b.WriteString("}}\n")
	os.Stdout.WriteString(b.String())
}

func main() {
	tracePath := flag.String("trace", "", "job trace (bench/jobs/traces/)")
	rho := flag.Float64("rho", 0.75, "offered load: lambda * E[work] / workers")
	sweep := flag.String("sweep", "", "loads to try in turn, like 0.5,0.7,0.9 (instead of --rho)")
	count := flag.Int("jobs", 1000, "jobs of the trace to replay")
	workers := flag.Int("workers", 2, "GOMAXPROCS")
	warmup := flag.Int("warmup", 0, "untimed replays")
	reps := flag.Int("reps", 1, "timed replays")
	givenUnitNs := flag.Float64("unit-ns", 0, "the work unit's cost in ns (0: measure it); the suite measures once per language")
	calibrateOnly := flag.Int("calibrate", 0, "1: only measure the unit's cost and report it (unit_ns)")
	flag.Parse()
	if flag.NArg() > 0 {
		fail("unexpected argument '" + flag.Arg(0) + "'")
	}
	if !(*givenUnitNs >= 0) || math.IsInf(*givenUnitNs, 0) {
		fail("--unit-ns must be a finite number of ns >= 0 (0: measure it)")
	}
	if *calibrateOnly != 0 {
		u := calibrateUnitNs()
		fmt.Printf("RESULT {\"result\": \"0\", \"metrics\": {\"region_s\": %.9g, \"region_s_min\": %.9g, \"unit_ns\": %.9g}}\n", u/1e9, u/1e9, u)
		return
	}
	if *tracePath == "" {
		fail("--trace FILE is required (bench/jobs/traces/)")
	}
	if !(*rho > 0) || *count <= 0 || *workers <= 0 {
		fail("--rho, --jobs and --workers must be > 0")
	}
	tr := readTrace(*tracePath)
	unitNs := *givenUnitNs
	if unitNs == 0 {
		unitNs = calibrateUnitNs()
	}
	runtime.GOMAXPROCS(*workers)
	// Warm-up (as Promptly's): goroutine stacks and the scheduler's Ps are in use before the
	// first replay.
	for k := 0; k < 20; k++ {
		sink += runJob(200, tr.pieceUnits, uint64(k))
	}

	var answer string
	var regionS, regionSMin, runUtil float64
	var m []metric
	if *sweep == "" {
		if *reps < 1 {
			fail("--reps must be >= 1")
		}
		var last replayResult
		var walls, utils []float64
		for i := 0; i < *warmup+*reps; i++ {
			c0, w0 := cpuSeconds(), time.Now()
			last = replayOnce(tr, *rho, *count, *workers, unitNs)
			wall := time.Since(w0).Seconds()
			c1 := cpuSeconds()
			a := strconv.FormatUint(last.checksum, 10)
			if i > 0 && a != answer {
				fail("answer changed between repetitions")
			}
			answer = a
			if i >= *warmup {
				walls = append(walls, wall)
				if wall > 0 {
					utils = append(utils, (c1-c0)/wall)
				} else {
					utils = append(utils, 0)
				}
			}
		}
		runUtil = median(utils)
		// The ratio column compares mean flow.
		regionS, regionSMin = last.flow.meanMs/1e3, last.flow.meanMs/1e3
		m = []metric{{"flow_ms_mean", last.flow.meanMs}, {"flow_ms_p50", last.flow.p50Ms},
			{"flow_ms_p99", last.flow.p99Ms}, {"flow_ms_max", last.flow.maxMs},
			{"jobs", float64(last.jobs)}, {"rate_per_s", last.lambdaPerS}}
	} else {
		// The sweep's answer is the checksum of its first (always run) load.
		var maxRho, maxRate float64
		var firstSum uint64
		first := true
		tStart := nowNs()
		for _, r := range parseList(*sweep) {
			res := replayOnce(tr, r, *count, *workers, unitNs)
			if first {
				firstSum = res.checksum
			}
			first = false
			fmt.Fprintf(os.Stderr, "rho %.2f: %d jobs, %.0f/s, mean flow %.2f ms, p99 %.2f ms\n", r, res.jobs,
				res.lambdaPerS, res.flow.meanMs, res.flow.p99Ms)
			if !sustained(res, tr, *workers, unitNs) {
				break
			}
			maxRho = r
			maxRate = res.lambdaPerS
		}
		answer = strconv.FormatUint(firstSum, 10)
		wall := float64(nowNs()-tStart) / 1e9
		// Lower is better in the Summary: seconds per job at the highest sustained rate.
		regionS, regionSMin = wall, wall
		if maxRate > 0 {
			regionS, regionSMin = 1.0/maxRate, 1.0/maxRate
		}
		m = []metric{{"max_rate_per_s", maxRate}, {"max_rho", maxRho}}
	}
	m = append(m, metric{"unit_ns", unitNs})
	printResult(answer, regionS, regionSMin, runUtil, m)
}
