//! Parser for `parted -s -m DEV unit B print`, plus partition naming and
//! alignment helpers.

use serde::Serialize;

use super::InspectError;

/// A disk as described by parted's machine-readable output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartedDisk {
    pub path: String,
    pub size_bytes: u64,
    pub logical_sector: u32,
    pub physical_sector: u32,
    /// `"gpt"`, `"msdos"`, `"loop"`, or `"unknown"` for a disk without a
    /// partition table (parted still prints the disk line, exits 1 and says
    /// `Error: ... unrecognised disk label` on stderr).
    pub table: String,
    pub model: String,
    pub partitions: Vec<PartedPartition>,
}

/// One partition line of parted's machine-readable output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartedPartition {
    pub number: u32,
    pub start_bytes: u64,
    /// Inclusive end, as parted prints it.
    pub end_bytes: u64,
    pub size_bytes: u64,
    /// File system parted recognised; often empty.
    pub fstype: String,
    /// GPT partition name; empty on msdos.
    pub name: String,
    /// Comma-separated flags (`"boot"`, `"boot, esp"`); empty when none.
    pub flags: String,
}

const TOOL: &str = "parted";

/// Reads `parted -s -m DEV unit B print` (the `BYT;` format).
///
/// Lines before `BYT;` and lines that are not `...;` records (stray
/// `sh: 1: udevadm: not found`, warnings) are ignored. Values may end in
/// `B` (bytes) or `s` (sectors of the logical sector size, from `unit s`).
/// Colons and backslashes escaped by parted (`\:`, `\\`) are honoured.
/// Free-space rows (`print free`) are skipped.
pub fn parse_machine(text: &str) -> Result<PartedDisk, InspectError> {
    if text.trim().is_empty() {
        return Err(InspectError::Empty { tool: TOOL });
    }
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r').trim());
    let header = lines
        .by_ref()
        .find(|l| matches!(*l, "BYT;" | "CHS;" | "CYL;"))
        .ok_or_else(|| InspectError::unexpected(TOOL, "no \"BYT;\" line (was -m given?)"))?;
    if header != "BYT;" {
        return Err(InspectError::unexpected(TOOL, format!("unit {header} is not supported, use `unit B`")));
    }

    let mut records = lines.filter_map(|l| l.strip_suffix(';')).map(split_fields);
    let disk = records.next().ok_or_else(|| InspectError::unexpected(TOOL, "no disk line after \"BYT;\""))?;
    if disk.len() < 7 {
        return Err(InspectError::unexpected(
            TOOL,
            format!("disk line has {} fields, expected at least 7", disk.len()),
        ));
    }
    let logical_sector: u32 = parse_number(&disk[3], "logical sector size")?;
    let physical_sector: u32 = parse_number(&disk[4], "physical sector size")?;
    let size_bytes = parse_bytes(&disk[1], logical_sector)?;

    let mut partitions = Vec::new();
    for fields in records {
        if fields.get(4).map(String::as_str) == Some("free") {
            continue;
        }
        if fields.len() < 7 {
            return Err(InspectError::unexpected(
                TOOL,
                format!("partition line has {} fields, expected 7", fields.len()),
            ));
        }
        partitions.push(PartedPartition {
            number: parse_number(&fields[0], "partition number")?,
            start_bytes: parse_bytes(&fields[1], logical_sector)?,
            end_bytes: parse_bytes(&fields[2], logical_sector)?,
            size_bytes: parse_bytes(&fields[3], logical_sector)?,
            fstype: fields[4].clone(),
            name: fields[5].clone(),
            flags: fields[6].clone(),
        });
    }

    Ok(PartedDisk {
        path: disk[0].clone(),
        size_bytes,
        logical_sector,
        physical_sector,
        table: disk[5].clone(),
        model: disk[6].clone(),
        partitions,
    })
}

/// Splits a record at unescaped colons and removes the escapes.
fn split_fields(record: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = record.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("never empty").push(next);
                }
            }
            ':' => fields.push(String::new()),
            _ => fields.last_mut().expect("never empty").push(c),
        }
    }
    fields
}

fn parse_number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, InspectError> {
    text.trim().parse().map_err(|_| InspectError::unexpected(TOOL, format!("unreadable {what} {text:?}")))
}

/// `"1048576B"` -> 1048576; `"2048s"` -> 2048 * sector.
fn parse_bytes(text: &str, sector: u32) -> Result<u64, InspectError> {
    let text = text.trim();
    let bad = || InspectError::unexpected(TOOL, format!("unreadable byte value {text:?}"));
    if let Some(sectors) = text.strip_suffix('s') {
        let n: u64 = sectors.parse().map_err(|_| bad())?;
        return n.checked_mul(u64::from(sector)).ok_or_else(bad);
    }
    text.strip_suffix('B').unwrap_or(text).parse().map_err(|_| bad())
}

/// The device node of partition `number` on `disk`, following the kernel's
/// naming: a `p` goes between a disk name ending in a digit and the number
/// (`/dev/nvme1n1` -> `/dev/nvme1n1p1`, `/dev/loop0` -> `/dev/loop0p1`,
/// `/dev/pmem0` -> `/dev/pmem0p1`, `/dev/mmcblk0` -> `/dev/mmcblk0p1`),
/// nothing otherwise (`/dev/sda` -> `/dev/sda1`). udev's persistent links
/// under `/dev/disk/by-*/` get `-partN` (`/dev/disk/by-id/nvme-X` ->
/// `/dev/disk/by-id/nvme-X-part1`).
pub fn partition_node(disk: &str, number: u32) -> String {
    let disk = disk.trim_end_matches('/');
    if disk.starts_with("/dev/disk/by-") {
        return format!("{disk}-part{number}");
    }
    if disk.ends_with(|c: char| c.is_ascii_digit()) { format!("{disk}p{number}") } else { format!("{disk}{number}") }
}

/// Whether a partition starting at `start_bytes` is aligned to
/// `alignment_bytes` (e.g. 1 MiB, or the PMem namespace `align` of 2 MiB).
/// An alignment of 0 is never satisfied (it means the caller has none).
#[cfg(test)]
pub fn is_aligned_start(start_bytes: u64, alignment_bytes: u64) -> bool {
    alignment_bytes != 0 && start_bytes.is_multiple_of(alignment_bytes)
}

/// A disk's I/O geometry, from sysfs (`queue/logical_block_size`, `queue/minimum_io_size`,
/// `queue/optimal_io_size`, `alignment_offset`), all in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub logical_sector: u64,
    pub minimum_io: u64,
    pub optimal_io: u64,
    pub alignment_offset: u64,
}

const MIB: u64 = 1 << 20;

/// parted's optimum alignment for a disk, as (offset, grain) in logical sectors: libparted
/// 3.5 `linux_get_optimum_alignment()` takes a 1 MiB grain when the reported I/O sizes divide
/// 1 MiB (or none is reported), else the optimal I/O size, else (optimal 0) the minimum; the
/// offset is `alignment_offset`. `align-check opt` accepts a start when `start % grain == offset`.
pub fn optimum_alignment(g: &Geometry) -> (u64, u64) {
    let sector = g.logical_sector.max(1);
    let (opt, min) = (g.optimal_io, g.minimum_io);
    let divides = |x: u64| x != 0 && MIB.is_multiple_of(x);
    let one_mib = (opt == 0 && min == 0)
        || (divides(opt) && divides(min))
        || (min == 0 && divides(opt))
        || (opt == 0 && divides(min));
    let grain = if one_mib {
        MIB
    } else if opt == 0 {
        min
    } else {
        opt
    };
    (g.alignment_offset / sector, (grain / sector).max(1))
}

/// The first sector (in the disk's logical sectors) of a partition that starts at least at
/// `least` 512-byte sectors, keeps that alignment, and passes parted's `align-check opt`: the
/// least common multiple of `least` and parted's grain, plus the alignment offset. A RAID-5 of
/// three 64 KiB chunks (optimal I/O 192 KiB, 384 sectors) fails at 2048s (`2048s % 384s != 0s`)
/// and gets 6144s (3 MiB); a disk that reports nothing gets 2048s.
pub fn aligned_start(g: &Geometry, least: u64) -> u64 {
    let sector = g.logical_sector.max(1);
    let least = (least * 512).div_ceil(sector).max(1);
    let (offset, grain) = optimum_alignment(g);
    lcm(least, grain) + offset
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPT: &str = include_str!("../../tests/fixtures/local/parted-machine-print.txt");
    const MSDOS: &str = include_str!("../../tests/fixtures/local/parted-machine-print.msdos-boot.txt");
    const UNLABELED: &str = include_str!("../../tests/fixtures/local/parted-machine-print.unlabeled.txt");

    fn geometry(logical_sector: u64, minimum_io: u64, optimal_io: u64, alignment_offset: u64) -> Geometry {
        Geometry { logical_sector, minimum_io, optimal_io, alignment_offset }
    }

    #[test]
    fn partition_starts_follow_the_devices_geometry() {
        // Nothing reported (loop, zram, most NVMe drives): 1 MiB.
        assert_eq!(aligned_start(&geometry(512, 512, 0, 0), 2048), 2048);
        assert_eq!(aligned_start(&geometry(512, 0, 0, 0), 2048), 2048);
        // The guest's RAID-like disk (tests/fixtures/vm/raid-queue.txt): parted's grain is 384
        // sectors, 2048s fails align-check opt ("2048s % 384s != 0s"), 6144s passes.
        let raid = geometry(512, 65536, 196608, 0);
        assert_eq!(optimum_alignment(&raid), (0, 384));
        assert_eq!(aligned_start(&raid, 2048), 6144);
        // A stripe width that divides 1 MiB keeps 1 MiB.
        assert_eq!(aligned_start(&geometry(512, 65536, 262144, 0), 2048), 2048);
        // PMem: 2 MiB at least (4096 sectors of 512 bytes).
        assert_eq!(aligned_start(&geometry(512, 4096, 0, 0), 4096), 4096);
        // 4 KiB logical sectors: sectors are 4 KiB, 1 MiB is 256 of them.
        assert_eq!(aligned_start(&geometry(4096, 4096, 0, 0), 2048), 256);
        // An alignment offset moves the start by that much.
        assert_eq!(aligned_start(&geometry(512, 4096, 0, 3584), 2048), 2055);
        // Only a minimum I/O size that does not divide 1 MiB.
        assert_eq!(optimum_alignment(&geometry(512, 196608, 0, 0)), (0, 384));
    }

    #[test]
    fn gpt_loop_disk() {
        let disk = parse_machine(GPT).unwrap();
        assert_eq!(
            disk,
            PartedDisk {
                path: "/dev/loop0".into(),
                size_bytes: 2_147_483_648,
                logical_sector: 512,
                physical_sector: 512,
                table: "gpt".into(),
                model: "Loopback device".into(),
                partitions: vec![
                    PartedPartition {
                        number: 1,
                        start_bytes: 1_048_576,
                        end_bytes: 1_074_790_399,
                        size_bytes: 1_073_741_824,
                        fstype: String::new(),
                        name: "xfsdata".into(),
                        flags: String::new(),
                    },
                    PartedPartition {
                        number: 2,
                        start_bytes: 1_074_790_400,
                        end_bytes: 2_146_435_071,
                        size_bytes: 1_071_644_672,
                        fstype: String::new(),
                        name: "ext4data".into(),
                        flags: String::new(),
                    },
                ],
            }
        );
        assert!(disk.partitions.iter().all(|p| is_aligned_start(p.start_bytes, 1 << 20)));
    }

    #[test]
    fn msdos_with_boot_flag() {
        let disk = parse_machine(MSDOS).unwrap();
        assert_eq!(disk.table, "msdos");
        assert_eq!(disk.size_bytes, 4_294_967_296);
        assert_eq!(disk.partitions.len(), 2);
        assert_eq!(disk.partitions[0].flags, "boot");
        assert_eq!(disk.partitions[0].size_bytes, 3_221_225_472);
        assert_eq!(disk.partitions[1].start_bytes, 3_222_274_048);
        assert_eq!(disk.partitions[1].end_bytes, 4_294_967_295);
        assert_eq!(disk.partitions[1].name, "");
    }

    #[test]
    fn unlabeled_disk() {
        let disk = parse_machine(UNLABELED).unwrap();
        assert_eq!(disk.table, "unknown");
        assert_eq!(disk.size_bytes, 4_294_967_296);
        assert!(disk.partitions.is_empty());
    }

    #[test]
    fn stray_lines_sectors_escapes_and_free_space() {
        let text = "sh: 1: udevadm: not found\nBYT;\nsh: 1: udevadm: not found\n\
                    /dev/disk/by-id/x\\:y:2097152s:scsi:512:4096:gpt:Vendor\\\\Model:;\n\
                    1:17408B:1048575B:1031168B:free;\n\
                    1:2048s:4095s:2048s:xfs:pg data:boot, esp;\n";
        let disk = parse_machine(text).unwrap();
        assert_eq!(disk.path, "/dev/disk/by-id/x:y");
        assert_eq!(disk.model, "Vendor\\Model");
        assert_eq!(disk.size_bytes, 1 << 30);
        assert_eq!(disk.physical_sector, 4096);
        assert_eq!(disk.partitions.len(), 1);
        let p = &disk.partitions[0];
        assert_eq!((p.start_bytes, p.end_bytes, p.size_bytes), (1 << 20, 2 * (1 << 20) - 512, 1 << 20));
        assert_eq!(p.fstype, "xfs");
        assert_eq!(p.name, "pg data");
        assert_eq!(p.flags, "boot, esp");
    }

    #[test]
    fn old_parted_disk_line_without_flags() {
        let disk = parse_machine("BYT;\n/dev/sda:500107862016B:scsi:512:512:msdos:ATA Disk;\n").unwrap();
        assert_eq!(disk.model, "ATA Disk");
        assert_eq!(disk.size_bytes, 500_107_862_016);
    }

    #[test]
    fn errors() {
        assert_eq!(parse_machine("").unwrap_err(), InspectError::Empty { tool: "parted" });
        let err = parse_machine("sh: 1: udevadm: not found\n").unwrap_err();
        assert!(err.to_string().starts_with("parted: "));
        assert!(parse_machine("BYT;\n").is_err());
        assert!(parse_machine("CHS;\n/dev/sda:1,2,3:scsi:512:512:msdos:X:;\n").is_err());
        assert!(parse_machine("BYT;\n/dev/sda:1B:scsi:512;\n").is_err());
        assert!(parse_machine("BYT;\n/dev/sda:lotsB:scsi:512:512:gpt:X:;\n").is_err());
        assert!(parse_machine("BYT;\n/dev/sda:1B:scsi:512:512:gpt:X:;\n1:2B:3B;\n").is_err());
    }

    #[test]
    fn partition_nodes() {
        assert_eq!(partition_node("/dev/nvme1n1", 1), "/dev/nvme1n1p1");
        assert_eq!(partition_node("/dev/sda", 1), "/dev/sda1");
        assert_eq!(partition_node("/dev/sda", 12), "/dev/sda12");
        assert_eq!(partition_node("/dev/loop0", 1), "/dev/loop0p1");
        assert_eq!(partition_node("/dev/pmem0", 1), "/dev/pmem0p1");
        assert_eq!(partition_node("/dev/pmem0.1", 2), "/dev/pmem0.1p2");
        assert_eq!(partition_node("/dev/mmcblk0", 1), "/dev/mmcblk0p1");
        assert_eq!(partition_node("/dev/vdb", 3), "/dev/vdb3");
        assert_eq!(
            partition_node("/dev/disk/by-id/nvme-Micron_7450_MTF960TFR_24023F6EC_1", 1),
            "/dev/disk/by-id/nvme-Micron_7450_MTF960TFR_24023F6EC_1-part1"
        );
        assert_eq!(
            partition_node("/dev/disk/by-path/pci-0000:4f:00.0-nvme-1", 2),
            "/dev/disk/by-path/pci-0000:4f:00.0-nvme-1-part2"
        );
        assert_eq!(partition_node("/dev/disk/by-id/ata-WDC_WD800JD", 1), "/dev/disk/by-id/ata-WDC_WD800JD-part1");
    }

    #[test]
    fn alignment() {
        assert!(is_aligned_start(1_048_576, 1_048_576));
        assert!(is_aligned_start(0, 4096));
        assert!(!is_aligned_start(34 * 512, 2048 * 512));
        assert!(is_aligned_start(4 << 20, 2 << 20));
        assert!(!is_aligned_start(1 << 20, 2 << 20));
        assert!(!is_aligned_start(4096, 0));
    }
}
