# Guest side of vm_seed000_real_nvme_and_pmem.
. /job/lib.sh
pmem_setup
ndctl disable-namespace namespace1.0 >/dev/null
state > "$OUT/state-before.txt"
"$XTASK" compare --config /job/seed000.toml --dry-run > "$OUT/dry-run.txt" 2>&1
"$XTASK" compare --config /job/seed000.toml --out "$OUT/results" > "$OUT/compare.stdout" 2> "$OUT/compare.stderr"
echo $? > "$OUT/compare.rc"
state > "$OUT/state-after.txt"
exit 0
