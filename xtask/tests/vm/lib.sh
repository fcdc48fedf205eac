# Helpers for the guest side of pgtier's VM tests (xtask/tests/vm.rs), sourced by each test's
# script in the guest. The guest's hardware is described in xtask/src/vm/machine.rs.
set -u
export LC_ALL=C
XTASK=${PGTIER_XTASK:?PGTIER_XTASK names the pgtier binary}
OUT=/job/out
mkdir -p "$OUT"
# Kernel warnings reach the console too (the kernel boots "quiet"): a soft lockup's stack and
# registers, which the host's harness shows when it kills a guest whose kernel hung.
dmesg -n 5 2>/dev/null || true

nvme_by_serial() { echo "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_$1"; }

# Label areas initialised, then one named fsdax namespace per region: pgt-data on region0
# (namespace0.0) and pgt-wal on region1 (namespace1.0).
pmem_setup() {
	ndctl disable-region all >/dev/null
	ndctl init-labels -f all >/dev/null
	ndctl enable-region all >/dev/null
	ndctl create-namespace -r region0 -m fsdax -n pgt-data >/dev/null
	ndctl create-namespace -r region1 -m fsdax -n pgt-wal >/dev/null
}

# nvmet_export NQN DEVICE... : a subsystem with one namespace per device (NSID 1, 2, ...) on
# a TCP port at 127.0.0.1:4420, the guest's own NVMe/TCP target.
nvmet_export() {
	local nqn=$1; shift
	modprobe nvmet && modprobe nvmet-tcp && modprobe nvme-tcp || return 1
	local c=/sys/kernel/config/nvmet i=1
	local s=$c/subsystems/$nqn
	mkdir "$s" && echo 1 > "$s/attr_allow_any_host"
	for dev in "$@"; do
		mkdir "$s/namespaces/$i"
		readlink -f "$dev" > "$s/namespaces/$i/device_path"
		echo 1 > "$s/namespaces/$i/enable"
		i=$((i + 1))
	done
	if [ ! -d "$c/ports/1" ]; then
		mkdir "$c/ports/1"
		echo tcp > "$c/ports/1/addr_trtype"
		echo ipv4 > "$c/ports/1/addr_adrfam"
		echo 127.0.0.1 > "$c/ports/1/addr_traddr"
		echo 4420 > "$c/ports/1/addr_trsvcid"
	fi
	ln -s "$s" "$c/ports/1/subsystems/$nqn"
}

# Removes what nvmet_export made (after every initiator let go).
nvmet_remove() {
	local nqn=$1 c=/sys/kernel/config/nvmet
	rm -f "$c/ports/1/subsystems/$nqn"
	for ns in "$c/subsystems/$nqn"/namespaces/*; do
		[ -d "$ns" ] || continue
		echo 0 > "$ns/enable"
		rmdir "$ns"
	done
	rmdir "$c/subsystems/$nqn"
	if [ -d "$c/ports/1" ] && [ -z "$(ls "$c/ports/1/subsystems")" ]; then rmdir "$c/ports/1"; fi
}

# What a run must leave as it found it: mounts, NVMe controllers and subsystems, PMem
# namespaces, nvmet's configuration, md arrays, device-mapper devices, block devices and
# partitions, pgtier's unfinished run records and work directories, its processes.
state() {
	echo "## mounts"; awk '$3 != "9p" {print $1, $2, $3}' /proc/mounts | sort
	echo "## nvme list-subsys"; nvme list-subsys -o json 2>&1 | grep -E '"(NQN|Name|Transport|State)"' | sort
	echo "## ndctl"; ndctl list -N -i 2>&1 | grep -E '"(dev|mode|blockdev|chardev|state|name)"' | sort
	echo "## nvmet"; find /sys/kernel/config/nvmet -mindepth 2 2>/dev/null | sort
	echo "## lio"; find /sys/kernel/config/target/core -mindepth 2 -maxdepth 2 2>/dev/null | sort
	echo "## md"; cat /proc/mdstat 2>/dev/null | grep '^md' || true
	echo "## dm"; dmsetup ls 2>/dev/null | sort
	echo "## block"; ls /sys/class/block | sort
	echo "## journals"; ls /var/lib/pgtier/journal 2>/dev/null | grep -v '\.closed\.jsonl$' || true
	echo "## work"; ls /var/lib/pgtier/work 2>/dev/null || true
	echo "## processes"; ps -eo comm= | grep -E '^(postgres|pgbench|xtask|nbdkit|fio)$' | sort | uniq -c || true
}

# Signatures on a device, for "nothing changed" checks.
signature() { blkid -p -o export "$1" 2>/dev/null | grep -E '^(TYPE|PTTYPE|UUID|PTUUID)=' | sort; }
