#!/bin/bash
# A `git bisect run` step, run in a worktree ($BISECT_TREE, default the current directory): builds
# that commit's email_server and email_driver and calls the commit good if the email server's
# resp p99 under aps, checker off (bench/apps/email_ab.sh), has a median of 3 runs below $LIMIT_US (1500).
here=$(cd "$(dirname "$0")/../../../apps" && pwd)  # bench/apps
tree=${BISECT_TREE:-$PWD}
cd "$tree" || exit 125
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1 || exit 125
cmake --build build -j2 --target email_server email_driver >/dev/null 2>&1 || exit 125
vals=()
for i in 1 2 3; do vals+=("$("$here/email_ab.sh" 1 x="$tree/build" | awk '{print $6}')"); done
med=$(printf "%s\n" "${vals[@]}" | sort -g | sed -n 2p)
echo "$(git rev-parse --short HEAD) ${vals[*]} median $med" >&2
python3 -c "import sys; sys.exit(0 if float('$med') < ${LIMIT_US:-1500} else 1)"
