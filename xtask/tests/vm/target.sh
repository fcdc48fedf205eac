# Guest side of the target-host VM tests (vm_target_host_*): the guest is its own storage target
# host, reached over ssh at 127.0.0.1 (its own sshd, with a key made here). pgtier exports the
# NVMe drive PGT-TGT0 through nvmet-tcp there and connects to it as the initiator. Another
# owner's nvmet configuration is there first (a subsystem with a namespace on PGT-TGT1, an
# allowed host, a port on 4421): it must survive every run untouched. /job/mode says which cases
# run: "quick" (a run, a run whose subsystem name another owner took, one exporting the drive
# the other owner exports) or "full" (also a run whose umount fails at teardown: the export must
# stay under the mounted filesystem; and a drive mounted in another mount namespace only).
. /job/lib.sh
MODE=$(cat /job/mode)
C=/sys/kernel/config/nvmet
OURS=nqn.2026-12.io.pgtier:self:remote
OTHER=nqn.2014-08.org.example:other-owner
OTHER_HOST=nqn.2014-08.org.example:other-initiator

# sshd on 127.0.0.1, root by key only; known_hosts names its key.
mkdir -p /tmp/keys /run/sshd
ssh-keygen -q -t ed25519 -N "" -f /tmp/keys/host_ed25519
ssh-keygen -q -t ed25519 -N "" -f /tmp/keys/id_ed25519
cp /tmp/keys/id_ed25519.pub /tmp/keys/authorized_keys
echo "127.0.0.1 $(cut -d' ' -f1,2 /tmp/keys/host_ed25519.pub)" > /tmp/keys/known_hosts
cat > /tmp/keys/sshd_config <<CONF
ListenAddress 127.0.0.1:22
HostKey /tmp/keys/host_ed25519
AuthorizedKeysFile /tmp/keys/authorized_keys
PidFile /tmp/keys/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 50
CONF
/usr/sbin/sshd -f /tmp/keys/sshd_config -E /tmp/keys/sshd.log || { cat /tmp/keys/sshd.log; exit 1; }

# The initiator's transport (a machine that uses NVMe/TCP has it loaded).
modprobe nvme-tcp

state > "$OUT/state-initial.txt"
# Another owner's configuration.
modprobe nvmet && modprobe nvmet-tcp
mkdir "$C/hosts/$OTHER_HOST"
mkdir "$C/subsystems/$OTHER"
echo 0 > "$C/subsystems/$OTHER/attr_allow_any_host"
ln -s "$C/hosts/$OTHER_HOST" "$C/subsystems/$OTHER/allowed_hosts/$OTHER_HOST"
mkdir "$C/subsystems/$OTHER/namespaces/1"
readlink -f "$(nvme_by_serial PGT-TGT1)" > "$C/subsystems/$OTHER/namespaces/1/device_path"
echo 1 > "$C/subsystems/$OTHER/namespaces/1/enable"
mkdir "$C/ports/7"
echo tcp > "$C/ports/7/addr_trtype"
echo ipv4 > "$C/ports/7/addr_adrfam"
echo 127.0.0.1 > "$C/ports/7/addr_traddr"
echo 4421 > "$C/ports/7/addr_trsvcid"
ln -s "$C/subsystems/$OTHER" "$C/ports/7/subsystems/$OTHER"
state > "$OUT/state-before.txt"

"$XTASK" compare --config /job/target.toml --dry-run > "$OUT/dry-run.txt" 2>&1
echo $? > "$OUT/dry-run.rc"

# 1. A run: export, connect, pgbench, teardown.
"$XTASK" compare --config /job/target.toml --out "$OUT/results" > "$OUT/run.stdout" 2> "$OUT/run.stderr"
echo $? > "$OUT/run.rc"
state > "$OUT/state-after-run.txt"

# 1c. Data and WAL on two ports of the host (127.0.0.1:4422 and 127.0.0.2:4423, as two NICs
# would be), each admitting its own host NQN: every check there runs before the run makes
# anything there, so neither meets the other's port or hosts/ entry; both torn down.
"$XTASK" compare --config /job/two-ports.toml --out "$OUT/two-ports" > "$OUT/two-ports.stdout" 2> "$OUT/two-ports.stderr"
echo $? > "$OUT/two-ports.rc"
state > "$OUT/state-after-two-ports.txt"
wipefs -q -a "$(readlink -f "$(nvme_by_serial PGT-SPARE0)")"

# 1b. The same export with DH-HMAC-CHAP: pgtier writes the key into nvmet's hosts/ entry for
# this machine's host NQN there, and connects with it; the key is on no command line.
nvme gen-dhchap-key > /tmp/keys/dhchap 2> "$OUT/gen-dhchap-key.stderr"
KEY=$(cat /tmp/keys/dhchap)
sed "s|^export = \(.*\)$|export = \1\ndhchap_secret_file = \"/tmp/keys/dhchap\"|" /job/target.toml > /tmp/keyed.toml
( while :; do grep -l -a -F "$KEY" /proc/[0-9]*/cmdline 2>/dev/null; sleep 0.2; done ) > "$OUT/keyed.cmdline-leaks" &
watch=$!
"$XTASK" compare --config /tmp/keyed.toml --out "$OUT/keyed" > "$OUT/keyed.stdout" 2> "$OUT/keyed.stderr"
echo $? > "$OUT/keyed.rc"
kill $watch; wait $watch 2>/dev/null
state > "$OUT/state-after-keyed.txt"
grep -r -l -F "$KEY" "$OUT/keyed" /var/lib/pgtier > "$OUT/keyed.file-leaks" 2>/dev/null
dmesg | grep -i -E 'nvmet?(_auth|-auth)?:.*(auth|dhchap|authenticat)' > "$OUT/keyed.dmesg" 2>&1

# 2. Another owner took the subsystem's name (an idle subsystem): the run stops at its mkdir and
# teardown leaves that subsystem alone.
mkdir "$C/subsystems/$OURS"
state > "$OUT/state-before-taken.txt"
"$XTASK" compare --config /job/target.toml --out "$OUT/taken" > "$OUT/taken.stdout" 2> "$OUT/taken.stderr"
echo $? > "$OUT/taken.rc"
state > "$OUT/state-after-taken.txt"
rmdir "$C/subsystems/$OURS"

# 3. The drive another owner's namespace exports (nvmet holds it without claiming it, so only
# nvmet's own configuration tells): refused on the host before anything is made.
sed 's|PGT-TGT0|PGT-TGT1|' /job/target.toml > /tmp/exported.toml
"$XTASK" compare --config /tmp/exported.toml --out "$OUT/exported" > "$OUT/exported.stdout" 2> "$OUT/exported.stderr"
echo $? > "$OUT/exported.rc"
state > "$OUT/state-after-exported.txt"

# 3b. Another owner's subsystem with two namespaces (PGT-SPARE0 and PGT-SPARE1, each holding an
# ext4 filesystem), reached directly (no target host), named by a device without `nsid` and with
# allow_wipe = true: refused once connected (which namespace is meant, the file does not say),
# nothing written on either namespace, the connection undone.
TWO=nqn.2014-08.org.example:two-namespaces
for serial in PGT-SPARE0 PGT-SPARE1; do mkfs.ext4 -q -F -L "$serial" "$(readlink -f "$(nvme_by_serial "$serial")")"; done
mkdir "$C/subsystems/$TWO"
echo 1 > "$C/subsystems/$TWO/attr_allow_any_host"
i=1
for serial in PGT-SPARE0 PGT-SPARE1; do
	mkdir "$C/subsystems/$TWO/namespaces/$i"
	readlink -f "$(nvme_by_serial "$serial")" > "$C/subsystems/$TWO/namespaces/$i/device_path"
	echo 1 > "$C/subsystems/$TWO/namespaces/$i/enable"
	i=$((i + 1))
done
ln -s "$C/subsystems/$TWO" "$C/ports/7/subsystems/$TWO"
sed -e '/^target = /d' -e '/^export = /d' -e '/^\[\[host\]\]/,$d' \
	-e "s|^class = \"nvme-tcp\"|class = \"nvme-tcp\"\naddress = \"127.0.0.1\"\nport = 4421\nnqn = \"$TWO\"|" \
	/job/target.toml > /tmp/two-namespaces.toml
for serial in PGT-SPARE0 PGT-SPARE1; do signature "$(readlink -f "$(nvme_by_serial "$serial")")"; done > "$OUT/two-namespaces.sig-before"
state > "$OUT/state-before-two-namespaces.txt"
"$XTASK" compare --config /tmp/two-namespaces.toml --out "$OUT/two-namespaces" > "$OUT/two-namespaces.stdout" 2> "$OUT/two-namespaces.stderr"
echo $? > "$OUT/two-namespaces.rc"
state > "$OUT/state-after-two-namespaces.txt"
for serial in PGT-SPARE0 PGT-SPARE1; do signature "$(readlink -f "$(nvme_by_serial "$serial")")"; done > "$OUT/two-namespaces.sig-after"
cp /tmp/two-namespaces.toml "$OUT/two-namespaces.toml"
rm -f "$C/ports/7/subsystems/$TWO"
for ns in 1 2; do echo 0 > "$C/subsystems/$TWO/namespaces/$ns/enable"; rmdir "$C/subsystems/$TWO/namespaces/$ns"; done
rmdir "$C/subsystems/$TWO"
for serial in PGT-SPARE0 PGT-SPARE1; do wipefs -q -a "$(readlink -f "$(nvme_by_serial "$serial")")"; done

# 3c. Another owner exports a partition of the drive this file exports whole (nvmet holds it
# without claiming it, and the exact node differs): refused on the host, nothing made.
tgt0=$(readlink -f "$(nvme_by_serial PGT-TGT0)")
parted -s "$tgt0" mklabel gpt mkpart primary 2048s 100% && udevadm settle
PART=nqn.2014-08.org.example:a-partition
mkdir "$C/subsystems/$PART"
mkdir "$C/subsystems/$PART/namespaces/1"
echo "${tgt0}p1" > "$C/subsystems/$PART/namespaces/1/device_path"
echo 1 > "$C/subsystems/$PART/namespaces/1/enable"
state > "$OUT/state-before-partition.txt"
"$XTASK" compare --config /job/target.toml --out "$OUT/partition" > "$OUT/partition.stdout" 2> "$OUT/partition.stderr"
echo $? > "$OUT/partition.rc"
state > "$OUT/state-after-partition.txt"
echo 0 > "$C/subsystems/$PART/namespaces/1/enable"
rmdir "$C/subsystems/$PART/namespaces/1"
rmdir "$C/subsystems/$PART"
wipefs -q -a "${tgt0}p1" "$tgt0" && udevadm settle

# 4. The filesystem cannot be unmounted at teardown (a process has its working directory
# there): the connection and the export stay; cleanup finishes once it is free.
if [ "$MODE" = full ]; then
	"$XTASK" compare --config /job/target.toml --out "$OUT/busy" > "$OUT/busy.stdout" 2> "$OUT/busy.stderr" &
	pid=$!
	squatter=
	for i in $(seq 1 1200); do
		mnt=$(awk '$2 ~ /\/mnt\/remote$/ {print $2}' /proc/mounts)
		if [ -n "$mnt" ] && pgrep -x pgbench > /dev/null; then
			( cd "$mnt" && exec sleep 3600 ) &
			squatter=$!
			echo started > "$OUT/busy.started"
			break
		fi
		kill -0 $pid 2>/dev/null || break
		sleep 0.5
	done
	wait $pid
	echo $? > "$OUT/busy.rc"
	state > "$OUT/state-after-busy.txt"
	ls /var/lib/pgtier/journal | grep -v '\.closed\.jsonl$' | while read -r j; do cat "/var/lib/pgtier/journal/$j"; done > "$OUT/busy-journal.jsonl"
	[ -n "$squatter" ] && kill $squatter
	wait 2>/dev/null
	"$XTASK" cleanup > "$OUT/cleanup.stdout" 2>&1
	echo $? > "$OUT/cleanup.rc"
	state > "$OUT/state-after-cleanup.txt"

	# 5. A drive mounted in another mount namespace only: /proc/self/mountinfo of the ssh
	# session does not show it, the O_EXCL open does (EBUSY).
	spare=$(readlink -f "$(nvme_by_serial PGT-SPARE0)")
	mkfs.xfs -q -f "$spare"
	mkdir -p /tmp/elsewhere
	unshare -m --propagation private sh -c "mount $spare /tmp/elsewhere && echo mounted > $OUT/elsewhere.mounted && exec sleep 3600" &
	hidden=$!
	for i in $(seq 1 100); do [ -f "$OUT/elsewhere.mounted" ] && break; sleep 0.2; done
	sed 's|PGT-TGT0|PGT-SPARE0|' /job/target.toml > /tmp/elsewhere.toml
	state > "$OUT/state-before-elsewhere.txt"
	"$XTASK" compare --config /tmp/elsewhere.toml --out "$OUT/elsewhere" > "$OUT/elsewhere.stdout" 2> "$OUT/elsewhere.stderr"
	echo $? > "$OUT/elsewhere.rc"
	state > "$OUT/state-after-elsewhere.txt"
	kill $hidden
	wait 2>/dev/null
	wipefs -q -a "$spare"
fi

# The other owner's configuration goes again.
rm -f "$C/ports/7/subsystems/$OTHER"
rmdir "$C/ports/7"
echo 0 > "$C/subsystems/$OTHER/namespaces/1/enable"
rmdir "$C/subsystems/$OTHER/namespaces/1"
rm -f "$C/subsystems/$OTHER/allowed_hosts/$OTHER_HOST"
rmdir "$C/subsystems/$OTHER"
rmdir "$C/hosts/$OTHER_HOST"
kill "$(cat /tmp/keys/sshd.pid)"
state > "$OUT/state-final.txt"
exit 0
