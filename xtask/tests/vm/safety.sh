# Guest side of vm_safety_rails_refuse_on_real_devices: pgtier's real mode against devices that
# hold something, one experiment file per case; each must be refused with nothing changed.
. /job/lib.sh

# case NAME DEVICE-TOML-LINES: an experiment with the one device "d" (data and WAL).
case_file() {
	cat > "/tmp/$1.toml" <<TOML
[experiment]
name = "vm-safety-$1"
description = "safety rail: $1"
baseline = "p"
repetitions = 1

[postgres]
profiles = ["default"]

[[device]]
name = "d"
$2
mount_options = ["noatime"]

[[placement]]
name = "p"
data = "d"
wal = "d"

[[workload]]
name = "w"
kind = "pgbench"
builtin = "select-only"
scale = 1
clients = [1]
duration = "1s"
TOML
}

# refused NAME DEVICE-NODE DEVICE-TOML-LINES: runs the file for real; records the exit status,
# the output and the device's signatures and the machine's state before and after.
refused() {
	local name=$1 node=$2
	case_file "$name" "$3"
	state > "$OUT/$name.state-before"
	signature "$node" > "$OUT/$name.sig-before"
	"$XTASK" compare --config "/tmp/$name.toml" --out "$OUT/$name" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"
	echo $? > "$OUT/$name.rc"
	signature "$node" > "$OUT/$name.sig-after"
	state > "$OUT/$name.state-after"
}
nvme_dev() { readlink -f "$(nvme_by_serial "$1")"; }

# A mounted NVMe drive.
mkfs.xfs -q -f -L busy "$(nvme_dev PGT-SPARE0)"
mkdir -p /mnt/busy && mount "$(nvme_dev PGT-SPARE0)" /mnt/busy
refused mounted "$(nvme_dev PGT-SPARE0)" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-SPARE0)\""
umount /mnt/busy

# A drive holding a filesystem.
mkfs.ext4 -q -F -L precious "$(nvme_dev PGT-SPARE1)"
refused filesystem "$(nvme_dev PGT-SPARE1)" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-SPARE1)\""

# A member of an active md RAID-1, even with allow_wipe = true. What mdadm said is kept: a create
# that failed would leave nothing for pgtier to refuse (seen once, unexplained, 2026-12-06).
mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 --assume-clean \
	"$(nvme_dev PGT-DATA)" "$(nvme_dev PGT-WAL)" > "$OUT/md-create.txt" 2>&1
echo "exit $?" >> "$OUT/md-create.txt"
udevadm settle
cat /proc/mdstat >> "$OUT/md-create.txt" 2>&1
refused md-active "$(nvme_dev PGT-DATA)" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-DATA)\"
allow_wipe = true"
# The same member with the array stopped, without allow_wipe: its md signature refuses it.
mdadm --stop /dev/md0 > /dev/null 2>&1
udevadm settle
refused md-stopped "$(nvme_dev PGT-DATA)" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-DATA)\""

# An LVM physical volume with an active logical volume, even with allow_wipe = true; then with
# the volume group deactivated, without allow_wipe.
pvcreate -q "$(nvme_dev PGT-TGT0)" && vgcreate -q pgtvg "$(nvme_dev PGT-TGT0)" && lvcreate -q -n lv -L 64M pgtvg > /dev/null
udevadm settle
refused lvm-active "$(nvme_dev PGT-TGT0)" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-TGT0)\"
allow_wipe = true"
vgchange -q -an pgtvg > /dev/null
udevadm settle
refused lvm-inactive "$(nvme_dev PGT-TGT0)" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-TGT0)\""

# The guest's own system disk, even with allow_wipe = true; and its dry run, which touches
# nothing and prints the checks the real run makes.
refused system-disk /dev/vda "class = \"nvme\"
path = \"/dev/disk/by-id/virtio-PGT-SYSTEM\"
allow_wipe = true"
"$XTASK" compare --config /tmp/system-disk.toml --dry-run > "$OUT/system-disk.dry-run" 2>&1
echo $? > "$OUT/system-disk.dry-run.rc"

# A SCSI disk named with the wrong serial (its serial is only in VPD page 0x80 and udev); then
# with the right one, holding a filesystem: identity passes, the signature refuses.
refused sas-wrong-serial /dev/sda "class = \"nvme\"
path = \"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_PGT-SAS0\"
model = \"QEMU HARDDISK\"
serial = \"PGT-SAS9\""
mkfs.ext4 -q -F /dev/sda
refused sas-right-serial /dev/sda "class = \"nvme\"
path = \"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_PGT-SAS0\"
model = \"QEMU HARDDISK\"
serial = \"PGT-SAS0\""
# A drive a program holds open read-write (as a VM's raw disk, a target daemon or fio do),
# named with allow_wipe = true: the kernel's O_EXCL open and holders/ cannot see it; refused,
# the program named by PID, not one byte changed.
spare0=$(nvme_dev PGT-SPARE0)
md5sum < "$spare0" > "$OUT/held-open.md5-before"
sh -c 'exec 3<>"$1"; exec sleep 600' sh "$spare0" &
holder=$!
echo "$holder" > "$OUT/held-open.pid"
sleep 1
refused held-open "$spare0" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-SPARE0)\"
allow_wipe = true"
kill "$holder"; wait "$holder" 2>/dev/null
md5sum < "$spare0" > "$OUT/held-open.md5-after"

# A drive the guest's own nvmet exports (nvmet opens it without claiming it), allow_wipe = true.
spare1=$(nvme_dev PGT-SPARE1)
md5sum < "$spare1" > "$OUT/nvmet-exported.md5-before"
nvmet_export nqn.2014-08.org.example:pgt-safety-live "$spare1" > "$OUT/nvmet-export.txt" 2>&1
echo "exit $?" >> "$OUT/nvmet-export.txt"
refused nvmet-exported "$spare1" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-SPARE1)\"
allow_wipe = true"
nvmet_remove nqn.2014-08.org.example:pgt-safety-live
md5sum < "$spare1" > "$OUT/nvmet-exported.md5-after"

# A drive a LIO fileio backstore serves (opened without a claim, like nvmet), allow_wipe = true.
data=$(nvme_dev PGT-DATA)
lio=/sys/kernel/config/target/core/fileio_0/pgt-live
{ modprobe target_core_mod && modprobe target_core_file \
	&& mkdir -p "$lio" \
	&& echo "fd_dev_name=$data,fd_dev_size=$(blockdev --getsize64 "$data")" > "$lio/control" \
	&& echo 1 > "$lio/enable" && cat "$lio/info"; } > "$OUT/lio-export.txt" 2>&1
echo "exit $?" >> "$OUT/lio-export.txt"
refused lio-exported "$data" "class = \"nvme\"
path = \"$(nvme_by_serial PGT-DATA)\"
allow_wipe = true"
rmdir "$lio" && rmdir "${lio%/*}"
exit 0
