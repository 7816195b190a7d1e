#!/usr/bin/env python3
"""Compile-time and binary-size overhead of the typed priority API (the futures-and-state paper (PLDI 2020) Table 1).

Compiles bench/typed/{typed,dynamic,levels}.cpp -- one email-like program written
with the typed API, the dynamic API and plain levels -- N times each with the
project's Release flags, interleaved, and reports the median compile time (wall
and CPU) and the stripped size of the linked binary. Each binary is run once to
check the three print the same checksum. Writes bench/results/typed/latest.md and
latest.json with a description of the machine.

Usage: bench/typed/measure.py [--reps 5] [--build build] [--cxx c++]
Needs a Release build of the library (cmake --build build).
"""
import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [
    ("typed", "typed API: priorities are types, rule TOUCH checked by the compiler"),
    ("dynamic", "dynamic API: priorities parsed at run time, rule TOUCH checked at each touch"),
    ("levels", "plain levels and futures, nothing checked (dynamic.cpp compiled with PROMPTLY_BENCH_PLAIN_LEVELS; the futures-and-state paper's \"without priorities\")"),
]
FLAGS = ["-std=c++20", "-O3", "-DNDEBUG"]  # CMAKE_CXX_FLAGS_RELEASE + CMAKE_CXX_STANDARD 20


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def machine(cxx):
    info = {"host": platform.node(), "kernel": platform.release(), "machine": platform.machine(),
            "cpus_online": os.cpu_count(), "compiler": run([cxx, "--version"]).stdout.splitlines()[0],
            "loadavg_at_start": os.getloadavg()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def compile_once(cxx, src, obj, includes):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run([cxx, *FLAGS, *includes, "-c", str(src), "-o", str(obj)])
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def render(doc, cxx):
    """latest.md from the measurements."""
    results = doc["results"]
    lines = [
        "# Typed priorities: compile time and binary size",
        "",
        f"`bench/typed/measure.py`, {doc['date']}, commit {doc['commit']}. One email-like program (the futures-and-state paper, Sec. 5.1: "
        "six priorities; sends, sorts, and prints/compressions coordinated through a CAS on per-email future "
        "cells) written three ways, each compiled "
        f"{doc['reps']} times (interleaved) with `{cxx} {' '.join(doc['flags'])} -c`; medians, min-max in brackets. "
        "Binary: the linked program (static libpromptly), `strip --strip-all`. All three print "
        f"`{results['typed']['output']}`. The object file's size is shown too: it is not stripped, so it "
        "also counts symbol names, which are long for template instances.",
        "",
        "| program | compile wall (s) | compile CPU (s) | stripped binary (bytes) | object file (bytes) | vs dynamic: compile (wall / CPU) | vs dynamic: binary / object | vs levels: compile CPU | vs levels: binary / object |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, _ in PROGRAMS:
        r = results[name]
        w, c = r["compile_wall_s"], r["compile_cpu_s"]
        lines.append(
            f"| {name} | {w['median']:.2f} [{w['min']:.2f}-{w['max']:.2f}] | {c['median']:.2f} [{c['min']:.2f}-{c['max']:.2f}] "
            f"| {r['binary_stripped_bytes']} | {r['object_bytes']} "
            f"| {r['vs_dynamic']['compile_wall']:.2f}x / {r['vs_dynamic']['compile_cpu']:.2f}x "
            f"| {r['vs_dynamic']['binary']:.3f}x / {r['object_bytes'] / results['dynamic']['object_bytes']:.2f}x "
            f"| {r['vs_levels']['compile_cpu']:.2f}x "
            f"| {r['vs_levels']['binary']:.3f}x / {r['object_bytes'] / results['levels']['object_bytes']:.2f}x |")
    lines += [
        "",
        "* `typed`: " + PROGRAMS[0][1] + ".",
        "* `dynamic`: " + PROGRAMS[1][1] + ".",
        "* `levels`: " + PROGRAMS[2][1] + ".",
        "",
        "The futures-and-state paper (PLDI 2020) Table 1 reports 1.16x-1.27x compile time and 1.16x-1.18x binary size for its macro and "
        "inheritance encoding against code without priorities.",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in doc['machine'].items()) + ".",
        "",
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "typed"))
    ap.add_argument("--render-only", action="store_true", help="rewrite latest.md from latest.json, compiling nothing")
    args = ap.parse_args()
    if args.render_only:
        out = Path(args.out)
        doc = json.loads((out / "latest.json").read_text())
        (out / "latest.md").write_text(render(doc, doc.get("cxx", args.cxx)))
        return

    build = Path(args.build)
    lib = build / "libpromptly.a"
    if not lib.exists():
        sys.exit(f"measure.py: {lib} not found; build the library first (cmake --build {build})")
    includes = [f"-I{ROOT / 'include'}", f"-I{build / 'include'}"]
    info = machine(args.cxx)

    times = {name: {"wall": [], "cpu": []} for name, _ in PROGRAMS}
    sizes, objsizes, outputs = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for rep in range(args.reps):
            for name, _ in PROGRAMS:  # interleaved, so drift in machine load hits all alike
                wall, cpu = compile_once(args.cxx, ROOT / "bench" / "typed" / f"{name}.cpp", tmp / f"{name}.o", includes)
                times[name]["wall"].append(wall)
                times[name]["cpu"].append(cpu)
                print(f"rep {rep + 1}/{args.reps} {name}: {wall:.2f} s wall, {cpu:.2f} s cpu", flush=True)
        for name, _ in PROGRAMS:
            exe = tmp / name
            run([args.cxx, str(tmp / f"{name}.o"), str(lib), "-lboost_context", "-pthread", "-o", str(exe)])
            stripped = tmp / f"{name}.stripped"
            shutil.copy(exe, stripped)
            run(["strip", "--strip-all", str(stripped)])
            sizes[name] = stripped.stat().st_size
            objsizes[name] = (tmp / f"{name}.o").stat().st_size
            outputs[name] = run([str(exe)], timeout=120).stdout.strip()

    if len(set(outputs.values())) != 1:
        sys.exit(f"measure.py: the programs disagree: {outputs}")

    base = "dynamic"
    results = {}
    for name, what in PROGRAMS:
        w, c = times[name]["wall"], times[name]["cpu"]
        results[name] = {
            "description": what,
            "compile_wall_s": {"median": statistics.median(w), "min": min(w), "max": max(w), "all": w},
            "compile_cpu_s": {"median": statistics.median(c), "min": min(c), "max": max(c), "all": c},
            "binary_stripped_bytes": sizes[name],
            "object_bytes": objsizes[name],
            "output": outputs[name],
        }
    for name in results:
        r = results[name]
        r["vs_dynamic"] = {
            "compile_wall": r["compile_wall_s"]["median"] / results[base]["compile_wall_s"]["median"],
            "compile_cpu": r["compile_cpu_s"]["median"] / results[base]["compile_cpu_s"]["median"],
            "binary": r["binary_stripped_bytes"] / results[base]["binary_stripped_bytes"],
        }
        r["vs_levels"] = {
            "compile_wall": r["compile_wall_s"]["median"] / results["levels"]["compile_wall_s"]["median"],
            "compile_cpu": r["compile_cpu_s"]["median"] / results["levels"]["compile_cpu_s"]["median"],
            "binary": r["binary_stripped_bytes"] / results["levels"]["binary_stripped_bytes"],
        }

    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    doc = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit, "reps": args.reps, "cxx": args.cxx,
           "flags": FLAGS, "machine": info, "results": results}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.json").write_text(json.dumps(doc, indent=2) + "\n")

    (out / "latest.md").write_text(render(doc, args.cxx))
    print(render(doc, args.cxx))


if __name__ == "__main__":
    main()
