"""Measuring one run of a workload program from the parent, and probing the cores this shared
VM actually gives us.

Wall time, CPU time (user + sys) and peak RSS come from wait4() in the parent, never from the
program itself: a tiny launcher (spawn_rusage.c) forks the program, waits for it and reports its
rusage, because Python's own RSS would leak into ru_maxrss of a program it exec'd directly. The program's own
figures (region_s, ...) come from its final `RESULT {json}` line (protocol: bench/README.md)."""

import json
import os
import signal
import threading
import time
from pathlib import Path


class RunError(Exception):
    pass


def probe_cores(duration_s=0.2, spinners=2):
    """Effective cores: `spinners` forked processes spin until a common deadline; returns their
    achieved CPU time / wall time (2.0 = two full cores available)."""
    t0 = time.perf_counter()
    deadline = time.monotonic() + duration_s
    pids = []
    for _ in range(spinners):
        pid = os.fork()
        if pid == 0:  # child: spin, then leave without running any parent cleanup
            try:
                while time.monotonic() < deadline:
                    pass
            finally:
                os._exit(0)
        pids.append(pid)
    cpu = 0.0
    for pid in pids:
        _, _, ru = os.wait4(pid, 0)
        cpu += ru.ru_utime + ru.ru_stime
    return cpu / (time.perf_counter() - t0)


def _tail(path, lines=15):
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in text[-lines:])


def _signame(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def parse_result(stdout_text):
    """The last `RESULT {...}` line as {"result": ..., "metrics": {...}}."""
    lines = [l for l in stdout_text.splitlines() if l.startswith("RESULT ")]
    if not lines:
        raise RunError("printed no 'RESULT {...}' line on stdout")
    try:
        doc = json.loads(lines[-1][len("RESULT "):])
    except json.JSONDecodeError as e:
        raise RunError(f"RESULT line is not valid JSON ({e}): {lines[-1][:200]}")
    if not isinstance(doc, dict) or "result" not in doc or not isinstance(doc.get("metrics"), dict):
        raise RunError(f"RESULT needs keys 'result' and 'metrics' (an object): {lines[-1][:200]}")
    metrics = doc["metrics"]
    bad = [k for k, v in metrics.items() if not isinstance(v, (int, float)) or isinstance(v, bool)]
    if bad:
        raise RunError(f"RESULT metrics must be numbers; not: {bad}")
    if "region_s" not in metrics:
        raise RunError("RESULT metrics lack 'region_s'")
    return doc


def run_once(launcher, cmd, env, timeout_s, log_prefix):
    """Runs `cmd` (cmd[0] an absolute path) to completion under `launcher` (spawn_rusage.c:
    fork, exec, wait4, report) in its own session, stdout/stderr to log_prefix.out/.err.
    Returns {wall_s, cpu_s, rss_mib, result, metrics}; raises RunError on a missing program,
    a timeout (the process group is killed), a non-zero exit or bad output."""
    out, err, rep = (Path(f"{log_prefix}.{ext}") for ext in ("out", "err", "rusage"))
    out.parent.mkdir(parents=True, exist_ok=True)
    rep.unlink(missing_ok=True)
    if not os.access(cmd[0], os.X_OK):
        raise RunError(f"program {cmd[0]} does not exist or is not executable (not built?)")
    wr = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(out), wr, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, str(err), wr, 0o644),
    ]
    argv = [str(launcher), str(rep), *cmd]
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
    waiter = threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True)
    waiter.start()
    try:
        waiter.join(timeout_s)
    except BaseException:  # Ctrl-C: do not leave the program running
        _kill_group(pid)
        waiter.join()
        raise
    if waiter.is_alive():
        _kill_group(pid)
        waiter.join()
        raise RunError(f"timed out after {timeout_s:.0f} s (killed); stderr tail:\n{_tail(err)}")

    try:
        wall, user, sys_, maxrss_kib, status = rep.read_text().split()
    except (OSError, ValueError):
        raise RunError(f"launcher failed, no resource report; stderr tail ({err}):\n{_tail(err)}")
    code = os.waitstatus_to_exitcode(int(status))
    if code != 0:
        how = f"killed by signal {_signame(-code)}" if code < 0 else f"exit code {code}"
        raise RunError(f"failed ({how}); stderr tail ({err}):\n{_tail(err)}")
    doc = parse_result(out.read_text(errors="replace"))
    return {
        "wall_s": float(wall),
        "cpu_s": float(user) + float(sys_),
        "rss_mib": int(maxrss_kib) / 1024.0,  # Linux reports KiB
        "result": doc["result"],
        "metrics": doc["metrics"],
    }
