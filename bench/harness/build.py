"""Building the programs a suite names: CMake targets (the top-level project with
PROMPTLY_BUILD_BENCH=ON), Go packages under bench/go, Cargo binaries under bench/rust.

exe specs: "cmake:TARGET" -> BUILD/bench-bin/TARGET, "go:PKG" -> BUILD/go/PKG,
"cargo:BIN" -> BUILD/rust/release/BIN."""

import re
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


class BuildError(Exception):
    pass


def exe_path(spec, build_dir):
    kind, _, name = spec.partition(":")
    return {
        "cmake": Path(build_dir) / "bench-bin" / name,
        "go": Path(build_dir) / "go" / name,
        "cargo": Path(build_dir) / "rust" / "release" / name,
    }[kind]


def _run(cmd, log, what, cwd=None):
    """Runs a build command with its output in `log`; on failure raises with the log's tail."""
    log.parent.mkdir(parents=True, exist_ok=True)
    tool = cmd[0]
    if shutil.which(tool) is None:
        raise BuildError(f"{what}: '{tool}' is not on PATH (./run setup installs the toolchains)")
    t0 = time.monotonic()
    print(f"build: {what} ...", file=sys.stderr, flush=True)
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(map(str, cmd))}\n")
        f.flush()
        rc = subprocess.call([str(c) for c in cmd], cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
    if rc != 0:
        tail = "".join(open(log, errors="replace").readlines()[-40:])
        raise BuildError(f"{what} failed (exit {rc}); last lines of {log}:\n{tail}")
    print(f"build: {what} done in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)


def _cmake_source(root, build_dir, standalone=False):
    """The top-level project if it exists (and not `standalone`), else bench/ alone (peers only,
    or Promptly's programs too against an installed Promptly). A build dir configured from the
    other source is reset, since CMake refuses to switch sources."""
    src = Path(root)
    if standalone:
        src = Path(root) / "bench"
    elif not (src / "CMakeLists.txt").is_file():
        src = Path(root) / "bench"
        print("build: warning: no top-level CMakeLists.txt; configuring bench/ standalone "
              "(Promptly programs need the top-level project)", file=sys.stderr)
    cache = Path(build_dir) / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:") and Path(line.split("=", 1)[1]) != src.resolve():
                cache.unlink()
                shutil.rmtree(Path(build_dir) / "CMakeFiles", ignore_errors=True)
    return src


def launcher(build_dir):
    """Compiles spawn_rusage.c (see its header: why the harness needs it) if it is missing or
    older than its source; returns its path. Static if the C library allows it (smaller RSS)."""
    src = Path(__file__).resolve().parent / "spawn_rusage.c"
    exe = Path(build_dir) / "spawn_rusage"
    if exe.is_file() and exe.stat().st_mtime >= src.stat().st_mtime:
        return exe
    exe.parent.mkdir(parents=True, exist_ok=True)
    for extra in (["-static"], []):
        cmd = ["cc", "-O2", *extra, "-o", str(exe), str(src)]
        try:
            if subprocess.run(cmd, capture_output=True).returncode == 0:
                return exe
        except OSError as e:
            raise BuildError(f"cannot compile {src.name}: {e} (a C compiler 'cc' is needed)")
    raise BuildError(f"cannot compile {src}: {' '.join(cmd)} failed")


def build(specs, root, build_dir, promptly_prefix=None):
    """Builds every exe spec in `specs`; returns {spec: path}. With `promptly_prefix` (a
    directory Promptly is installed in) the C++ programs link that installation: the test
    pipeline's smoke run reuses the runtime its Release build compiled."""
    root, build_dir = Path(root), Path(build_dir)
    log = build_dir / "logs" / "build.log"
    if log.exists():
        log.unlink()
    jobs = str(os.cpu_count() or 2)
    by_kind = {}
    for s in sorted(set(specs)):
        kind, _, name = s.partition(":")
        by_kind.setdefault(kind, []).append(name)

    if targets := by_kind.get("cmake"):
        if promptly_prefix:
            prefix = Path(promptly_prefix).resolve()
            if not (prefix / "lib" / "cmake" / "promptly").is_dir():
                raise BuildError(f"--promptly-prefix {promptly_prefix}: no installed Promptly there "
                                 f"(expected {prefix}/lib/cmake/promptly; cmake --install build --prefix DIR)")
            src = _cmake_source(root, build_dir, standalone=True)
            _run(["cmake", "-S", src, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                  f"-DCMAKE_PREFIX_PATH={prefix}"], log, "cmake configure (installed Promptly)")
        else:
            src = _cmake_source(root, build_dir)
            # Tests and examples are not needed here: leaving them out keeps this build small.
            _run(["cmake", "-S", src, "-B", build_dir, "-DPROMPTLY_BUILD_BENCH=ON",
                  "-DCMAKE_BUILD_TYPE=Release", "-DPROMPTLY_BUILD_TESTS=OFF",
                  "-DPROMPTLY_BUILD_EXAMPLES=OFF"], log, "cmake configure")
        _run(["cmake", "--build", build_dir, "-j", jobs, "--target", *targets], log,
             f"cmake targets {' '.join(targets)}")
    if pkgs := by_kind.get("go"):
        for p in pkgs:
            if not (root / "bench" / "go" / p).is_dir():
                # The applications' Go peers (apps/*/go: go:email, go:proxy) are CMake targets
                # their drivers depend on (email_server_go, proxy_server_go), built above.
                if not (build_dir / "go" / p).is_file():
                    raise BuildError(f"go:{p}: no package bench/go/{p}, and no {build_dir / 'go' / p} "
                                     f"built by a CMake target (is Go installed? ./run setup)")
                continue
            _run(["go", "build", "-o", (build_dir / "go" / p).resolve(), f"./{p}"], log,
                 f"go {p}", cwd=root / "bench" / "go")
    if bins := by_kind.get("cargo"):
        manifest = root / "bench" / "rust" / "Cargo.toml"
        cmd = ["cargo", "build", "--release", "--manifest-path", manifest,
               "--target-dir", build_dir / "rust", "-j", jobs]
        if (manifest.parent / "Cargo.lock").is_file():
            cmd.append("--locked")
        for b in bins:
            cmd += ["--bin", b]
        # A binary with heavy dependencies of its own has them behind the feature `bin-NAME`
        # (bench/rust/Cargo.toml), so that building the others does not compile them.
        features = [f"bin-{b}" for b in bins if re.search(rf"^bin-{re.escape(b)}\s*=", manifest.read_text(), re.M)]
        if features:
            cmd += ["--features", ",".join(features)]
        _run(cmd, log, f"cargo {' '.join(bins)}")

    paths = {s: exe_path(s, build_dir) for s in specs}
    for s, p in paths.items():
        if not p.is_file():
            raise BuildError(f"{s}: build finished but {p} does not exist")
    return paths
