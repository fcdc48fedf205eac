#!/bin/bash
# Runs the given arms one after the other, same seed: each argument is <prewarm>-<tag>
# (false-1, true-ro, ...), the experiment file $CFG-prewarm-<prewarm>.toml of this directory,
# results in results-<argument>/ here, the machine's load at each start and end.
# Run from the repository's root after `cargo build -p xtask`.
dir=$(dirname "$0")
for v in "$@"; do
  pw=${v%%-*}
  echo "=== $v start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  ./target/debug/xtask compare --config "$dir/${CFG:-pmem-vs-nvme-192}-prewarm-$pw.toml" --emulate \
     --out "$dir/results-$v" --seed 37 > "$dir/log-$v.txt" 2>&1
  echo "=== $v rc=$? end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
