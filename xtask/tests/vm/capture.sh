# Guest side of vm_tool_outputs_are_read_by_the_parsers: the real output of the guest's tools
# (nvme-cli 2.3, ndctl 76, parted 3.5, util-linux 2.38, xfsprogs 6.1, Linux 6.1) on real
# (virtual) NVMe, NVDIMM, SCSI and RAID-like disks, written to /job/out/<name>.
. /job/lib.sh
set -x
c() { local name=$1; shift; "$@" > "$OUT/$name" 2> "$OUT/$name.stderr"; echo $? > "$OUT/$name.rc"; }

# ndctl 76
c ndctl-list-N-i.labels-uninitialised.json ndctl list -N -i
ndctl disable-region all; ndctl init-labels -f all; ndctl enable-region all
c ndctl-list-N-i.labelled-idle.json ndctl list -N -i
c ndctl-create-namespace.fsdax-named.json ndctl create-namespace -r region0 -m fsdax -n pgt-data
ndctl create-namespace -r region1 -m fsdax -n pgt-wal
c ndctl-list-N.two-fsdax.json ndctl list -N
ndctl disable-namespace namespace1.0
c ndctl-list-N.one-disabled.json ndctl list -N
c ndctl-list-N-i.one-disabled.json ndctl list -N -i
c ndctl-create-namespace-fe-fsdax.from-disabled.json ndctl create-namespace -f -e namespace1.0 -m fsdax
c ndctl-create-namespace-fe-devdax.json ndctl create-namespace -f -e namespace1.0 -m devdax
c ndctl-list-N-i.devdax.json ndctl list -N -i
ndctl create-namespace -f -e namespace1.0 -m fsdax >/dev/null

# XFS on PMem with the PMem options, DAX in effect; and with a 2 KiB block size (DAX refused)
c mkfs.xfs.pmem-su2m.txt mkfs.xfs -f -m reflink=0 -d su=2m,sw=1 -L pgt-data /dev/pmem0
mkdir -p /mnt/pm0 /mnt/pm1
mount -t xfs -o noatime,dax=always /dev/pmem0 /mnt/pm0
grep ' /mnt/pm0 ' /proc/mounts > "$OUT/proc-mounts.xfs-dax-always.pmem.txt"
echo probe > /mnt/pm0/f
c xfs_io-statx-r.dax.txt xfs_io -c 'statx -r' /mnt/pm0/f
c xfs_info.pmem-su2m.txt xfs_info /mnt/pm0
umount /mnt/pm0
c mkfs.xfs.pmem-bsize2k.txt mkfs.xfs -f -m reflink=0 -b size=2048 -L small /dev/pmem1
mount -t xfs -o dax=always /dev/pmem1 /mnt/pm1
grep ' /mnt/pm1 ' /proc/mounts > "$OUT/proc-mounts.xfs-dax-blocksize-fallback.pmem.txt"
umount /mnt/pm1
dmesg | grep -E 'XFS \(pmem[01]\)' > "$OUT/dmesg.xfs-dax.txt"

# nvme-cli 2.3 on PCIe drives and the kernel's NVMe/TCP target
c nvme-version.txt nvme version
c nvme-list-o-json.pcie.json nvme list -o json
c nvme-list-subsys-o-json.pcie.json nvme list-subsys -o json
c nvme-id-ctrl-o-json.qemu.json nvme id-ctrl -o json /dev/nvme0
nvmet_export pgt-capture "$(nvme_by_serial PGT-TGT0)" "$(nvme_by_serial PGT-TGT1)"
c nvme-connect-o-json.tcp.json nvme connect -t tcp -a 127.0.0.1 -s 4420 -n pgt-capture -o json
c nvme-connect.tcp.already-connected.txt nvme connect -t tcp -a 127.0.0.1 -s 4420 -n pgt-capture -o json
sleep 1; udevadm settle
c nvme-list-subsys-o-json.tcp.json nvme list-subsys -o json
c nvme-list-o-json.tcp.json nvme list -o json
c nvme-list-v-o-json.tcp.json nvme list -v -o json
ctrl=$(grep -l pgt-capture /sys/class/nvme/nvme*/subsysnqn | head -1 | cut -d/ -f5)
# The controller's active namespaces (Identify CNS 02h), plain and JSON; and how the kernel
# names namespace 1 (wwid, uuid, nguid: what a device's `uuid` key is checked against).
c nvme-list-ns.tcp.txt nvme list-ns "/dev/$ctrl"
c nvme-list-ns-o-json.tcp.json nvme list-ns "/dev/$ctrl" -o json
ns1=$(for d in /sys/class/block/nvme*n*; do
  case ${d##*/} in *c*) continue ;; esac  # nvmeXcYnZ: a path of a multipath namespace, hidden
  grep -qx pgt-capture "$d/device/subsysnqn" 2>/dev/null && [ "$(cat "$d/nsid" 2>/dev/null)" = 1 ] && basename "$d"
done | head -1)
c nvme-id-ns-o-json.tcp-ns1.json nvme id-ns "/dev/$ns1" -o json
for a in wwid uuid nguid nsid; do printf '%s ' "$a"; cat "/sys/class/block/$ns1/$a" 2>&1; done > "$OUT/sysfs-nvme-ns1-ids.tcp.txt"
c nvme-disconnect-d.tcp.txt nvme disconnect -d "$ctrl"
c nvme-disconnect-n.none.txt nvme disconnect -n pgt-capture
c nvme-disconnect-d.unknown.txt nvme disconnect -d nvme99
nvmet_remove pgt-capture

# parted 3.5 and udev: the partition nodes after mkpart
disk=$(readlink -f "$(nvme_by_serial PGT-DATA)")
udevadm monitor --kernel --subsystem-match=block > "$OUT/udevadm-monitor.parted-mkpart.txt" 2>&1 &
mon=$!
sleep 1
c parted-mklabel-mkpart.nvme.txt parted -s "$disk" mklabel gpt mkpart primary 2048s 100%
udevadm settle; sleep 1
kill $mon
c parted-machine-print.nvme-gpt.txt parted -s -m "$disk" unit B print
for f in logical_block_size physical_block_size minimum_io_size optimal_io_size; do
	echo "queue/$f $(cat /sys/block/vdb/queue/$f)"
done > "$OUT/raid-queue.txt"
echo "alignment_offset $(cat /sys/block/vdb/alignment_offset)" >> "$OUT/raid-queue.txt"
c parted-mkpart-2048s.raid.txt parted -s /dev/vdb mklabel gpt mkpart primary 2048s 100%
c parted-s-align-check-opt-1.raid-2048s.txt parted -s /dev/vdb align-check opt 1
c parted-align-check-opt-1.raid-2048s.txt parted /dev/vdb align-check opt 1
c parted-mkpart-6144s.raid.txt parted -s /dev/vdb mklabel gpt mkpart primary 6144s 100%
c parted-s-align-check-opt-1.raid-6144s.txt parted -s /dev/vdb align-check opt 1

# util-linux 2.38: blkid, wipefs, lsblk with udev; SCSI serial through VPD page 0x80
mkfs.xfs -q -f -L pgt-part "${disk}p1"
udevadm settle
c blkid-p-export.xfs-partition.txt blkid -p -o export "${disk}p1"
c blkid-p-export.gpt-disk.txt blkid -p -o export "$disk"
c blkid-p-export.empty.txt blkid -p -o export "$(readlink -f "$(nvme_by_serial PGT-SPARE0)")"
c wipefs-J-no-act.gpt-disk.json wipefs -J --no-act "$disk"
c lsblk-J-b-o.guest.json lsblk -J -b -o NAME,PATH,TYPE,SIZE,MODEL,SERIAL,REV,ROTA,FSTYPE,MOUNTPOINTS,DAX "$disk" /dev/sda /dev/pmem0
cp /sys/block/sda/device/vpd_pg80 "$OUT/sda.vpd_pg80.bin"
grep -E '^E:(ID_SERIAL|ID_SERIAL_SHORT|ID_SCSI_SERIAL|ID_MODEL)=' "/run/udev/data/b$(cat /sys/block/sda/dev)" > "$OUT/sda.udev-data.txt"
cat /sys/block/sda/device/model > "$OUT/sda.model.txt"
ls /sys/block/sda/device > "$OUT/sda.device-attributes.txt"
echo capture done
