#!/bin/bash
# Alternated A/B runs of the apps' drivers against server binaries built from different
# commits (copy each build's bench-bin/*_server or jserver aside first). One line per run:
# LABEL-LOAD then the driver's RESULT JSON; summarize with ../aps-variants/summarize.py.
#
#   ab.sh proxy|email|jserver OUT ROUNDS DRIVER label:binary:policy ...
#
# proxy: proxy_driver, 8 and 32 clients x 1500 requests after a warm-up round of 100.
# email: email_driver, 18 and 36 clients, 3 s measured after 0.5 s of warm-up.
# jserver: the binary is the job server itself (DRIVER is ignored), 70% and 95% load, 1.5 s.
set -euo pipefail
app=$1 out=$2 rounds=$3 driver=$4
shift 4
case $app in
  proxy) loads="8 32" ;;
  email) loads="18 36" ;;
  jserver) loads="70 95" ;;
  *) echo "ab.sh: the app must be proxy, email or jserver, not '$app'" >&2; exit 2 ;;
esac
for r in $(seq 1 "$rounds"); do
  for n in $loads; do
    for spec in "$@"; do
      IFS=: read -r label bin pol <<< "$spec"
      case $app in
        proxy) line=$("$driver" --server "$bin" --policy "$pol" --workers 2 --clients "$n" --requests 1500 --warmup 1 2>/dev/null | grep RESULT) ;;
        email) line=$("$driver" --server "$bin" --policy "$pol" --workers 2 --clients "$n" --measure-ms 3000 --warmup-ms 500 2>/dev/null | grep RESULT) ;;
        jserver) line=$("$bin" --policy "$pol" --workers 2 --load "$n" --duration-ms 1500 2>/dev/null | grep RESULT) ;;
      esac
      echo "$label-$n ${line#RESULT }" >> "$out"
    done
  done
done
