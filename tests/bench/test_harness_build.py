#!/usr/bin/env python3
"""bench/harness/build.py's Go specs, without compiling anything.

A suite may name a Go peer that is not a package under bench/go: the applications' Go servers
(go:email, go:proxy) live in apps/*/go and are built by the CMake targets their drivers depend
on. The harness used to run `go build ./email` in bench/go for them as well, and `./run bench
apps` failed before measuring anything ("stat .../bench/go/email: directory not found").
"""
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "harness"))
spec = importlib.util.spec_from_file_location("harness_build", ROOT / "bench" / "harness" / "build.py")
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)

failures = []

with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "build"
    (out / "go").mkdir(parents=True)
    # As email_server_go leaves it: the harness must take it as built.
    (out / "go" / "email").write_text("#!/bin/sh\n")
    try:
        build.build(["go:email"], ROOT, out)
    except build.BuildError as e:
        failures.append(f"go:email, built by CMake, was built again from bench/go: {e}")
    # Neither a bench/go package nor a CMake product: a clear error naming it.
    try:
        build.build(["go:no-such-peer"], ROOT, out)
        failures.append("go:no-such-peer raised nothing")
    except build.BuildError as e:
        if "go:no-such-peer" not in str(e):
            failures.append(f"the error does not name the spec: {e}")

for f in failures:
    print("FAIL:", f)
print("ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
