#!/usr/bin/env bash
# A promptlyd cluster on this machine (docs/cluster.md): N daemons on loopback
# ports chosen by the kernel, each with its HAProxy agent, behind HAProxy
# with the configuration haproxy_cfg.py writes. Runs until Ctrl-C or SIGTERM,
# then drains the daemons and stops HAProxy.
#
#   examples/cluster/cluster.sh N [PORT]     PORT: HAProxy's (default 8080)
# Environment: PROMPTLYD (default build/bin/promptlyd), WORKERS per daemon (default 1),
# PROMETHEUS_PORT (default 9090; Prometheus starts only if installed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: cluster.sh N [PORT]}
port=${2:-8080}
promptlyd=${PROMPTLYD:-$here/../../build/bin/promptlyd}
command -v haproxy >/dev/null || { echo "cluster.sh: haproxy is not installed (./run setup installs it)" >&2; exit 2; }
[ -x "$promptlyd" ] || { echo "cluster.sh: no $promptlyd (./run build)" >&2; exit 2; }

dir=$(mktemp -d /tmp/promptly-cluster-XXXXXX)
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$dir/token"
chmod 600 "$dir/token"
pids=()
stop() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 0' INT TERM

nodes=()
scrape=()
for i in $(seq 1 "$n"); do
  out=$dir/n$i.out
  "$promptlyd" --no-socket --tcp 127.0.0.1:0 --token-file "$dir/token" --http 127.0.0.1:0 --node-id "n$i" \
    --agent-port 0 --workers "${WORKERS:-1}" >"$out" 2>"$dir/n$i.err" &
  pids+=($!)
  for _ in $(seq 1 100); do grep -qx ready "$out" && break; sleep 0.1; done
  grep -qx ready "$out" || { echo "cluster.sh: node n$i did not start:" >&2; cat "$dir/n$i.err" >&2; exit 1; }
  http=$(sed -n 's|^listening http http://||p' "$out")
  agent=$(sed -n 's|^agent 127.0.0.1:||p' "$out")
  nodes+=("n$i=$http:$agent")
  scrape+=("n$i=$http")
  echo "node n$i: http://$http  agent :$agent  (pid ${pids[-1]})"
done
"$here/haproxy_cfg.py" --bind "127.0.0.1:$port" --stats-socket "$dir/haproxy.sock" "${nodes[@]}" >"$dir/haproxy.cfg"
haproxy -db -f "$dir/haproxy.cfg" &
pids+=($!)
"$here/prometheus_cfg.py" "${scrape[@]}" >"$dir/prometheus.yml"
if command -v prometheus >/dev/null; then
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/prometheus-data" \
    --web.listen-address="127.0.0.1:${PROMETHEUS_PORT:-9090}" >"$dir/prometheus.log" 2>&1 &
  pids+=($!)
  echo "prometheus: http://127.0.0.1:${PROMETHEUS_PORT:-9090}  (scrapes every node's /metrics)"
else
  echo "prometheus: not installed; scrape config at $dir/prometheus.yml (apt-get install prometheus, then prometheus --config.file=...)"
fi
echo "cluster: http://127.0.0.1:$port  token: $(cat "$dir/token")"
echo "  curl -H \"Authorization: Bearer \$(cat $dir/token)\" -d '{\"program\":\"fib\",\"args\":{\"n\":30},\"wait\":true}' http://127.0.0.1:$port/v1/jobs"
echo "  config: $dir/haproxy.cfg; Ctrl-C stops the cluster"
wait
