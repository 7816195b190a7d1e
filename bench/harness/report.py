"""Turning runs into results: aggregation (median, min, max), metrics relative to another
result (speedups), and the files latest.json and latest.md."""

import json
import statistics

LOW_CORES = 1.8  # effective cores below which a run is flagged


def summarize(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def make_result(pair, runs):
    """One entry of latest.json's "results" from a pair's measured runs (schema: README.md)."""
    metric_names = sorted({k for r in runs for k in r["metrics"]})
    samples = {k: [r[k] for r in runs] for k in ("wall_s", "cpu_s", "rss_mib")}
    for k in metric_names:
        samples[k] = [r["metrics"][k] for r in runs if k in r["metrics"]]
    cores = samples.get("effective_cores", [])
    low = sum(1 for c in cores if c < LOW_CORES)
    return {
        "bench": pair.bench,
        "runtime": pair.runtime,
        "params": pair.params,
        "reps": len(runs),
        "wall_s": summarize(samples["wall_s"]),
        "cpu_s": summarize(samples["cpu_s"]),
        "rss_mib": summarize(samples["rss_mib"]),
        "metrics": {k: summarize(samples[k]) for k in metric_names},
        "low_cores": low > 0,
        "low_core_runs": low,
        "samples": samples,
    }


def find(results, bench, runtime, workers):
    for r in results:
        if r["bench"] == bench and r["runtime"] == runtime and r["params"]["workers"] == workers:
            return r
    return None


def apply_relative(results, benches):
    """Adds each bench's "relative" metrics: ref's median / this result's value of `metric`
    (default region_s), i.e. a speedup over the reference. The min uses this result's max."""
    for r in results:
        for rel in benches[r["bench"]].get("relative", []):
            ref_spec = rel["ref"]
            ref = find(results, r["bench"], ref_spec.get("runtime", r["runtime"]),
                       ref_spec.get("workers", r["params"]["workers"]))
            metric = rel.get("metric", "region_s")
            if ref is None or metric not in ref["metrics"] or metric not in r["metrics"]:
                continue
            base, mine = ref["metrics"][metric]["median"], r["metrics"][metric]
            if min(mine.values()) <= 0:
                continue
            r["metrics"][rel["name"]] = {"median": base / mine["median"], "min": base / mine["max"],
                                         "max": base / mine["min"]}


def write_json(path, suite_name, machine, results):
    doc = {"suite": suite_name, "commit": machine.get("commit", "unknown"), "machine": machine,
           "results": results}
    path.write_text(json.dumps(doc, indent=1) + "\n")


# --- latest.md ------------------------------------------------------------------------------

def num(x):
    """A number with about 3 significant digits, without exponents for ordinary magnitudes."""
    if x is None:
        return "–"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a == 0:
        return "0"
    if a >= 0.001:
        return f"{x:#.3g}"
    return f"{x:.2e}"


def spread(s, scale=1.0):
    return f"{num(s['median'] * scale)} ({num(s['min'] * scale)}–{num(s['max'] * scale)})"


def ratio(results, r, baseline):
    base = find(results, r["bench"], baseline, r["params"]["workers"])
    if base is None:
        return "–"
    return num(r["metrics"]["region_s"]["median"] / base["metrics"]["region_s"]["median"])


def param_text(params):
    skip = {"workers", "quick", "inner_warmup", "inner_reps", "sleep"}
    return ", ".join(f"{k}={v}" for k, v in params.items() if k not in skip)


def _summary(lines, results, bench_specs, runtimes_in_order):
    lines += ["## Summary", "",
              "Median `region_s` in ms, and in brackets the ratio to the baseline runtime (normally "
              "`promptly`) at the same worker count: below 1 is faster than the baseline.", ""]
    lines += ["| bench | workers | " + " | ".join(runtimes_in_order) + " |",
              "|---|---:|" + "---:|" * len(runtimes_in_order)]
    for name, spec in bench_specs.items():
        baseline = spec.get("baseline", "promptly")
        rs = [r for r in results if r["bench"] == name]
        for w in sorted({r["params"]["workers"] for r in rs}):
            cells = []
            for rt in runtimes_in_order:
                r = find(rs, name, rt, w)
                if r is None:
                    cells.append("")
                    continue
                flag = " ⚠" if r["low_cores"] else ""
                cells.append(f"{num(r['metrics']['region_s']['median'] * 1e3)} "
                             f"({ratio(results, r, baseline)}){flag}")
            lines.append(f"| {name} | {w} | " + " | ".join(cells) + " |")
    lines.append("")


def _derived_tables(lines, suite, results):
    """A suite's "tables": functions of the results returning (title, text, header, rows), e.g.
    a paper's table assembled from metrics of several benches. Cells are strings; a table
    with no rows (its benches did not run) is left out."""
    for make in suite.get("tables", []):
        title, text, header, rows = make(results)
        if not rows:
            continue
        lines += [f"## {title}", ""] + ([text, ""] if text else [])
        lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")


def write_md(path, suite, machine, run_info, results, failures, plots, extra_plots=None):
    from machine import one_line  # local import: report.py is usable without it

    benches = {b["name"]: b for b in suite["benches"] if any(r["bench"] == b["name"] for r in results)}
    present = list(dict.fromkeys(r["runtime"] for r in results))
    order = suite.get("runtime_order", [])
    runtimes = [rt for rt in order if rt in present] + [rt for rt in present if rt not in order]
    cores = [c for r in results for c in r["samples"].get("effective_cores", [])]
    low = sum(1 for c in cores if c < LOW_CORES)

    lines = [f"# Benchmark suite `{suite['name']}`" + (" (--quick)" if run_info["quick"] else ""), ""]
    if suite.get("title"):
        lines += [suite["title"] + ".", ""]
    lines += [
        f"- Run: {run_info['date']}, commit `{machine.get('commit')}`, "
        f"{run_info['duration_s'] / 60:.1f} min.",
        f"- Machine: {one_line(machine)} (details: `machine.json`).",
        f"- Method: the (bench, runtime, workers) pairs ran alternately, one round after another: "
        f"1 warm-up round, then {run_info['reps']} measured round{'s' * (run_info['reps'] > 1)}. Each program times its own region "
        f"in-process (`inner_warmup` untimed + `inner_reps` timed repetitions, median = `region_s`). "
        f"Wall, CPU (user+sys) and peak RSS are whole-process figures from `wait4` in the parent.",
    ]
    if cores:
        lines.append(f"- Effective cores (2 spinning processes for {run_info['probe_ms']} ms before each "
                     f"measured run): median {num(statistics.median(cores))}, min {num(min(cores))}; "
                     f"{low} of {len(cores)} runs below {LOW_CORES} (⚠).")
    if run_info.get("calibrated"):
        lines.append("- Calibrated once before the rounds, the same for every run: " +
                     ", ".join(f"`{k}` = {v}" for k, v in run_info["calibrated"].items()) + ".")
    lines.append("- Cells read `median (min–max)` over the measured rounds.")
    lines.append("")
    if failures:
        lines += ["## FAILED", ""]
        for label, msg in failures:
            lines += [f"- **{label}**:", "", "```", msg, "```", ""]

    _summary(lines, results, benches, runtimes)
    _derived_tables(lines, suite, results)

    for name, spec in benches.items():
        rs = [r for r in results if r["bench"] == name]
        baseline = spec.get("baseline", "promptly")
        show = [m for m in spec.get("show", []) if any(m in r["metrics"] for r in rs)]
        title = f"{spec['title']}. " if spec.get("title") else ""
        lines += [f"## {name}", "", f"{title}Parameters: {param_text(rs[0]['params'])}.", ""]
        head = ["runtime", "workers", "region ms", f"× {baseline}"] + show + \
               ["wall s", "CPU s", "peak RSS MiB", "eff. cores", "inner reps"]
        lines += ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
        for r in sorted(rs, key=lambda r: (r["params"]["workers"], runtimes.index(r["runtime"]))):
            m = r["metrics"]
            ec = m.get("effective_cores")
            cores_cell = "–" if ec is None else f"{num(ec['median'])} (min {num(ec['min'])})"
            if r["low_cores"]:
                cores_cell += f" ⚠{r['low_core_runs']}/{r['reps']}"
            row = [r["runtime"], str(r["params"]["workers"]), spread(m["region_s"], 1e3),
                   ratio(results, r, baseline)]
            row += [spread(m[k]) if k in m else "–" for k in show]
            row += [spread(r["wall_s"]), spread(r["cpu_s"]), spread(r["rss_mib"]), cores_cell,
                    f"{r['params']['inner_warmup']}+{r['params']['inner_reps']}"]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        if name in plots:
            lines += [f"![{name}]({plots[name]})", ""]

    if extra_plots:
        lines += ["## More plots", ""]
        for name, file in sorted(extra_plots.items()):
            lines += [f"### {name}", "", f"![{name}]({file})", ""]

    lines += [
        "## Reading these tables", "",
        "- `region ms` is what the ratios use: the workload's measured region, timed inside the "
        "program after its warm-up, so process start-up and thread creation do not dilute it.",
        "- `× promptly` (the bench's baseline) = this runtime's median `region_s` / the baseline's "
        "median at the same worker count: 2.0 means twice as slow as the baseline.",
        "- `speedup_vs_serial` = serial program's median `region_s` / this one's; `speedup_vs_w1` = "
        "the same runtime's median at 1 worker / this one's. `ns_per_spawn` = `region_s` / spawns; "
        "`worker_ns_per_spawn` multiplies by the workers (CPU cost of one spawn). `run_util` = "
        "process CPU / wall during the region (cores kept busy, spinning included).",
        "- ⚠ marks results with runs where the effective-core probe saw fewer than "
        f"{LOW_CORES} cores: this VM's second core comes and goes, so 2-worker figures of "
        "those runs understate what 2 cores do.",
        "- Never compare these numbers with another run's: compare runtimes within this table.",
        "",
    ]
    path.write_text("\n".join(lines))
