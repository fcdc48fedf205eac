# Guest side of vm_seed003_nvme_tcp.
. /job/lib.sh
NQN=nqn.2026-12.io.pgtier:vm-target
export PGTIER_VM_DHCHAP='DHHC-1:00:cGd0aWVyLXZtLXRlc3Qta2V5LW5vdC1hLXNlY3JldA==:'
state > "$OUT/state-initial.txt"
nvmet_export "$NQN" "$(nvme_by_serial PGT-TGT0)" "$(nvme_by_serial PGT-TGT1)"
state > "$OUT/state-before.txt"
"$XTASK" compare --config /job/seed003.toml --dry-run > "$OUT/dry-run.txt" 2>&1
udevadm monitor --kernel --subsystem-match=block > "$OUT/udev-events.txt" 2>&1 &
mon=$!
# The key must never be on a command line: look at every process's while the run lasts.
( while :; do grep -l -a -F "$PGTIER_VM_DHCHAP" /proc/[0-9]*/cmdline 2>/dev/null; sleep 0.2; done ) > "$OUT/cmdline-leaks.txt" &
watch=$!
"$XTASK" compare --config /job/seed003.toml --out "$OUT/results" > "$OUT/compare.stdout" 2> "$OUT/compare.stderr"
echo $? > "$OUT/compare.rc"
kill $watch $mon
wait 2>/dev/null
state > "$OUT/state-after.txt"

# nvme-cli 2.3 takes the host's dhchap_key from a configuration laid out as pgtier writes it
# (--dump-config prints what it read); the connection is dropped again.
hostnqn=$(cat /etc/nvme/hostnqn) hostid=$(cat /etc/nvme/hostid)
umask 077
cat > /tmp/pgtier-like.json <<JSON
[{"hostnqn":"$hostnqn","hostid":"$hostid","dhchap_key":"$PGTIER_VM_DHCHAP","subsystems":[{"nqn":"$NQN","ports":[{"transport":"tcp","traddr":"127.0.0.1","trsvcid":"4420"}]}]}]
JSON
nvme connect --transport tcp --traddr 127.0.0.1 --trsvcid 4420 --nqn "$NQN" --hostnqn "$hostnqn" --hostid "$hostid" \
	--config /tmp/pgtier-like.json --output-format json --dump-config > "$OUT/nvme-connect-dump-config.json" 2>&1
nvme disconnect -n "$NQN" > /dev/null
rm -f /tmp/pgtier-like.json
nvmet_remove "$NQN"
state > "$OUT/state-final.txt"
exit 0
