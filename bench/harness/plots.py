"""PNG plots of a suite's results: per bench, bars of the median with a min-max error bar, one
bar per worker count, grouped by runtime. Panels: region time, the bench's `plot` metrics,
peak RSS. Hatched bars contain runs flagged for too few effective cores."""

import sys

import report


def _panels(spec):
    return [("region_s", "region (ms)", 1e3)] + \
           [(m, m, 1.0) for m in spec.get("plot", [])] + [("rss_mib", "peak RSS (MiB)", 1.0)]


def _value(r, key):
    return r["rss_mib"] if key == "rss_mib" else r["metrics"].get(key)


def plot_suite(out_dir, suite, results, subtitle):
    """Writes <bench>.png per bench into out_dir; returns {bench: file name}. Without
    matplotlib, warns and returns {}."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        print("warning: matplotlib is not installed, no plots (./run setup installs it)", file=sys.stderr)
        return {}

    written = {}
    for spec in suite["benches"]:
        rs = [r for r in results if r["bench"] == spec["name"]]
        if not rs:
            continue
        present = list(dict.fromkeys(r["runtime"] for r in rs))
        order = suite.get("runtime_order", [])
        runtimes = [rt for rt in order if rt in present] + [rt for rt in present if rt not in order]
        workers = sorted({r["params"]["workers"] for r in rs})
        panels = _panels(spec)
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.5, 4.2), squeeze=False)
        width = 0.8 / len(workers)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for ax, (key, label, scale) in zip(axes[0], panels):
            values = []
            for j, w in enumerate(workers):
                xs, med, lo, hi, hatch = [], [], [], [], []
                for i, rt in enumerate(runtimes):
                    r = next((r for r in rs if r["runtime"] == rt and r["params"]["workers"] == w), None)
                    s = r and _value(r, key)
                    if not s:
                        continue
                    xs.append(i + (j - (len(workers) - 1) / 2) * width)
                    med.append(s["median"] * scale)
                    lo.append((s["median"] - s["min"]) * scale)
                    hi.append((s["max"] - s["median"]) * scale)
                    hatch.append("//" if r["low_cores"] else "")
                    values += [s["min"] * scale, s["max"] * scale]
                bars = ax.bar(xs, med, width, yerr=[lo, hi], capsize=3, color=colors[j % len(colors)])
                for b, h in zip(bars, hatch):
                    b.set_hatch(h)
            positive = [v for v in values if v > 0]
            if key == "region_s" and positive and max(positive) / min(positive) > 50:
                ax.set_yscale("log")
            ax.set_xticks(range(len(runtimes)), runtimes, rotation=30, ha="right")
            ax.set_title(label)
            ax.grid(axis="y", alpha=0.3)
        handles = [Patch(color=colors[j % len(colors)], label=f"{w} worker{'s' * (w > 1)}")
                   for j, w in enumerate(workers)]
        if any(r["low_cores"] for r in rs):
            handles.append(Patch(facecolor="white", edgecolor="black", hatch="//",
                                 label=f"runs < {report.LOW_CORES} eff. cores"))
        axes[0][0].legend(handles=handles, fontsize="small")
        quick = " [--quick]" if rs[0]["params"].get("quick") else ""
        fig.suptitle(f"{spec['name']}: {spec.get('title', '')}\n{report.param_text(rs[0]['params'])}"
                     f"{quick}; {subtitle}", fontsize="medium")
        fig.tight_layout()
        name = f"{spec['name']}.png"
        fig.savefig(out_dir / name, dpi=90)
        plt.close(fig)
        written[spec["name"]] = name
    return written
