"""Tests of tools/promptly-prof (docs/profiling.md) on synthetic traces built here.

Run: python3 tests/prof/test_promptly_prof.py   (CTest: promptly_prof)

Each trace is written the way the runtime writes one (docs/tracing.md): metadata per track, a
`dropped events` counter per track, stretches as complete events, the rest instants. Times in the
builder are microseconds; the expected numbers are computed by hand in each test.
"""

import atexit
import heapq
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from importlib.machinery import SourceFileLoader

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "promptly-prof")
DOC = os.path.join(ROOT, "docs", "profiling.md")


def _load_tool():
    loader = SourceFileLoader("promptly_prof", TOOL)
    spec = importlib.util.spec_from_loader("promptly_prof", loader)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["promptly_prof"] = mod  # dataclasses look their module up
    loader.exec_module(mod)
    return mod


prof = _load_tool()


class TraceBuilder:
    """A trace with `workers` worker tracks, then the policy and the external track."""

    def __init__(self, workers=2, dropped=None, standbys=0):
        self.workers = workers
        self.standby = workers  # the first standby's track, if any
        self.policy = workers + standbys
        self.external = workers + standbys + 1
        self.events = []
        dropped = dropped or {}
        names = [f"worker {i}" for i in range(workers)] + [f"standby {i}" for i in range(standbys)] + ["policy", "external"]
        for tid, name in enumerate(names):
            self.events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}})
            self.events.append({"name": "dropped events", "ph": "C", "pid": 1, "tid": tid, "ts": 0,
                                "args": {"dropped": dropped.get(tid, 0)}})

    def _instant(self, name, tid, ts, **args):
        self.events.append({"name": name, "ph": "i", "s": "t", "pid": 1, "tid": tid, "ts": ts, "args": args})

    def stretch(self, w, pool, fiber, start, end, task=0, park=False):
        """task > 0: a "task" stretch (the task's start); task 0: "task (resumed)"."""
        self.events.append({"name": "task" if task else "task (resumed)", "cat": f"pool {pool}", "ph": "X",
                            "pid": 1, "tid": w, "ts": start, "dur": end - start,
                            "args": {"pool": pool, "fiber": fiber, "task": task, "end": "park" if park else "end"}})
        if park:  # the writer puts a park instant where a stretch parks
            self._instant("park", w, end, pool=pool, arg=fiber, fiber=fiber)

    def submit(self, ts, task, pool):
        self._instant("submit", self.external, ts, pool=pool, task=task)

    def spawn(self, w, ts, fiber, task, pool=0):
        self._instant("spawn", w, ts, pool=pool, fiber=fiber, task=task)

    def wake_ready(self, tid, ts, fiber, target, pool=0):
        self._instant("wake ready", tid, ts, pool=pool, fiber=fiber, target=target)

    def decision(self, ts, pool=0):
        self._instant("decision", self.policy, ts, pool=pool, arg=1)

    def move(self, w, ts, pool):
        self._instant("move", w, ts, pool=pool, arg=0)

    def sleep(self, w, ts):
        self._instant("sleep", w, ts, pool=0, arg=0)

    def wake(self, w, ts):
        self._instant("wake", w, ts, pool=0, arg=0)

    def doc(self):
        return {"displayTimeUnit": "ns", "traceEvents": list(self.events)}


def walkthrough_trace(yield_us=5000, requests=10, period=10000, first=3030, work=200, starts=(10, 2500)):
    """docs/profiling.md's walk-through, synthetic: 2 workers, the prompt policy, 2 levels.

    Two level-1 background tasks (1 and 2, one per worker, starting at `starts`) loop: spin
    `yield_us` us, then promptly::yield(). An urgent level-0 request (tasks 10, 11, ...) arrives every
    `period` us from `first` on: a fork-join of four 50 us leaves that nobody steals (the other
    worker is in its loop), so one `work` us stretch. The policy decides at once, but a worker
    moves only at a strand boundary: at a yield() with a request waiting, the background task parks,
    the worker moves to level 0, runs the request, moves back and resumes the task. The loops stop
    at their first yield() after the last request ended.
    """
    tb = TraceBuilder(2)
    reqs = [[first + k * period, 10 + k, False] for k in range(requests)]  # submit, task, claimed
    for sub, task, _ in reqs:
        tb.submit(sub, task=task, pool=0)
        tb.decision(sub + 2)
    state = {}
    heap = []
    for w in (0, 1):
        tb.submit(starts[w] - 10, task=1 + w, pool=1)
        state[w] = {"fiber": 101 + w, "seg_start": starts[w], "task": 1 + w, "first": True}
        heap.append((starts[w] + yield_us, w))
    heapq.heapify(heap)
    stop = None  # when the last request ended
    while heap:
        t, w = heapq.heappop(heap)
        c = state[w]
        name = c["task"] if c["first"] else 0
        if stop is not None and t >= stop:  # the loop sees stop and its task ends
            tb.stretch(w, 1, c["fiber"], c["seg_start"], t, task=name)
            continue
        waiting = [r for r in reqs if not r[2] and r[0] <= t]
        if waiting:
            tb.stretch(w, 1, c["fiber"], c["seg_start"], t, task=name, park=True)
            for r in waiting:
                r[2] = True
                tb.move(w, t, 0)
                tb.stretch(w, 0, 200 + w, t, t + work, task=r[1])  # the request's fiber, reused
                t += work
                tb.decision(t, pool=0)  # level 0 is empty again
                tb.move(w, t, 1)
                if all(r[2] for r in reqs):
                    stop = t
            c["seg_start"], c["first"] = t, False  # the background task resumes on its fiber
        heapq.heappush(heap, (t + yield_us, w))
    return tb.doc()


def analyze(doc, **kw):
    return prof.analyze(prof.parse(doc), **kw)


def by_task(an):
    return {r.task: r for r in an.requests}


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=60)


class SingleRequest(unittest.TestCase):
    def test_one_stretch_work_span_response_are_its_duration(self):
        tb = TraceBuilder(2)
        tb.submit(100, task=7, pool=0)
        tb.stretch(1, 0, 50, 130, 430, task=7)
        r = by_task(analyze(tb.doc()))[7]
        self.assertEqual(r.submit, 100_000)
        self.assertEqual(r.queueing, 30_000)
        self.assertEqual(r.response, 330_000)
        self.assertEqual(r.work, 300_000)
        self.assertEqual(r.span, 300_000)
        self.assertEqual(r.competitor, 0)
        self.assertEqual(r.bound, 300_000 / 2 + 300_000)  # (W + C) / P + S
        self.assertAlmostEqual(r.ratio, 330 / 450)
        self.assertFalse(r.flagged)

    def test_submit_and_start_at_the_same_time(self):
        tb = TraceBuilder(1)
        tb.submit(0, task=3, pool=0)
        tb.stretch(0, 0, 9, 0, 10, task=3)
        r = by_task(analyze(tb.doc()))[3]
        self.assertEqual((r.queueing, r.response, r.work, r.span), (0, 10_000, 10_000, 10_000))

    def test_unknown_events_are_ignored(self):
        tb = TraceBuilder(1)
        tb.submit(0, task=3, pool=0)
        tb.stretch(0, 0, 9, 5, 15, task=3)
        tb.events.append({"name": "future thing", "ph": "i", "tid": 0, "ts": 7, "args": {"x": 1}})
        tb.events.append({"name": "task", "ph": "b", "tid": 0, "ts": 8})
        an = analyze(tb.doc())
        self.assertEqual(by_task(an)[3].work, 10_000)
        self.assertEqual(an.warnings, [])


class ForkJoin(unittest.TestCase):
    def doc(self):
        # Root on worker 0 (fiber 10) from 10 to 40; at 20 it spawns task 2, which worker 1 steals and
        # runs on fiber 20 from 25 to 75; the root parks at 40 (join), child's end wakes it at 75, the
        # root resumes at 80 and ends at 90.
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 10, 40, task=1, park=True)
        tb.spawn(0, 20, 10, 2)
        tb.stretch(1, 0, 20, 25, 75, task=2)
        tb.wake_ready(1, 75, 20, 10)
        tb.stretch(0, 0, 10, 80, 90)
        return tb.doc()

    def test_work_and_span(self):
        r = by_task(analyze(self.doc()))[1]
        self.assertEqual(r.work, 90_000)          # 30 + 50 + 10
        # span: spawn at 20 carries 10; the child ends at 10 + 50 = 60 and wakes the root with 60;
        # the root parked with 30; it resumes with max(30, 60) = 60 and ends at 60 + 10.
        self.assertEqual(r.span, 70_000)
        self.assertEqual(r.response, 90_000)
        self.assertEqual(r.queueing, 10_000)
        self.assertEqual(r.bound, 90_000 / 2 + 70_000)
        # PLDI 2020 Thm. 2.1: W_a (all level-0 work while R ran: its own 90) + (P - 1) x a-span 70, over 2
        self.assertTrue(r.well_formed)
        self.assertEqual((r.a_span, r.a_bound), (70_000, (90_000 + 70_000) / 2))
        self.assertEqual(len(r.stretches), 3)

    def test_park_longer_than_child_keeps_the_park_value(self):
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 100, task=1, park=True)   # span 100 at the park
        tb.spawn(0, 10, 10, 2)
        tb.stretch(1, 0, 20, 12, 32, task=2)              # 10 + 20 = 30 at its end
        tb.wake_ready(1, 32, 20, 10)
        tb.stretch(0, 0, 10, 150, 160)                    # max(100, 30) + 10
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual((r.work, r.span, r.response), (130_000, 110_000, 160_000))

    def test_external_wake_carries_only_the_park_value(self):
        # With --requests submits the external wake continues the request (by default it starts one).
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 40, task=1, park=True)   # waits for a future set by another thread
        tb.wake_ready(tb.external, 500, 0, 10)
        tb.stretch(1, 0, 10, 510, 530)                   # resumed on the other worker
        r = by_task(analyze(tb.doc(), requests_from="submits"))[1]
        self.assertEqual((r.work, r.span, r.response), (60_000, 60_000, 530_000))

    def test_inline_spawn_never_started_is_ignored(self):
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 100, task=1)
        tb.spawn(0, 30, 10, 2)   # nobody stole it: it ran inside the root's stretch
        tb.spawn(0, 60, 10, 3)
        an = analyze(tb.doc())
        r = by_task(an)[1]
        self.assertEqual((r.work, r.span, r.response), (100_000, 100_000, 100_000))
        self.assertEqual(len(r.stretches), 1)
        self.assertEqual(len(an.requests), 1)

    def test_pushed_task_spawn_stamped_at_its_start(self):
        # A stolen join branch: the trace stamps its spawn when it starts, on the thief's track, with
        # the parent's fiber; the parent is still running then.
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 40, task=1, park=True)   # span 40 at the park
        tb.spawn(1, 30, 10, 2)                           # the parent's span at 30: 30
        tb.stretch(1, 0, 20, 30, 130, task=2)            # 30 .. 130
        tb.wake_ready(1, 130, 20, 10)
        tb.stretch(0, 0, 10, 135, 140)                   # max(40, 130) + 5
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual((r.work, r.span, r.response), (145_000, 135_000, 140_000))
        self.assertEqual(len(r.stretches), 3)

    def test_pushed_task_starting_after_its_parent_parked(self):
        # The parent moved at a strand boundary (parked); a mugger starts the task it had pushed.
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 40, task=1, park=True)   # span 40 at the park
        tb.spawn(1, 60, 10, 2)                           # the parent is parked: its park value, 40
        tb.stretch(1, 0, 20, 60, 120, task=2)            # 40 .. 100
        tb.wake_ready(1, 120, 20, 10)
        tb.stretch(1, 0, 10, 125, 130)                   # max(40, 100) + 5
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual((r.work, r.span, r.response), (105_000, 105_000, 130_000))

    def test_pushed_task_starting_after_its_parent_ended(self):
        # An async child nobody waited for starts after the root's task ended: still the request's work.
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 50, task=1)
        tb.spawn(1, 70, 10, 2)
        tb.stretch(1, 0, 20, 70, 100, task=2)
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual((r.work, r.span, r.response), (80_000, 50_000, 50_000))

    def test_nested_stolen_grandchild_belongs_to_the_request(self):
        tb = TraceBuilder(3)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 10, task=1)
        tb.spawn(0, 5, 10, 2)                 # span 5
        tb.stretch(1, 0, 20, 6, 26, task=2)   # 5 .. 25
        tb.spawn(1, 16, 20, 3)                # span 15
        tb.stretch(2, 0, 30, 20, 60, task=3)  # 15 .. 55
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual(r.work, 70_000)
        self.assertEqual(r.span, 10_000)      # S(R) is the span at the end of the root's stretch
        self.assertEqual(len(r.stretches), 3)


class Reuse(unittest.TestCase):
    def test_fiber_reused_after_end(self):
        # Fiber 10 runs request A (parks, resumes, ends), then request B (parks, resumes, ends).
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 500, task=1, park=True)       # A parks with span 500
        tb.wake_ready(tb.external, 600, 0, 10)
        tb.stretch(0, 0, 10, 600, 610)                        # A: 510
        tb.submit(700, task=2, pool=0)
        tb.stretch(1, 0, 10, 700, 720, task=2, park=True)     # B on the same fiber: parks with 20
        tb.wake_ready(tb.external, 800, 0, 10)
        tb.stretch(1, 0, 10, 800, 830)                        # B: 50, not max(500, ...) + 30
        rs = by_task(analyze(tb.doc(), requests_from="submits"))
        self.assertEqual((rs[1].work, rs[1].span, rs[1].response), (510_000, 510_000, 610_000))
        self.assertEqual((rs[2].work, rs[2].span, rs[2].response), (50_000, 50_000, 130_000))

    def test_task_id_reused(self):
        tb = TraceBuilder(2)
        # A (task 1) spawns task 7 inline (never started) and task 9, which runs on worker 1.
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 100, task=1)
        tb.spawn(0, 10, 10, 7)
        tb.spawn(0, 20, 10, 9)
        tb.stretch(1, 0, 20, 30, 60, task=9)
        # B is submitted with id 7 (the inline task's memory reused): its stretch is B's, not A's.
        tb.submit(200, task=7, pool=1)
        tb.stretch(0, 1, 10, 210, 250, task=7)
        tb.spawn(0, 220, 10, 9)                               # id 9 again, now B's child
        tb.stretch(1, 1, 20, 230, 300, task=9)
        # C reuses A's id 1 after A ended.
        tb.submit(400, task=1, pool=0)
        tb.stretch(1, 0, 30, 405, 410, task=1)
        an = analyze(tb.doc())
        self.assertEqual([(r.task, r.pool) for r in an.requests], [(1, 0), (7, 1), (1, 0)])
        a, b, c = an.requests
        self.assertEqual((a.work, a.response), (130_000, 100_000))
        self.assertEqual((b.work, b.response, b.span), (110_000, 50_000, 40_000))
        self.assertEqual((c.work, c.response, c.queueing), (5_000, 10_000, 5_000))


class Competitor(unittest.TestCase):
    def test_clipped_at_the_window_edges(self):
        tb = TraceBuilder(2)
        tb.submit(100, task=1, pool=1)
        tb.stretch(0, 1, 10, 100, 300, task=1)   # window [100, 300]
        tb.stretch(1, 0, 20, 50, 150)            # 50 inside
        tb.stretch(1, 0, 20, 200, 250)           # 50
        tb.stretch(1, 0, 21, 280, 400)           # 20
        tb.stretch(1, 0, 21, 400, 500)           # after the window
        tb.stretch(1, 1, 22, 250, 280)           # same pool: not competitor work
        tb.stretch(0, 2, 23, 300, 350)           # less urgent, and after
        an = analyze(tb.doc())
        r = by_task(an)[1]
        self.assertEqual(r.competitor, 120_000)
        self.assertEqual(r.bound, (200_000 + 120_000) / 2 + 200_000)
        self.assertAlmostEqual(r.ratio, 200 / 360)
        # shares: pool 0: 370 of 650, pool 1: 230, pool 2: 50
        self.assertAlmostEqual(an.share(0), 370 / 650)
        self.assertAlmostEqual(an.share(1), 230 / 650)
        self.assertAlmostEqual(an.share(2), 50 / 650)

    def test_less_urgent_pools_are_not_competitors(self):
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 100, task=1)
        tb.stretch(1, 1, 20, 0, 100)
        tb.stretch(1, 3, 20, 100, 200)
        self.assertEqual(by_task(analyze(tb.doc()))[1].competitor, 0)


class Causes(unittest.TestCase):
    def test_long_strand(self):
        tb = TraceBuilder(2)
        tb.stretch(0, 1, 100, 0, 5000)           # less urgent, 5000 us, holds worker 0
        tb.stretch(1, 1, 101, 100, 6000)         # and worker 1
        tb.submit(1000, task=1, pool=0)
        tb.decision(1002)
        tb.move(0, 5000, 0)
        tb.stretch(0, 0, 102, 5000, 5100, task=1)
        an = analyze(tb.doc())
        r = by_task(an)[1]
        self.assertEqual((r.response, r.queueing, r.work, r.span, r.competitor), (4_100_000 // 1000 * 1000,
                                                                                 4_000_000, 100_000, 100_000, 0))
        self.assertEqual(r.bound, 150_000)
        self.assertTrue(r.flagged)
        self.assertEqual(r.cause, "long strand")
        self.assertIn("a less urgent task ran 4000.0 us without a strand boundary", r.cause_detail)
        self.assertIn("waited 4000.0 us", r.cause_detail)
        self.assertIn("a pool-1 stretch on worker 0 from 0.0 to 5000.0 us, the first to end", r.cause_detail)
        self.assertIn("the request started at 5000.0 us", r.cause_detail)
        self.assertIn("add promptly::yield() or split it", r.cause_detail)

    def test_preempted(self):
        """Both workers in 5 ms less urgent strands; a standby runs the request after 250 us: the cause
        is the preemption, not the strands (which did not make it wait for their end)."""
        tb = TraceBuilder(2, standbys=1)
        tb.stretch(0, 1, 100, 0, 5000)
        tb.stretch(1, 1, 101, 100, 6000)
        tb.submit(1000, task=1, pool=0)
        tb._instant("preempt", tb.policy, 1220, pool=0, arg=2)
        tb.stretch(tb.standby, 0, 102, 1250, 1350, task=1)
        an = analyze(tb.doc())
        r = by_task(an)[1]
        self.assertEqual(r.queueing, 250_000)
        self.assertTrue(r.flagged)
        self.assertEqual(r.cause, "preempted")
        self.assertIn("a standby thread ran the request after 250.0 us", r.cause_detail)
        self.assertIn("started at 1250.0 us on standby 0; the standby was sent at 1220.0 us", r.cause_detail)

    def test_short_strands_are_not_a_long_strand(self):
        tb = TraceBuilder(2)
        tb.stretch(0, 1, 100, 0, 5000)
        tb.stretch(1, 1, 101, 500, 1400)         # 900 us: not longer than 1000
        tb.stretch(1, 1, 101, 1400, 6000)        # began after the submit
        tb.submit(1000, task=1, pool=0)
        tb.decision(1002)
        tb.stretch(0, 0, 102, 5000, 5100, task=1)
        r = by_task(analyze(tb.doc()))[1]
        self.assertTrue(r.flagged)
        self.assertEqual(r.cause, "overload")
        # Worker 1's stretch holding the submit ran 900 us: a long strand only below that threshold.
        r = by_task(analyze(tb.doc(), long_strand_us=900))[1]
        self.assertEqual(r.cause, "overload")
        r = by_task(analyze(tb.doc(), long_strand_us=899))[1]
        self.assertEqual(r.cause, "long strand")
        self.assertIn("ran 400.0 us without a strand boundary", r.cause_detail)  # 1000 to 1400
        self.assertIn("a pool-1 stretch on worker 1 from 500.0 to 1400.0 us", r.cause_detail)

    def test_inversion(self):
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 10, task=1, park=True)   # waits on a future computed at level 1
        tb.stretch(1, 1, 20, 400, 500)                   # the level-1 task: span 0 .. 100
        tb.wake_ready(1, 500, 20, 10, pool=0)
        tb.stretch(0, 0, 10, 510, 520)                   # max(10, 100) + 10
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual((r.work, r.span, r.response, r.queueing), (20_000, 110_000, 520_000, 0))
        self.assertEqual(r.bound, 120_000)
        self.assertFalse(r.well_formed)                   # a level-1 task made it ready: no a-span bound
        self.assertEqual((r.a_span, r.a_bound), (None, None))
        self.assertTrue(r.flagged)
        self.assertEqual(r.cause, "inversion")
        self.assertIn("R waited 490.0 us for a pool-1 task", r.cause_detail)
        self.assertIn("made ready at 500.0 us", r.cause_detail)

    def test_starvation(self):
        tb = TraceBuilder(2)
        tb.stretch(0, 1, 100, 0, 3000)            # long, but worker 1 is idle: not a long strand
        tb.sleep(1, 0)
        tb.submit(1000, task=1, pool=0)
        tb.wake(1, 2000)                          # no decision, no move until then
        tb.stretch(1, 0, 101, 2000, 2100, task=1)
        r = by_task(analyze(tb.doc()))[1]
        self.assertTrue(r.flagged)
        self.assertEqual(r.cause, "starvation")
        self.assertIn("without a core for 1000.0 us", r.cause_detail)
        self.assertIn("worker 1 was idle 1000.0 us", r.cause_detail)

    def test_decision_during_the_wait_is_overload_not_starvation(self):
        tb = TraceBuilder(2)
        tb.stretch(0, 1, 100, 0, 3000)
        tb.sleep(1, 0)
        tb.submit(1000, task=1, pool=0)
        tb.decision(1500)
        tb.wake(1, 2000)
        tb.stretch(1, 0, 101, 2000, 2100, task=1)
        r = by_task(analyze(tb.doc()))[1]
        self.assertEqual(r.cause, "overload")

    def test_slack(self):
        tb = TraceBuilder(1)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 140, 240, task=1)   # bound 100 + 100 = 200; response 240
        self.assertFalse(by_task(analyze(tb.doc()))[1].flagged)
        self.assertTrue(by_task(analyze(tb.doc(), slack=1.1))[1].flagged)


def server_trace(lines=5, slow_line=2, slow_wait=600):
    """A listener + line_reader server (docs/io.md's pattern) at level 0 beside a level-2 background,
    2 workers. The accept loop (task 1, fiber 10) is submitted from the main thread and parks in
    accept; a connection at 1000 us wakes it (the I/O reactor: the external track), it spawns the
    connection task (task 3, fiber 11) and parks again. The connection task parks in read_line; each
    request line wakes it from the reactor at 2000 + 1000 k us; it answers in 50 us and parks for
    the next line. Line `slow_line` waits `slow_wait` us for worker 0. At 9000 us the listener
    stops: the accept loop is woken from outside, stops the connection (its wait ends, woken by the
    accept loop's stretch) and ends; the connection task ends."""
    tb = TraceBuilder(2)
    tb.submit(0, task=1, pool=0)
    tb.stretch(0, 0, 10, 5, 15, task=1, park=True)
    tb.submit(0, task=2, pool=2)
    tb.stretch(1, 2, 20, 1, 9500, task=2)                   # the background, on worker 1 throughout
    tb.wake_ready(tb.external, 1000, 0, 10)
    tb.stretch(0, 0, 10, 1005, 1020, park=True)
    tb.spawn(0, 1010, fiber=10, task=3)
    tb.stretch(0, 0, 11, 1020, 1030, task=3, park=True)
    for k in range(lines):
        t = 2000 + 1000 * k
        start = t + (slow_wait if k == slow_line else 5)
        tb.wake_ready(tb.external, t, 0, 11)
        if k == slow_line:
            tb.stretch(0, 2, 30, t - 500, start, task=4)     # a background task holds worker 0
            tb.spawn(1, t - 500, fiber=20, task=4, pool=2)
        tb.stretch(0, 0, 11, start, start + 50, park=True)
    tb.wake_ready(tb.external, 9000, 0, 10)
    tb.stretch(0, 0, 10, 9005, 9010)
    tb.wake_ready(0, 9008, 10, 11)
    tb.stretch(0, 0, 11, 9010, 9015)
    return tb.doc()


class ServerRequests(unittest.TestCase):
    """A request is also a parked task made ready from outside the runtime (I/O readiness)."""

    def test_one_request_per_line(self):
        an = analyze(server_trace())
        lines = [r for r in an.requests if r.origin == "wake" and r.task == 11]
        self.assertEqual(len(lines), 5 + 1)   # 5 lines, then the stop's wake (by the accept loop's stretch)
        self.assertTrue(all(r.finished for r in lines))
        self.assertEqual([r.submit // 1000 for r in lines[:5]], [2000, 3000, 4000, 5000, 6000])
        self.assertEqual([r.response // 1000 for r in lines[:5]], [55, 55, 650, 55, 55])   # the last one too
        self.assertEqual([r.work // 1000 for r in lines[:5]], [50] * 5)
        self.assertEqual([r.span // 1000 for r in lines[:5]], [50] * 5)
        submitted = sorted(r.task for r in an.requests if r.origin == "submit")
        self.assertEqual(submitted, [1, 2])

    def test_old_definition_sees_two_requests(self):
        an = analyze(server_trace(), requests_from="submits")
        self.assertEqual(sorted(r.task for r in an.requests), [1, 2])

    def test_the_accept_loop_ends_at_its_park_and_is_not_among_the_worst(self):
        an = analyze(server_trace())
        accept = by_task(an)[1]
        self.assertEqual((accept.origin, accept.response, accept.work), ("submit", 15_000, 10_000))
        self.assertFalse(accept.flagged)
        worst = sorted((r for r in an.requests if r.finished), key=lambda r: (-r.ratio, r.submit))
        self.assertEqual((worst[0].origin, worst[0].task, worst[0].submit), ("wake", 11, 4000_000))
        self.assertTrue(worst[0].flagged)
        self.assertLessEqual(accept.ratio, 1.0)          # within its bound: nothing to look at

    def test_report_names_where_requests_come_from(self):
        path = _write(server_trace(), "server.json")
        p = run_tool(path, "--top", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("(2 submitted, 8 made ready from outside)", p.stdout)
        top = p.stdout.split("worst 2 requests", 1)[1].splitlines()[2]
        self.assertEqual(top.split()[:3], ["11", "wake", "0"])


def os_trace(t0_steady_ns=1_000_000_000):
    """Two workers each inside a 4.1 ms level-1 stretch when an urgent request arrives at 50 us; it
    starts at 4100 us. Without OS samples the stretches look like long strands."""
    tb = TraceBuilder(2)
    tb.submit(0, task=1, pool=1)
    tb.stretch(0, 1, 10, 0, 4100, task=1)
    tb.submit(0, task=2, pool=1)
    tb.stretch(1, 1, 11, 0, 4100, task=2)
    tb.submit(50, task=3, pool=0)
    tb.stretch(0, 0, 12, 4100, 4150, task=3)
    d = tb.doc()
    if t0_steady_ns is not None:
        d["otherData"] = {"t0_steady_ns": t0_steady_ns}
    return d


def os_samples(path, t0=1_000_000_000, delayed_us=4000, steal_us=0):
    """Samples every ms from 0 to 5 ms: both workers wait for a CPU from 0 to delayed_us (a multiple
    of 1000 us, so that the linear interpolation between samples is exact)."""
    with open(path, "w") as f:
        f.write(json.dumps({"cpus": 2}) + "\n")
        for ms in range(6):
            t = ms * 1000
            d = min(t, delayed_us) * 1000
            f.write(json.dumps({"ns": t0 + t * 1000, "steal_ns": min(t, 4000) * steal_us // 4,
                                "run_delay_ns": {"promptly-w0": d, "promptly-w1": d}}) + "\n")
    return path


class OsWaits(unittest.TestCase):
    def test_without_samples_it_looks_like_a_long_strand(self):
        r = by_task(analyze(os_trace()))[3]
        self.assertEqual((r.cause, r.os_wait), ("long strand", None))

    def test_a_wait_the_os_caused_is_not_blamed_on_the_strand(self):
        tr = prof.parse(os_trace())
        samples = prof.load_os_samples(os_samples(os.path.join(_tmp, "os.jsonl")), tr)
        r = by_task(prof.analyze(tr, os_samples=samples))[3]
        self.assertTrue(r.flagged)
        self.assertEqual(r.cause, "os")
        self.assertAlmostEqual(r.os_wait, 4000_000 - 50_000, delta=1)   # the wait runs from 50 us
        self.assertIn("run-queue wait", r.cause_text + r.cause_evidence)

    def test_short_os_delay_leaves_the_long_strand(self):
        tr = prof.parse(os_trace())
        samples = prof.load_os_samples(os_samples(os.path.join(_tmp, "os-short.jsonl"), delayed_us=1000), tr)
        r = by_task(prof.analyze(tr, os_samples=samples))[3]
        self.assertEqual(r.cause, "long strand")                        # 3.1 ms on a CPU, of 4.1 ms
        self.assertAlmostEqual(r.os_wait, 1000_000 - 50_000, delta=1)

    def test_report_shows_steal_and_run_queue_wait(self):
        trace = _write(os_trace(), "os-trace.json")
        p = run_tool(trace, "--os", os_samples(os.path.join(_tmp, "os-steal.jsonl"), steal_us=400))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("machine steal 400.0 us (2 CPUs); run-queue wait: worker 0 4000.0 us, worker 1 4000.0 us",
                      p.stdout)
        self.assertIn("os wait", p.stdout)

    def test_trace_without_t0_is_a_clear_error(self):
        trace = _write(os_trace(t0_steady_ns=None), "os-no-t0.json")
        p = run_tool(trace, "--os", os_samples(os.path.join(_tmp, "os2.jsonl")))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no otherData.t0_steady_ns", p.stderr)

    def test_bad_samples_are_a_clear_error(self):
        trace = _write(os_trace(), "os-bad.json")
        bad = os.path.join(_tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"ns": "x"}\n')
        p = run_tool(trace, "--os", bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.jsonl:1: a sample needs numbers ns", p.stderr)

    def test_record_os_samples_until_the_process_exits(self):
        child = subprocess.Popen(["sleep", "30"])
        out = os.path.join(_tmp, "recorded.jsonl")
        rec = subprocess.Popen([sys.executable, TOOL, "record-os", "--pid", str(child.pid), "--out", out,
                                "--interval-ms", "5"], stderr=subprocess.PIPE, text=True)
        try:
            # Synchronised on the samples themselves (bounded): three lines, then the process ends.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and rec.poll() is None:
                if os.path.exists(out) and open(out).read().count("\n") >= 3:
                    break
                time.sleep(0.01)
        finally:
            child.kill()
            child.wait()
        _, err = rec.communicate(timeout=20)
        self.assertEqual(rec.returncode, 0, err)
        with open(out) as f:
            rows = [json.loads(x) for x in f]
        self.assertEqual(set(rows[0]), {"cpus"})
        self.assertGreaterEqual(len(rows), 3)
        self.assertEqual(set(rows[1]), {"ns", "steal_ns", "run_delay_ns"})

    def test_record_os_of_no_process(self):
        p = run_tool("record-os", "--pid", "999999999", "--out", os.path.join(_tmp, "none.jsonl"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such process", p.stderr)


class Warnings(unittest.TestCase):
    def test_dropped_events(self):
        tb = TraceBuilder(2, dropped={1: 12})
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 10, task=1)
        an = analyze(tb.doc())
        self.assertEqual(len(an.warnings), 1)
        self.assertIn("lost its oldest events (12 dropped; worker 1: 12)", an.warnings[0])
        self.assertIn("early requests may be wrong", an.warnings[0])
        path = _write(tb.doc())
        p = run_tool(path)
        self.assertEqual(p.returncode, 0)
        self.assertIn("warning: the trace lost its oldest events", p.stderr)

    def test_no_dropped_no_warning(self):
        tb = TraceBuilder(2)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 10, task=1)
        p = run_tool(_write(tb.doc()))
        self.assertEqual((p.returncode, p.stderr), (0, ""))


_tmp = tempfile.mkdtemp(prefix="promptly-prof-test-")
atexit.register(shutil.rmtree, _tmp, True)


def _write(doc, name=None, raw=None):
    fd, path = tempfile.mkstemp(suffix=".json", dir=_tmp)
    with os.fdopen(fd, "w") as f:
        f.write(raw if raw is not None else json.dumps(doc))
    return path


class BadInput(unittest.TestCase):
    def check(self, args, message):
        p = run_tool(*args)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(message, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_missing_file(self):
        self.check([os.path.join(_tmp, "nope.json")], "nope.json: no such file")

    def test_invalid_json(self):
        self.check([_write(None, raw='{"traceEvents": [')], "not valid JSON")

    def test_no_trace_events(self):
        self.check([_write({"events": []})], "no traceEvents list")
        self.check([_write([1, 2])], "no traceEvents list")
        self.check([_write({"traceEvents": {"a": 1}})], "no traceEvents list")

    def test_no_worker_tracks(self):
        self.check([_write({"traceEvents": [{"name": "thread_name", "ph": "M", "tid": 0,
                                             "args": {"name": "policy"}}]})], "no worker tracks")
        self.check([_write({"traceEvents": []})], "no worker tracks")

    def test_directory(self):
        self.check([_tmp], "is a directory")

    def test_bad_option(self):
        p = run_tool(_write(TraceBuilder(1).doc()), "--slack", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--slack must be a positive number", p.stderr)

    def test_malformed_events_are_skipped_with_a_warning(self):
        tb = TraceBuilder(1)
        tb.submit(0, task=1, pool=0)
        tb.stretch(0, 0, 10, 0, 10, task=1)
        tb.events += [{"name": "task", "ph": "X", "tid": 0, "ts": "x", "dur": 1, "args": {"pool": 0, "fiber": 1}},
                      {"name": "spawn", "ph": "i", "tid": 0, "ts": 3, "args": {"fiber": None}},
                      {"name": "submit", "ph": "i", "tid": 2, "ts": 3, "args": "x"}, 17, None]
        p = run_tool(_write(tb.doc()))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("5 malformed events ignored", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_no_submit_events_prints_the_work_table(self):
        tb = TraceBuilder(2)
        tb.stretch(0, 0, 10, 0, 300)
        tb.stretch(1, 1, 11, 0, 100)
        p = run_tool(_write(tb.doc()))
        self.assertEqual(p.returncode, 0)
        self.assertIn("no requests: the trace has no submit events", p.stdout)
        self.assertRegex(p.stdout, r"\n\s+0\s+1\s+300\.0\s+0\.750\n")
        self.assertRegex(p.stdout, r"\n\s+1\s+1\s+100\.0\s+0\.250\n")


class Cli(unittest.TestCase):
    def test_json_round_trip(self):
        tb = TraceBuilder(2)
        tb.stretch(0, 1, 100, 0, 5000)
        tb.stretch(1, 1, 101, 100, 6000)
        tb.submit(1000, task=1, pool=0)
        tb.stretch(0, 0, 102, 5000, 5100, task=1)
        tb.submit(5200, task=2, pool=1)
        tb.stretch(0, 1, 103, 5300, 5400, task=2)
        tb.submit(5500, task=3, pool=1)              # never ran: unfinished
        trace = _write(tb.doc())
        out = os.path.join(_tmp, "rows.json")
        p = run_tool(trace, "--json", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["workers"], 2)
        rows = doc["requests"]
        self.assertEqual(len(rows), 3)
        fields = {"task", "pool", "submit_us", "response_us", "queueing_us", "work_us", "span_us",
                  "competitor_us", "bound_us", "well_formed", "a_span_us", "a_bound_us", "ratio", "flagged",
                  "cause", "cause_detail", "origin", "os_wait_us", "steal_us"}
        for row in rows:
            self.assertEqual(set(row), fields)
        a, b, c = rows
        self.assertEqual((a["task"], a["pool"], a["submit_us"], a["response_us"], a["queueing_us"], a["work_us"],
                          a["span_us"], a["competitor_us"], a["bound_us"], a["flagged"], a["cause"]),
                         (1, 0, 1000.0, 4100.0, 4000.0, 100.0, 100.0, 0.0, 150.0, True, "long strand"))
        # Thm. 2.1: level-0 work while R was in the system (its own 100 us) + (P - 1) x 100, over P = 2
        self.assertEqual((a["well_formed"], a["a_span_us"], a["a_bound_us"]), (True, 100.0, 100.0))
        self.assertAlmostEqual(a["ratio"], 4100 / 150)
        an = analyze(tb.doc())
        self.assertEqual(rows, prof.rows(an))        # the file is the analysis, as is
        self.assertEqual((b["task"], b["competitor_us"], b["bound_us"], b["flagged"], b["cause"]),
                         (2, 0.0, 150.0, False, None))
        self.assertEqual((c["task"], c["response_us"], c["work_us"], c["flagged"]), (3, None, None, False))
        # --pool keeps that pool's rows only
        p = run_tool(trace, "--json", out, "--pool", "1")
        with open(out) as f:
            self.assertEqual([r["task"] for r in json.load(f)["requests"]], [2, 3])
        self.assertIn("pool 1: 1 requests did not finish", p.stdout)

    def test_top_and_table(self):
        doc = walkthrough_trace()
        p = run_tool(_write(doc), "--top", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        i = lines.index("worst 2 requests by response / bound")
        self.assertEqual(sum(1 for l in lines[i + 2:] if "long strand" in l and "without" not in l), 2)
        self.assertIn("for pools created at run time the id order only approximates their rank",
                      " ".join(p.stdout.split()))

    def test_plots(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            p = run_tool(_write(walkthrough_trace()), "--plots", os.path.join(_tmp, "plots"))
            self.assertEqual(p.returncode, 0)
            self.assertIn("matplotlib is not installed", p.stdout)
            return
        d = os.path.join(_tmp, "plots")
        p = run_tool(_write(walkthrough_trace()), "--plots", d)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.getsize(os.path.join(d, "response_cdf.png")) > 0)
        self.assertTrue(os.path.getsize(os.path.join(d, "response_vs_bound.png")) > 0)


class ToWorkload(unittest.TestCase):
    """--to-workload: a trace's requests as a promptly-sim workload (docs/simulator.md)."""

    def test_fork_join_becomes_its_dag(self):
        w, left = prof.to_workload(analyze(ForkJoin().doc()))
        self.assertEqual(w["format"], "promptly-sim-workload-1")
        (q,) = w["requests"]
        # the root's stretch cut at the spawn (10 + 20 us), its continuation first, then the stolen
        # child (50); the resumed stretch (10) after both the park and the child's wake-up
        self.assertEqual(q["nodes"], [[10.0, [1, 2]], [20.0, [3]], [50.0, [3]], [10.0, []]])
        self.assertEqual((q["pool"], q["release_us"]), (0, 0.0))
        self.assertEqual(left, {"cross_request_edges": 0, "unowned_stretch_us": 0.0, "unfinished_requests": 0})
        work = sum(n[0] for n in q["nodes"])
        self.assertEqual(work, 90.0)     # the profiler's work and span of the request
        finish = [0.0] * 4
        for i, (d, succ) in enumerate(q["nodes"]):
            finish[i] += d
            for j in succ:
                finish[j] = max(finish[j], finish[i])
        self.assertEqual(max(finish), 70.0)

    def test_cli_writes_the_workload_and_says_what_was_left_out(self):
        trace = _write(walkthrough_trace())
        out = os.path.join(_tmp, "workload.json")
        p = run_tool(trace, "--to-workload", out, "--top", "0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("workload: ", p.stdout)
        self.assertIn("12 requests", p.stdout)
        with open(out) as f:
            w = json.load(f)
        self.assertEqual(w["pools"], 2)
        self.assertEqual([q["release_us"] for q in w["requests"] if q["pool"] == 0],
                         [3030.0 + 10000 * k for k in range(10)])
        for q in w["requests"]:
            for i, (_, succ) in enumerate(q["nodes"]):
                self.assertTrue(all(j > i for j in succ))   # edges point forward: the format's rule
        self.assertNotEqual(run_tool(trace, "--to-workload", "/nonexistent/dir/w.json").returncode, 0)


class Walkthrough(unittest.TestCase):
    """docs/profiling.md's walk-through: its numbers and its printed output are the tool's."""

    def test_every_urgent_request_is_a_long_strand(self):
        an = analyze(walkthrough_trace())
        urgent = [r for r in an.requests if r.pool == 0]
        self.assertEqual(len(urgent), 10)
        for r in urgent:
            # four 50 us leaves run inline: one 200 us stretch; level 0 is the most urgent: C = 0
            self.assertEqual((r.work, r.span, r.competitor, r.bound), (200_000, 200_000, 0, 300_000))
            self.assertTrue(r.flagged)
            self.assertEqual(r.cause, "long strand")
        self.assertEqual([r.queueing // 1000 for r in urgent], [1980 + 200 * k for k in range(10)])
        self.assertEqual([r.response // 1000 for r in urgent], [2180 + 200 * k for k in range(10)])
        background = [r for r in an.requests if r.pool == 1]
        self.assertEqual([r.task for r in background], [1, 2])
        self.assertFalse(any(r.flagged for r in background))
        self.assertEqual([r.competitor for r in background], [2000_000] * 2)  # all the level-0 work

    def test_yield_fixes_it(self):
        an = analyze(walkthrough_trace(yield_us=100))
        urgent = [r for r in an.requests if r.pool == 0]
        self.assertEqual(len(urgent), 10)
        self.assertEqual([r.queueing // 1000 for r in urgent], [70] * 10)
        self.assertEqual([r.response // 1000 for r in urgent], [270] * 10)
        self.assertFalse(any(r.flagged for r in urgent))

    def test_the_doc_shows_the_real_output(self):
        with open(DOC) as f:
            doc = f.read()
        for name, kw in (("walkthrough-before", {}), ("walkthrough-after", {"yield_us": 100})):
            start = f"<!-- {name} -->\n```text\n"
            self.assertIn(start, doc)
            shown = doc.split(start, 1)[1].split("```", 1)[0]
            path = os.path.join(_tmp, "run.json")
            with open(path, "w") as f:
                json.dump(walkthrough_trace(**kw), f)
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(io.StringIO()):
                rc = prof.main([path, "--top", "3"])
            self.assertEqual(rc, 0)
            self.assertEqual(shown, "$ promptly-prof run.json --top 3\n" + out.getvalue())


if __name__ == "__main__":
    unittest.main()
