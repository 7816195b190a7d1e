#!/bin/bash
# The A/B of README.md: ab.sh ROUNDS [BUILD_DIR] alternates, round by round, proxy-8 and email-36
# under aps with the servers' default idle timeouts ("on") and with --idle-timeout-ms 0 ("off",
# through wrapper scripts), printing "<app>-<on|off> <the driver's RESULT JSON>" per run.
# BUILD_DIR: a Release build with the apps (default: build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../../.." && pwd)
build=$(cd "$root" && cd "${2:-build}" && pwd)
wrappers=$(mktemp -d)
trap 'rm -rf "$wrappers"' EXIT
for app in proxy/proxy_server email/email_server; do
  printf '#!/bin/sh\nexec %s --idle-timeout-ms 0 "$@"\n' "$build/apps/$app" > "$wrappers/${app#*/}"
  chmod +x "$wrappers/${app#*/}"
done
for _ in $(seq "$1"); do
  for v in on off; do
    if [ $v = on ]; then dir=$build/apps; ps=$dir/proxy/proxy_server; es=$dir/email/email_server
    else ps=$wrappers/proxy_server; es=$wrappers/email_server; fi
    out=$("$build/apps/proxy/proxy_driver" --server "$ps" --policy aps --clients 8 --requests 1500 2>&1 | grep RESULT)
    echo "proxy-$v ${out#RESULT }"
    out=$("$build/apps/email/email_driver" --server "$es" --policy aps --clients 36 2>&1 | grep RESULT)
    echo "email-$v ${out#RESULT }"
  done
done
