"""Suite definitions: loading bench/suites/NAME.py and expanding it into (bench, runtime, params)
pairs. The file format is documented in bench/README.md ("Adding a workload")."""

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

BENCH_KEYS = {
    "name", "title", "params", "quick_params", "workers", "args", "inner", "quick_inner",
    "runtimes", "expected", "derived", "relative", "show", "plot", "timeout_s",
    "quick_timeout_s", "baseline",
}
RUNTIME_KEYS = {"exe", "args", "env", "params", "workers", "inner"}
EXE_KINDS = ("cmake", "go", "cargo")


class SuiteError(Exception):
    pass


@dataclass
class Pair:
    """One (bench, runtime, params) combination: the unit that is run alternately."""

    bench: str
    runtime: str
    params: dict
    exe: str  # "cmake:TARGET" | "go:PACKAGE" | "cargo:BIN"
    args: list
    env: dict
    timeout_s: float
    spec: dict = field(repr=False)  # the bench's definition

    @property
    def label(self):
        return f"{self.bench} {self.runtime} w={self.params['workers']}"

    @property
    def slug(self):
        return f"{self.bench}.{self.runtime}.w{self.params['workers']}"


def suites_dir(root):
    return Path(root) / "bench" / "suites"


def available(root):
    return sorted(p.stem for p in suites_dir(root).glob("*.py") if not p.stem.startswith("_"))


def load(root, name):
    path = suites_dir(root) / f"{name}.py"
    if not path.is_file():
        raise SuiteError(f"no suite '{name}' (have: {', '.join(available(root)) or 'none'}); "
                         f"a suite is a file bench/suites/NAME.py")
    spec = importlib.util.spec_from_file_location(f"promptly_suite_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    suite = getattr(module, "SUITE", None)
    if not isinstance(suite, dict):
        raise SuiteError(f"{path}: must define a dict SUITE")
    validate(suite, path)
    return suite


def validate(suite, path):
    if not suite.get("benches"):
        raise SuiteError(f"{path}: SUITE['benches'] is empty")
    for c in suite.get("calibrate", []):
        if set(c) - {"param", "exe", "args", "metric", "runs"} or not {"param", "exe", "metric"} <= set(c):
            raise SuiteError(f"{path}: a 'calibrate' entry has the keys param, exe, metric and optionally "
                             f"args, runs; got {sorted(c)}")
    names = set()
    for b in suite["benches"]:
        where = f"{path}: bench {b.get('name', '?')!r}"
        if "name" not in b or "runtimes" not in b:
            raise SuiteError(f"{where}: needs 'name' and 'runtimes'")
        if b["name"] in names:
            raise SuiteError(f"{where}: duplicate bench name")
        names.add(b["name"])
        if unknown := set(b) - BENCH_KEYS:
            raise SuiteError(f"{where}: unknown keys {sorted(unknown)}")
        for rt, r in b["runtimes"].items():
            if unknown := set(r) - RUNTIME_KEYS:
                raise SuiteError(f"{where}, runtime {rt!r}: unknown keys {sorted(unknown)}")
            kind = r.get("exe", "").partition(":")[0]
            if kind not in EXE_KINDS:
                raise SuiteError(f"{where}, runtime {rt!r}: exe must be one of "
                                 f"{', '.join(k + ':NAME' for k in EXE_KINDS)}")


def _fmt(template, params, where):
    try:
        return str(template).format(**params)
    except (KeyError, IndexError) as e:
        raise SuiteError(f"{where}: '{template}' names a parameter that is not set: {e}")


def calibration_defaults(suite):
    """The parameters a suite's "calibrate" entries set, each at its value before measuring
    ("0": the program measures for itself)."""
    return {c["param"]: "0" for c in suite.get("calibrate", [])}


def expand(suite, quick, benches=None, runtimes=None, workers=None, timeout=None, calibrated=None):
    """All pairs of the suite in round order (bench-major, then workers, then runtime),
    restricted by the optional filters (sets of names / worker counts). `calibrated`: the
    values of the suite's "calibrate" parameters (default: calibration_defaults)."""
    pairs = []
    for b in suite["benches"]:
        if benches and b["name"] not in benches:
            continue
        base = {**calibration_defaults(suite), **(calibrated or {}), **b.get("params", {})}
        if quick:
            base.update(b.get("quick_params", {}))
        worker_counts = []
        for r in b["runtimes"].values():
            for w in r.get("workers", b.get("workers", [1])):
                if w not in worker_counts:
                    worker_counts.append(w)
        for w in worker_counts:
            for rt, r in b["runtimes"].items():
                if runtimes and rt not in runtimes:
                    continue
                if w not in r.get("workers", b.get("workers", [1])):
                    continue
                if workers and w not in workers:
                    continue
                # in-process repetitions [warm-up, timed]: --quick uses the bench's quick_inner.
                if quick and b.get("quick_inner"):
                    inner = b["quick_inner"]
                else:
                    inner = r.get("inner") or b.get("inner") or [2, 10]
                params = {"workers": w, **base, **r.get("params", {}),
                          "inner_warmup": inner[0], "inner_reps": inner[1], "quick": bool(quick)}
                where = f"bench {b['name']}, runtime {rt}"
                args = [_fmt(a, params, where) for a in list(b.get("args", [])) + list(r.get("args", []))]
                args += ["--workers", str(w), "--warmup", str(inner[0]), "--reps", str(inner[1])]
                env = {k: _fmt(v, params, where) for k, v in r.get("env", {}).items()}
                t = timeout or (b.get("quick_timeout_s", 120) if quick else b.get("timeout_s", 600))
                pairs.append(Pair(b["name"], rt, params, r["exe"], args, env, float(t), b))
    return pairs
