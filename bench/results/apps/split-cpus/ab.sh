#!/bin/bash
# The runs of README.md: ab.sh ROUNDS [BUILD_DIR] alternates, round by round, the email server
# under aps and oblivious in three setups, printing "<policy>-<setup> <the driver's RESULT JSON>":
#   shared-36: 36 clients, the driver and the server sharing both CPUs (the suite's email-36);
#   split-36:  36 clients, the server pinned to CPU 0 (so 1 worker), the driver to CPU 1;
#   split-18:  18 clients, the same split (the per-core load of shared-36).
# BUILD_DIR: a Release build with the apps (default: build). Needs 2 CPUs, numbered 0 and 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../../.." && pwd)
build=$(cd "$root" && cd "${2:-build}" && pwd)
wrapper=$(mktemp -d)
trap 'rm -rf "$wrapper"' EXIT
printf '#!/bin/sh\nexec taskset -c 0 %s "$@"\n' "$build/apps/email/email_server" > "$wrapper/email_server_cpu0"
chmod +x "$wrapper/email_server_cpu0"
driver=$build/apps/email/email_driver
for _ in $(seq "$1"); do
  for policy in aps oblivious; do
    out=$("$driver" --server "$build/apps/email/email_server" --policy $policy --clients 36 2>&1 | grep RESULT)
    echo "$policy-shared-36 ${out#RESULT }"
    for clients in 36 18; do
      out=$(taskset -c 1 "$driver" --server "$wrapper/email_server_cpu0" --policy $policy --clients $clients 2>&1 | grep RESULT)
      echo "$policy-split-$clients ${out#RESULT }"
    done
  done
done
