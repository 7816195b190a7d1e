"""What machine and toolchains a run used: machine.json, and the header of latest.md."""

import os
import platform
import subprocess
from pathlib import Path


def _cmd(*cmd, cwd=None):
    """First line of a command's output, or None if it cannot run."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=cwd,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if out.returncode == 0 and text else None


def _read(path):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def git_commit(root):
    """HEAD's hash, with "-dirty" if the work tree has changes; "unknown" without a commit."""
    head = _cmd("git", "rev-parse", "HEAD", cwd=root)
    if head is None:
        return "unknown"
    try:
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        dirty = ""
    return head + ("-dirty" if dirty else "")


def _cpuinfo():
    model, mhz = None, None
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and model is None:
            model = value
        elif key == "cpu MHz" and mhz is None:
            mhz = float(value)
    return model or platform.processor() or platform.machine(), mhz


def _mem_gib():
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return None


def _dpkg_version(pkg):
    return _cmd("dpkg-query", "-W", "-f=${Version}", pkg)


def _matplotlib_version():
    try:
        import matplotlib
        return matplotlib.__version__
    except ImportError:
        return None


def describe(root):
    model, mhz = _cpuinfo()
    return {
        "cpu_model": model,
        "cpu_mhz": mhz,
        "cores_online": os.cpu_count(),
        "cores_affinity": len(os.sched_getaffinity(0)),
        "cgroup_cpu_max": _read("/sys/fs/cgroup/cpu.max"),
        "memory_gib": _mem_gib(),
        "kernel": platform.release(),
        "os": (_cmd("sh", "-c", ". /etc/os-release && echo $PRETTY_NAME") or platform.system()),
        "arch": platform.machine(),
        "compilers": {
            "gcc": _cmd("gcc", "--version"),
            "g++": _cmd("g++", "--version"),
            "clang": _cmd("clang", "--version"),
            "go": _cmd("go", "version"),
            "rustc": _cmd("rustc", "--version"),
            "cargo": _cmd("cargo", "--version"),
            "cmake": _cmd("cmake", "--version"),
        },
        "libraries": {
            "libtbb-dev": _dpkg_version("libtbb-dev"),
            "libboost-context-dev": _dpkg_version("libboost-context-dev"),
        },
        "python": platform.python_version(),
        "matplotlib": _matplotlib_version(),
        "commit": git_commit(root),
    }


def one_line(m):
    c = m["compilers"]
    return (f"{m['cpu_model']}, {m['cores_affinity']} cores usable ({m['cores_online']} online), "
            f"{m['memory_gib']} GiB, Linux {m['kernel']}; {c['g++'] or 'no g++'}; "
            f"{c['go'] or 'no go'}; {c['rustc'] or 'no rustc'}; oneTBB {m['libraries']['libtbb-dev']}")
