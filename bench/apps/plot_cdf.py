"""Latency CDFs of suite `apps`, per request type per runtime.

email_driver --samples-out writes every measured latency of a run as
{"resp": [us...], "send": [...], "sort": [...], "print": [...]}; the suite names the files
/tmp/promptly-bench/apps/email-N-RUNTIME.json (the last measured round of each pair). This
draws one figure per bench: a panel per request type, one CDF per runtime (log time axis).

  python3 bench/apps/plot_cdf.py [--samples /tmp/promptly-bench/apps] [--out bench/results/apps]
"""

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

ORDER = ["promptly-aps", "promptly-prompt", "promptly-fair", "promptly-oblivious", "go"]
TYPES = ["resp", "send", "sort", "print"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="/tmp/promptly-bench/apps")
    ap.add_argument("--out", default="bench/results/apps")
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = defaultdict(dict)  # bench -> runtime -> samples
    for f in sorted(Path(a.samples).glob("*.json")):
        m = re.fullmatch(r"(email-\d+)-(.+)", f.stem)
        if m:
            runs[m.group(1)][m.group(2)] = json.loads(f.read_text())
    if not runs:
        raise SystemExit(f"no samples in {a.samples} (run ./run bench apps first)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for bench, by_rt in sorted(runs.items()):
        fig, axes = plt.subplots(1, len(TYPES), figsize=(4 * len(TYPES), 3.6), sharey=True)
        for ax, t in zip(axes, TYPES):
            for rt in sorted(by_rt, key=lambda r: ORDER.index(r) if r in ORDER else 99):
                v = sorted(by_rt[rt].get(t, []))
                if not v:
                    continue
                ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=rt, linewidth=1.2)
            ax.set_xscale("log")
            ax.set_title(f"{t} (us)")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_ylim(0, 1.0)
        axes[0].set_ylabel("fraction of requests")
        axes[-1].legend(fontsize=8, loc="lower right")
        fig.suptitle(f"{bench}: latency CDF per request type (last measured round)")
        fig.tight_layout()
        path = out / f"{bench}-cdf.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
