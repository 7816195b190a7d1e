"""Latency CDFs of suite `apps`, per request or job type per runtime.

One figure per bench, BENCH-cdf.png: a panel per type, one CDF per runtime (log time axis).

- email-N, proxy-N and jserver-L: from every latency sample of the pair's last measured round.
  The programs write them with --samples-out (email_driver: {"resp": [us...], "send", "sort",
  "print"}; proxy_driver: {"resp", "first_byte", "hit", "miss"}; jserver and jserver_tbb: {"mm", "fib",
  "sort", "sw"}, one per finished job); the suite names the files
  /tmp/promptly-bench/apps/BENCH-RUNTIME.json. A file is used only if it is that round's: its
  nearest-rank p50 and p99 must be the round's reported <type>_us_p50 / _p99 (so a file left by
  an older or a filtered run is never drawn as this run's).
- The reported quantiles (<type>_us_p50 / _p90 / _p95 / _p99 / _max, the median of each over the
  measured rounds) stand in, marked "(quantiles)", for a runtime whose samples are missing (e.g.
  when latest.md is re-rendered from latest.json).

The suite calls cdf_plots() after the harness's own plots (its "extra_plots" hook); by hand:

  python3 bench/apps/plot_cdf.py [--results bench/results/apps/latest.json]
                                 [--samples /tmp/promptly-bench/apps] [--out DIR of --results]
"""

import argparse
import json
import math
import sys
from pathlib import Path

SAMPLES = Path("/tmp/promptly-bench/apps")
ORDER = ["promptly-aps", "promptly-prompt", "promptly-fair", "promptly-oblivious", "go", "tbb-arenas"]

# Per application (the bench name's prefix): the panels, whether its driver writes samples, and
# what one panel's latency is.
APPS = {
    "email": {"types": ["resp", "send", "sort", "print"], "samples": True, "what": "request type",
              "panels": {}},
    "proxy": {"types": ["resp", "hit", "miss"], "samples": True, "what": "request type",
              "panels": {"resp": "resp, to the proxy's reaction", "hit": "hit, whole response", "miss": "miss, whole response"}},
    "jserver": {"types": ["mm", "fib", "sort", "sw"], "samples": True, "what": "job type",
                "panels": {t: f"{t}, release to finish" for t in ["mm", "fib", "sort", "sw"]}},
}
# Quantile metrics a program may report, as (metric suffix, fraction of requests at or below).
QUANTILES = [("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99), ("max", 1.0)]
# The drivers write samples to 0.1 us and report quantiles to 0.1 us, rounded or truncated.
MATCH_US = 0.15


def nearest_rank(sorted_values, q):
    """The drivers' percentile: the ceil(q * n)-th smallest value."""
    return sorted_values[max(0, min(len(sorted_values), math.ceil(q * len(sorted_values))) - 1)]


def last_round(result, metric):
    values = result.get("samples", {}).get(metric)
    return values[-1] if values else None


def load_samples(path, result, types):
    """The samples of `path` as {type: sorted list}, or (None, why) unless the file is the
    result's last measured round (see the module docstring)."""
    if not path.is_file():
        return None, f"no samples file {path}"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"unreadable samples file {path}: {e}"
    out = {}
    for t in types:
        v = sorted(raw.get(t, []))
        if not v:
            return None, f"{path} has no '{t}' samples"
        for q, fraction in (("p50", 0.50), ("p99", 0.99)):
            got, want = nearest_rank(v, fraction), last_round(result, f"{t}_us_{q}")
            if want is None or abs(got - want) > MATCH_US:
                return None, (f"{path} is not from the last measured round ({t} {q}: {got} us in the file, "
                              f"{want} us reported)")
        out[t] = v
    return out, None


def quantile_points(result, t):
    """[(us, fraction)] of the reported quantiles of type t, medians over the measured rounds."""
    m = result["metrics"]
    return [(m[f"{t}_us_{q}"]["median"], f) for q, f in QUANTILES if f"{t}_us_{q}" in m]


def app_of(bench):
    prefix = bench.partition("-")[0]
    return prefix if prefix in APPS else None


def draw(path, title, app, curves):
    """curves: [(runtime, {type: samples} | None, {type: points} | None)] in legend order. A
    runtime drawn from quantiles gets markers at its known points; "(quantiles)" in the legend
    where other runtimes of the figure are drawn from samples."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    types = APPS[app]["types"]
    any_samples = any(samples is not None for _, samples, _ in curves)
    fig, axes = plt.subplots(1, len(types), figsize=(4 * len(types), 3.9), sharey=True)
    for rt, samples, points in curves:
        color = f"C{ORDER.index(rt) if rt in ORDER else len(ORDER)}"  # a runtime's colour in every figure
        for ax, t in zip(axes, types):
            if samples is not None:
                v = samples[t]
                ax.plot(v, [(k + 1) / len(v) for k in range(len(v))], color=color, label=rt, linewidth=1.2)
            elif points[t]:
                xs, ys = zip(*points[t])
                label = f"{rt} (quantiles)" if any_samples else rt
                ax.plot(xs, ys, "o--", color=color, label=label, linewidth=1, markersize=3.5)
    for ax, t in zip(axes, types):
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # 2x10^4, 3x10^4, ... would overlap
        ax.set_title(f"{APPS[app]['panels'].get(t, t)} (us)")
        ax.grid(True, which="both", alpha=0.3)
        # Quantiles start at p50: the lower half of the axis would be empty.
        ax.set_ylim(0, 1.0) if any_samples else ax.set_ylim(0.45, 1.01)
    axes[0].set_ylabel(f"fraction of {'jobs' if app == 'jserver' else 'requests'}")
    # One legend below the panels: inside one, it would hide some runtime's tail.
    legend = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(legend.values(), legend.keys(), fontsize=8, loc="lower center", ncol=max(1, len(legend)),
               frameon=False)
    if any_samples and all(samples is not None for _, samples, _ in curves):
        source = "every sample of the last measured round"
    elif any_samples:
        source = "samples of the last measured round; (quantiles): medians of the reported ones"
    else:
        source = "the reported quantiles only, medians over the measured rounds"
    fig.suptitle(f"{title}: latency CDF per {APPS[app]['what']} ({source})")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bench_curves(bench, app, results, samples_dir):
    """The curves of one bench's results at one worker count."""
    rs = sorted(results, key=lambda r: (ORDER.index(r["runtime"]) if r["runtime"] in ORDER else 99, r["runtime"]))
    types = APPS[app]["types"]
    curves = []
    for r in rs:
        samples = None
        if APPS[app]["samples"]:
            samples, why = load_samples(samples_dir / f"{bench}-{r['runtime']}.json", r, types)
            if samples is None:
                print(f"warning: {bench} {r['runtime']}: {why}; drawing its reported quantiles", file=sys.stderr)
        points = None if samples is not None else {t: quantile_points(r, t) for t in types}
        curves.append((r["runtime"], samples, points))
    return curves


def cdf_plots(out_dir, results, samples_dir=SAMPLES):
    """Draws BENCH-cdf.png into out_dir for every email, proxy and jserver bench in `results`
    (the harness's result dicts; BENCH-wW-cdf.png if a bench ran at several worker counts, but
    the samples files hold one per runtime: the suite runs the apps at 2 workers only). Returns
    {plot name: PNG file name}: the suite's "extra_plots" hook."""
    out_dir, samples_dir = Path(out_dir), Path(samples_dir)
    groups = {}
    for r in results:
        if app_of(r["bench"]):
            groups.setdefault((r["bench"], r["params"]["workers"]), []).append(r)
    written = {}
    for (bench, workers), rs in sorted(groups.items()):
        several = sum(1 for b, _ in groups if b == bench) > 1
        name = f"{bench}-w{workers}-cdf" if several else f"{bench}-cdf"
        out_dir.mkdir(parents=True, exist_ok=True)
        curves = bench_curves(bench, app_of(bench), rs, samples_dir)
        draw(out_dir / f"{name}.png", f"{bench}, {workers} workers", app_of(bench), curves)
        written[name] = f"{name}.png"
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="bench/results/apps/latest.json", help="the suite's latest.json")
    ap.add_argument("--samples", default=str(SAMPLES), help="where the drivers wrote their samples")
    ap.add_argument("--out", help="default: the directory of --results")
    a = ap.parse_args()
    path = Path(a.results)
    if not path.is_file():
        raise SystemExit(f"no results file {path} (run ./run bench apps first)")
    written = cdf_plots(Path(a.out) if a.out else path.parent, json.loads(path.read_text())["results"], a.samples)
    if not written:
        raise SystemExit(f"{path} has no email, proxy or jserver results")
    for file in written.values():
        print(f"wrote {Path(a.out) if a.out else path.parent}/{file}")


if __name__ == "__main__":
    main()
