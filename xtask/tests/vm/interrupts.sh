# Guest side of vm_interrupted_real_runs_leave_nothing: a real-device run (NVMe, PMem,
# NVMe/TCP) stopped by Ctrl-C, then one killed with SIGKILL and cleaned up, then one whose
# teardown cannot unmount the NVMe/TCP filesystem (a process has its working directory there):
# that teardown must leave the connection for cleanup instead of pulling the device.
. /job/lib.sh
NQN=nqn.2026-12.io.pgtier:vm-interrupts
pmem_setup
state > "$OUT/state-initial.txt"
nvmet_export "$NQN" "$(nvme_by_serial PGT-TGT0)"
state > "$OUT/state-before.txt"
# Each run formats the devices again: allow_wipe, since the previous run left its XFS there.
cat > /tmp/long.toml <<TOML
[experiment]
name = "vm-interrupts"
description = "a long real-device run, interrupted"
device_probe = "0s"
baseline = "local"
repetitions = 3

[postgres]
profiles = ["default"]

[[device]]
name = "nvme-data"
class = "nvme"
path = "$(nvme_by_serial PGT-DATA)"
allow_wipe = true
mount_options = ["noatime"]

[[device]]
name = "pmem"
class = "pmem"
namespace = "namespace0.0"
allow_wipe = true
mount_options = ["noatime"]

[[device]]
name = "remote"
class = "nvme-tcp"
address = "127.0.0.1"
nqn = "$NQN"
partition = true
allow_wipe = true
mount_options = ["noatime"]

[[placement]]
name = "local"
data = "nvme-data"
wal = "pmem"

[[placement]]
name = "remote"
data = "remote"
wal = "remote"

[[workload]]
name = "w"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [1]
duration = "120s"
TOML

# start NAME: a run in the background; waits until its devices are mounted and a client runs.
start() {
	"$XTASK" compare --config /tmp/long.toml --out "$OUT/$1" > "$OUT/$1.stdout" 2> "$OUT/$1.stderr" &
	pid=$!
	for i in $(seq 1 1200); do
		grep -q '/mnt/remote ' /proc/mounts && pgrep -x pgbench > /dev/null && return 0
		kill -0 $pid 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}
finish() { wait $pid; echo $? > "$OUT/$1.rc"; }

# 1. Ctrl-C (SIGINT): teardown from the run record.
start sigint && echo started > "$OUT/sigint.started"
kill -INT $pid
finish sigint
state > "$OUT/state-after-sigint.txt"

# 2. SIGKILL: nothing runs teardown; cargo xtask cleanup does it from the run record.
start sigkill && echo started > "$OUT/sigkill.started"
kill -KILL $pid
finish sigkill
sleep 1
state > "$OUT/state-after-sigkill.txt"
"$XTASK" cleanup > "$OUT/cleanup-1.stdout" 2>&1
echo $? > "$OUT/cleanup-1.rc"
state > "$OUT/state-after-cleanup-1.txt"

# 3. A busy NVMe/TCP filesystem at teardown: a process sits in it.
start busy && echo started > "$OUT/busy.started"
remote_mnt=$(awk '$2 ~ /\/mnt\/remote$/ {print $2}' /proc/mounts)
( cd "$remote_mnt" && exec sleep 3600 ) &
squatter=$!
sleep 1
kill -INT $pid
finish busy
state > "$OUT/state-after-busy.txt"
kill $squatter
wait $squatter 2>/dev/null
"$XTASK" cleanup > "$OUT/cleanup-2.stdout" 2>&1
echo $? > "$OUT/cleanup-2.rc"
state > "$OUT/state-after-cleanup-2.txt"

nvmet_remove "$NQN"
state > "$OUT/state-final.txt"
exit 0
