#!/bin/bash
# Runs the given arms one after the other, same seed: each argument is <settle>-<tag>
# (false-1, true-1, ...), the experiment file $CFG-settle-<settle>.toml of this directory,
# results in $OUT/results-<argument>/ (default: /var/tmp/vacuum-settle), the log and the
# machine's load at each start and end here; $EXTRA is passed to compare (e.g. "--budget 5min").
# Run from the repository's root after `cargo build -p xtask`.
dir=$(dirname "$0")
out=${OUT:-/var/tmp/vacuum-settle}
mkdir -p "$out"
for v in "$@"; do
  st=${v%%-*}
  echo "=== $v start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  ./target/debug/xtask compare --config "$dir/${CFG:-pmem-vs-nvme-192}-settle-$st.toml" --emulate \
     --out "$out/results-$v" --seed 37 $EXTRA > "$dir/log-$v.txt" 2>&1
  rc=$?
  cp "$out/results-$v/runs.csv" "$dir/$v-runs.csv" 2>/dev/null
  echo "=== $v rc=$rc end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
