//! Who uses a block device without the kernel claiming it. The O_EXCL open and `holders/` see
//! mounts, swap, LVM, md and device-mapper; they do not see a program that opened the disk
//! normally (qemu's raw disk, tgtd, SPDK's aio bdev, fio, Ceph BlueStore's `O_DIRECT` open and
//! flock), nor the kernel's own exporters, which open a disk without a holder: nvmet, LIO and
//! loop devices. Three probes, each one definition run the same way on this machine and on a
//! target host (through [`System::run`], which a host wraps in ssh):
//!
//! - [`OPENERS`]: every process with the device open or mapped, by device number (a `stat` of
//!   `/proc/<pid>/fd/*` and `/proc/<pid>/map_files/*`, so a node of any name, in any mount
//!   namespace, is seen), with its command and access mode;
//! - [`KERNEL_USERS`]: nvmet namespaces and passthru subsystems, LIO backstores and loop devices
//!   whose backing file is the device, its disk or a partition of it;
//! - a non-blocking exclusive `flock` ([`System::flock_free`]): a lock held through a
//!   descriptor the scan cannot see.
//!
//! [`System::run`]: crate::system::System::run
//! [`System::flock_free`]: crate::system::System::flock_free

use std::time::Duration;

use journal::{CommandError, CommandLine, Output};

/// A process that has a device open or mapped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opener {
    pub pid: u32,
    /// Its command (`/proc/<pid>/comm`).
    pub command: String,
    /// The device number it has open, `MAJ:MIN`.
    pub device: (u32, u32),
    /// How: `open read-write (fd 3, /dev/nvme0n1)`, `mapped (/dev/sdb)`.
    pub how: String,
}

impl std::fmt::Display for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PID {} ({}) has it {}", self.pid, self.command, self.how)
    }
}

/// Prints one line per (process, descriptor or mapping) whose file is one of the block devices
/// given as `MAJ:MIN` arguments: `pid<TAB>command<TAB>MAJ:MIN<TAB>how`. A file is compared by
/// `stat` through `/proc` (the device number, whatever its node's name or mount namespace);
/// mappings through `map_files` (needs root), else the path `maps` shows. Its own process and
/// its parent (pgtier, which holds a disk's lock while it partitions and formats it; over ssh,
/// the session's shell) are left out; processes that exit during the scan are skipped. Exit 0, or 2 when /proc cannot be
/// read. perl-base is essential on Debian and Ubuntu.
pub const OPENERS: &str = r#"use strict; use warnings;
my %want = map { $_ => 1 } @ARGV;
sub num { my $r = shift;
  my $maj = (($r >> 8) & 0xfff) | (($r >> 32) & 0xfffff000);
  my $min = ($r & 0xff) | (($r >> 12) & 0xffffff00);
  return "$maj:$min"; }
sub hit { my @s = stat($_[0]); return undef unless @s && -b _; my $k = num($s[6]); return $want{$k} ? $k : undef; }
opendir(my $proc, "/proc") or do { print STDERR "/proc: $!\n"; exit 2 };
for my $pid (sort { $a <=> $b } grep { /^\d+$/ } readdir $proc) {
  next if $pid == $$ || $pid == getppid();
  my $comm = "?";
  if (open my $c, "<", "/proc/$pid/comm") { $comm = <$c> // "?"; chomp $comm; close $c }
  if (opendir my $fds, "/proc/$pid/fd") {
    for my $fd (sort { $a <=> $b } grep { /^\d+$/ } readdir $fds) {
      my $t = readlink("/proc/$pid/fd/$fd");
      next unless defined $t && $t =~ m{^/};
      my $k = hit("/proc/$pid/fd/$fd") or next;
      my $mode = "open";
      if (open my $i, "<", "/proc/$pid/fdinfo/$fd") {
        while (<$i>) { if (/^flags:\s+([0-7]+)/) { my $a = oct($1) & 3;
          $mode = $a == 0 ? "open read-only" : $a == 1 ? "open write-only" : "open read-write" } }
        close $i }
      print "$pid\t$comm\t$k\t$mode (fd $fd, $t)\n";
    }
    closedir $fds;
  }
  if (open my $m, "<", "/proc/$pid/maps") {
    my %seen;
    while (my $l = <$m>) {
      chomp $l; my @f = split " ", $l, 6;
      next unless @f == 6 && $f[4] ne "0" && !$seen{"$f[3] $f[4]"}++;
      my $k = hit("/proc/$pid/map_files/$f[0]") // hit($f[5]);
      print "$pid\t$comm\t$k\tmapped ($f[5])\n" if defined $k;
    }
    close $m;
  }
}
exit 0"#;

/// The command that runs [`OPENERS`] for `devices`.
pub fn openers_command(devices: &[(u32, u32)]) -> CommandLine {
    CommandLine::new("perl")
        .args(["-e", OPENERS, "--"])
        .args(devices.iter().map(|(a, b)| format!("{a}:{b}")).collect::<Vec<_>>())
}

/// [`OPENERS`]'s output as openers; lines it cannot read are an error (the caller refuses).
pub fn parse_openers(stdout: &str) -> Result<Vec<Opener>, String> {
    let mut out = Vec::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        let parsed = (|| {
            let pid = f.first()?.parse().ok()?;
            let (a, b) = f.get(2)?.split_once(':')?;
            Some(Opener {
                pid,
                command: f.get(1)?.to_string(),
                device: (a.parse().ok()?, b.parse().ok()?),
                how: f.get(3)?.to_string(),
            })
        })();
        out.push(parsed.ok_or_else(|| format!("unexpected line from the scan of /proc: {line:?}"))?);
    }
    Ok(out)
}

/// Runs [`OPENERS`] through `run` (this machine, or a host through ssh).
pub fn openers_via(
    run: &mut dyn FnMut(&CommandLine, Duration) -> Result<Output, CommandError>,
    devices: &[(u32, u32)],
) -> std::io::Result<Vec<Opener>> {
    if devices.is_empty() {
        return Ok(Vec::new());
    }
    let cmd = openers_command(devices);
    let out = run(&cmd, Duration::from_secs(120)).map_err(std::io::Error::other)?;
    if out.status != 0 {
        return Err(std::io::Error::other(format!(
            "the scan of /proc for processes that have it open (perl) exited with status {}: {}",
            out.status,
            out.stderr.trim()
        )));
    }
    parse_openers(&out.stdout).map_err(std::io::Error::other)
}

/// Prints every export of the kernel's that reaches the device `$1` (resolved): an nvmet
/// namespace whose `device_path` is the device, its parent disk or any partition of that disk,
/// and an nvmet passthru subsystem whose `device_path` is a controller of the NVMe namespace
/// `$1` is on; a LIO backstore whose `udev_path` is one of those, or a fileio backstore whose
/// file is (its `info`: `File: <path>  Size: ...`; iblock and pscsi claim their disk, which the
/// O_EXCL open sees, fileio does not); a loop device whose backing file is one of those. One line each, `<file> (<device>[: what])`;
/// nothing when there is none. `$2`, `$3` and `$4` are nvmet's configfs directory, sysfs's
/// block class and LIO's configfs core directory (other roots only in pgtier's own tests).
pub const KERNEL_USERS: &str = r#"dev=$1; nvmet=${2:-/sys/kernel/config/nvmet}; block=${3:-/sys/class/block}; lio=${4:-/sys/kernel/config/target/core}
name=${dev##*/}; disk=$name; related=$dev
if [ -f "$block/$name/partition" ]; then
  disk=$(basename "$(dirname "$(readlink -f -- "$block/$name")")"); related="$related /dev/$disk"
fi
for p in "$block/$disk/$disk"*; do
  [ -f "$p/partition" ] && [ "/dev/${p##*/}" != "$dev" ] && related="$related /dev/${p##*/}"
done
ctrls=; owner=$(readlink -f -- "$block/$disk/device" 2>/dev/null)
case "${owner##*/}" in
  nvme-subsys*) for c in "$owner"/nvme*; do [ -e "$c" ] && ctrls="$ctrls ${c##*/}"; done ;;
  nvme[0-9]*) ctrls=${owner##*/} ;;
esac
for f in "$nvmet"/subsystems/*/namespaces/*/device_path; do
  [ -f "$f" ] || continue
  p=$(cat "$f"); [ -n "$p" ] || continue
  r=$(readlink -f -- "$p")
  for x in $related; do [ "$r" = "$x" ] && echo "$f ($r)"; done
done
for f in "$nvmet"/subsystems/*/passthru/device_path; do
  [ -f "$f" ] || continue
  p=$(cat "$f"); [ -n "$p" ] || continue
  r=$(readlink -f -- "$p")
  for c in $ctrls; do [ "$r" = "/dev/$c" ] && echo "$f ($r, the controller of $dev: passthru)"; done
done
for f in "$lio"/*/*/udev_path; do
  [ -f "$f" ] || continue
  p=$(cat "$f"); [ -n "$p" ] || continue
  r=$(readlink -f -- "$p")
  for x in $related; do [ "$r" = "$x" ] && echo "$f ($r: a LIO backstore)"; done
done
for f in "$lio"/*/*/info; do
  [ -f "$f" ] || continue
  p=$(sed -n 's/.* File: \(.*\)  Size: .*/\1/p' "$f" | head -n 1); [ -n "$p" ] || continue
  r=$(readlink -f -- "$p")
  for x in $related; do [ "$r" = "$x" ] && echo "$f ($r: a LIO fileio backstore)"; done
done
for f in "$block"/loop*/loop/backing_file; do
  [ -f "$f" ] || continue
  p=$(cat "$f"); p=${p% (deleted)}; [ -n "$p" ] || continue
  r=$(readlink -f -- "$p")
  l=${f%/loop/backing_file}
  for x in $related; do [ "$r" = "$x" ] && echo "$f ($r: the backing file of loop device /dev/${l##*/})"; done
done; exit 0"#;

/// Runs [`KERNEL_USERS`] for `dev` through `run`: the exports' lines.
pub fn kernel_users_via(
    run: &mut dyn FnMut(&CommandLine, Duration) -> Result<Output, CommandError>,
    dev: &std::path::Path,
) -> std::io::Result<Vec<String>> {
    let cmd = CommandLine::new("sh").args(["-c", KERNEL_USERS, "sh"]).arg(dev);
    let out = run(&cmd, Duration::from_secs(60)).map_err(std::io::Error::other)?;
    if out.status != 0 {
        return Err(std::io::Error::other(format!(
            "the look for nvmet, LIO and loop exports exited with status {}: {}",
            out.status,
            out.stderr.trim()
        )));
    }
    Ok(out.stdout.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scans_lines_are_openers() {
        let text = "4242\tqemu-system-x86\t259:3\topen read-write (fd 17, /dev/nvme1n1)\n\
                    77\tpython3\t8:16\tmapped (/dev/sdb)\n";
        let got = parse_openers(text).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].pid, 4242);
        assert_eq!(got[0].device, (259, 3));
        assert_eq!(got[0].to_string(), "PID 4242 (qemu-system-x86) has it open read-write (fd 17, /dev/nvme1n1)");
        assert_eq!(got[1].how, "mapped (/dev/sdb)");
        assert!(parse_openers("4242 qemu\n").is_err(), "a line that is not the scan's is an error");
        assert_eq!(parse_openers("").unwrap(), Vec::new());
    }

    /// The real script, run by `sh` on a tree laid out as nvmet's and LIO's configfs and
    /// sysfs's block class are: disk pgtfake0n1 (partitions p1 and p2) is namespace 1 of
    /// controller nvme42 under subsystem nvme-subsys7 (native multipath), disk pgtfake9n1
    /// another's; loop7 a loop device.
    #[test]
    fn exports_of_the_disk_its_partitions_and_its_controller_are_found() {
        let root = tempfile::tempdir().unwrap();
        let (nvmet, block, devices, lio) = (
            root.path().join("nvmet"),
            root.path().join("block"),
            root.path().join("devices"),
            root.path().join("lio"),
        );
        let mkdir = |p: &std::path::Path| std::fs::create_dir_all(p).unwrap();
        let link = |to: &std::path::Path, from: &std::path::Path| std::os::unix::fs::symlink(to, from).unwrap();
        mkdir(&block);
        mkdir(&lio);
        for disk in ["pgtfake0n1", "pgtfake9n1", "loop7"] {
            mkdir(&devices.join(disk));
            link(&devices.join(disk), &block.join(disk));
        }
        let subsys = devices.join("nvme-subsys-pgtfake");
        mkdir(&subsys.join("nvme-subsys7/nvme42"));
        link(&subsys.join("nvme-subsys7"), &devices.join("pgtfake0n1/device"));
        for p in ["pgtfake0n1p1", "pgtfake0n1p2"] {
            mkdir(&devices.join("pgtfake0n1").join(p));
            std::fs::write(devices.join("pgtfake0n1").join(p).join("partition"), "1\n").unwrap();
            link(&devices.join("pgtfake0n1").join(p), &block.join(p));
        }
        let export = |subsystem: &str, what: &str, path: &str| {
            let dir = nvmet.join("subsystems").join(subsystem).join(what);
            mkdir(&dir);
            std::fs::write(dir.join("device_path"), format!("{path}\n")).unwrap();
            dir.join("device_path").display().to_string()
        };
        let run = |dev: &str| -> String {
            let out = std::process::Command::new("sh")
                .args(["-c", KERNEL_USERS, "sh", dev])
                .arg(&nvmet)
                .arg(&block)
                .arg(&lio)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        // Nothing exported: nothing printed.
        assert_eq!(run("/dev/pgtfake0n1"), "");
        // Another disk exported: not ours.
        export("other", "namespaces/1", "/dev/pgtfake9n1");
        assert_eq!(run("/dev/pgtfake0n1"), "");
        // A partition of the disk exported: the disk and its other partition are refused, the
        // exported partition itself too.
        let p1 = export("part", "namespaces/1", "/dev/pgtfake0n1p1");
        assert_eq!(run("/dev/pgtfake0n1"), format!("{p1} (/dev/pgtfake0n1p1)\n"));
        assert_eq!(run("/dev/pgtfake0n1p2"), format!("{p1} (/dev/pgtfake0n1p1)\n"));
        assert_eq!(run("/dev/pgtfake0n1p1"), format!("{p1} (/dev/pgtfake0n1p1)\n"));
        std::fs::remove_dir_all(nvmet.join("subsystems/part")).unwrap();
        // The whole disk exported: each partition is refused.
        let whole = export("whole", "namespaces/3", "/dev/pgtfake0n1");
        assert_eq!(run("/dev/pgtfake0n1p2"), format!("{whole} (/dev/pgtfake0n1)\n"));
        std::fs::remove_dir_all(nvmet.join("subsystems/whole")).unwrap();
        // A passthru subsystem on the namespace's controller.
        let pt = export("pt", "passthru", "/dev/nvme42");
        assert_eq!(
            run("/dev/pgtfake0n1"),
            format!("{pt} (/dev/nvme42, the controller of /dev/pgtfake0n1: passthru)\n")
        );
        let other = run("/dev/pgtfake9n1");
        assert!(other.contains("subsystems/other/") && !other.contains("passthru"), "another controller's: {other}");
        std::fs::remove_dir_all(nvmet.join("subsystems")).unwrap();
        // A LIO block backstore on a partition; an empty fileio one is nobody's.
        let iblock = lio.join("iblock_0/store");
        mkdir(&iblock);
        std::fs::write(iblock.join("udev_path"), "/dev/pgtfake0n1p2\n").unwrap();
        mkdir(&lio.join("fileio_1/empty"));
        std::fs::write(lio.join("fileio_1/empty/udev_path"), "").unwrap();
        let udev_path = iblock.join("udev_path").display().to_string();
        assert_eq!(run("/dev/pgtfake0n1"), format!("{udev_path} (/dev/pgtfake0n1p2: a LIO backstore)\n"));
        assert_eq!(run("/dev/pgtfake9n1"), "");
        std::fs::remove_dir_all(&iblock).unwrap();
        // A fileio backstore on the whole disk, as the kernel shows it (target_core_file.c).
        let fileio = lio.join("fileio_0/store");
        mkdir(&fileio);
        std::fs::write(
            fileio.join("info"),
            "Status: ACTIVATED  Max Queue Depth: 0  SectorSize: 512  HwMaxSectors: 16384\n        TCM FILEIO ID: 0        File: /dev/pgtfake0n1  Size: 1073741824  Mode: O_DSYNC Async: 1\n",
        )
        .unwrap();
        let info = fileio.join("info").display().to_string();
        assert_eq!(run("/dev/pgtfake0n1p1"), format!("{info} (/dev/pgtfake0n1: a LIO fileio backstore)\n"));
        std::fs::remove_dir_all(&fileio).unwrap();
        // A loop device over the disk (the kernel shows a deleted backing file with a suffix).
        mkdir(&devices.join("loop7/loop"));
        std::fs::write(devices.join("loop7/loop/backing_file"), "/dev/pgtfake0n1 (deleted)\n").unwrap();
        let backing = block.join("loop7/loop/backing_file").display().to_string();
        assert_eq!(
            run("/dev/pgtfake0n1p1"),
            format!("{backing} (/dev/pgtfake0n1: the backing file of loop device /dev/loop7)\n")
        );
        assert_eq!(run("/dev/pgtfake9n1"), "");
    }
}
