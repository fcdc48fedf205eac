//! Parser for the geometry block that `xfs_info` and `mkfs.xfs` print.

use std::collections::BTreeMap;

use serde::Serialize;

use super::InspectError;

/// XFS geometry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XfsInfo {
    /// `data bsize`, bytes.
    pub block_size: u32,
    /// `meta-data sectsz`, bytes.
    pub sector_size: u32,
    /// `meta-data agcount`.
    pub ag_count: u32,
    /// `meta-data agsize`, in file system blocks.
    pub ag_size_blocks: u64,
    /// `data blocks`.
    pub data_blocks: u64,
    /// `meta-data reflink`; `None` when not printed (very old xfsprogs).
    pub reflink: Option<bool>,
    /// `meta-data crc` (v5 file system).
    pub crc: Option<bool>,
    /// `log blocks`.
    pub log_blocks: u64,
    /// `data sunit`, in file system blocks.
    pub sunit: u64,
    /// `data swidth`, in file system blocks.
    pub swidth: u64,
    /// The text that was parsed, as given (trailing whitespace removed).
    pub raw: String,
}

const TOOL: &str = "xfs_info/mkfs.xfs";

/// Reads the geometry printed by `xfs_info MOUNTPOINT|DEV` or `mkfs.xfs`:
///
/// ```text
/// meta-data=/dev/loop0p1           isize=512    agcount=4, agsize=65536 blks
///          =                       sectsz=512   attr=2, projid32bit=1
///          =                       crc=1        finobt=1, sparse=1, rmapbt=0
///          =                       reflink=1    bigtime=1 inobtcount=1 nrext64=0
/// data     =                       bsize=4096   blocks=262144, imaxpct=25
///          =                       sunit=0      swidth=0 blks
/// naming   =version 2              bsize=4096   ascii-ci=0, ftype=1
/// log      =internal log           bsize=4096   blocks=16384, version=2
///          =                       sectsz=512   sunit=0 blks, lazy-count=1
/// realtime =none                   extsz=4096   blocks=0, rtextents=0
/// ```
///
/// Each `key=value` belongs to the section (`meta-data`, `data`, `naming`,
/// `log`, `realtime`) of its line or of the last line that named one.
/// Lines that are not part of the block (mkfs's `Discarding blocks...Done.`,
/// warnings) are ignored, and keys that older or newer xfsprogs add or omit
/// (`bigtime`, `inobtcount`, `nrext64`, `exchange`, ...) do not matter.
pub fn parse_info(text: &str) -> Result<XfsInfo, InspectError> {
    if text.trim().is_empty() {
        return Err(InspectError::Empty { tool: TOOL });
    }
    // (section, key) -> value
    let mut values: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let Some((label, rest)) = line.split_once('=') else {
            continue;
        };
        let label = label.trim();
        if label.is_empty() {
            // continuation line: "         =   sectsz=512 ..."
        } else if is_section(label) {
            section = Some(label.to_string());
        } else {
            continue; // not part of the geometry block
        }
        let Some(current) = &section else {
            continue;
        };
        for token in rest.split(|c: char| c.is_whitespace() || c == ',') {
            if let Some((key, value)) = token.split_once('=')
                && !key.is_empty()
            {
                values.entry((current.clone(), key.to_string())).or_insert_with(|| value.to_string());
            }
        }
    }

    let get = |section: &str, key: &str| values.get(&(section.to_string(), key.to_string()));
    let number = |section: &str, key: &str| -> Result<u64, InspectError> {
        let text = get(section, key)
            .ok_or_else(|| InspectError::unexpected(TOOL, format!("no {key}= in the {section} section")))?;
        text.parse().map_err(|_| InspectError::unexpected(TOOL, format!("{section} {key}={text} is not a number")))
    };
    let small = |section: &str, key: &str| -> Result<u32, InspectError> {
        let n = number(section, key)?;
        u32::try_from(n).map_err(|_| InspectError::unexpected(TOOL, format!("{section} {key}={n} is too large")))
    };
    let flag = |section: &str, key: &str| match get(section, key).map(String::as_str) {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => None,
    };

    Ok(XfsInfo {
        block_size: small("data", "bsize")?,
        sector_size: small("meta-data", "sectsz")?,
        ag_count: small("meta-data", "agcount")?,
        ag_size_blocks: number("meta-data", "agsize")?,
        data_blocks: number("data", "blocks")?,
        reflink: flag("meta-data", "reflink"),
        crc: flag("meta-data", "crc"),
        log_blocks: number("log", "blocks")?,
        sunit: number("data", "sunit")?,
        swidth: number("data", "swidth")?,
        raw: text.trim_end().to_string(),
    })
}

fn is_section(label: &str) -> bool {
    matches!(label, "meta-data" | "data" | "naming" | "log" | "realtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MKFS_DEFAULT: &str = include_str!("../../tests/fixtures/local/mkfs.xfs.default.txt");
    const MKFS_REFLINK0: &str = include_str!("../../tests/fixtures/local/mkfs.xfs.reflink0.txt");
    const MKFS_STRIPED: &str = include_str!("../../tests/fixtures/local/mkfs.xfs.su64k-sw4.label.txt");
    const INFO_MOUNTED: &str = include_str!("../../tests/fixtures/local/xfs_info.txt");
    const INFO_UNMOUNTED: &str = include_str!("../../tests/fixtures/local/xfs_info-unmounted-dev.txt");
    const INFO_STRIPED: &str = include_str!("../../tests/fixtures/local/xfs_info.su64k-sw4.txt");
    const PMEM_REFLINK1: &str = include_str!("../../tests/fixtures/xfs/mkfs.xfs.pmem0.reflink1.pmem-kb100000005.txt");
    const PMEM_REFLINK0: &str = include_str!("../../tests/fixtures/xfs/mkfs.xfs-m-reflink0.pmem0.pmem-kb100000005.txt");

    fn loop_geometry(raw: &str, reflink: bool) -> XfsInfo {
        XfsInfo {
            block_size: 4096,
            sector_size: 512,
            ag_count: 4,
            ag_size_blocks: 65536,
            data_blocks: 262_144,
            reflink: Some(reflink),
            crc: Some(true),
            log_blocks: 16384,
            sunit: 0,
            swidth: 0,
            raw: raw.trim_end().to_string(),
        }
    }

    #[test]
    fn mkfs_output_with_discarding_line() {
        assert_eq!(parse_info(MKFS_DEFAULT).unwrap(), loop_geometry(MKFS_DEFAULT, true));
        assert_eq!(parse_info(MKFS_REFLINK0).unwrap(), loop_geometry(MKFS_REFLINK0, false));
        assert!(parse_info(MKFS_DEFAULT).unwrap().raw.ends_with("Discarding blocks...Done."));
    }

    #[test]
    fn xfs_info_mounted_and_unmounted() {
        assert_eq!(parse_info(INFO_MOUNTED).unwrap(), loop_geometry(INFO_MOUNTED, true));
        assert_eq!(parse_info(INFO_UNMOUNTED).unwrap(), loop_geometry(INFO_UNMOUNTED, true));
    }

    #[test]
    fn striped_geometry() {
        for text in [MKFS_STRIPED, INFO_STRIPED] {
            let info = parse_info(text).unwrap();
            assert_eq!(info.ag_count, 8);
            assert_eq!(info.ag_size_blocks, 98288);
            assert_eq!(info.data_blocks, 786_304);
            assert_eq!(info.sunit, 16); // 64 KiB / 4 KiB
            assert_eq!(info.swidth, 64); // 4 * sunit
            assert_eq!(info.log_blocks, 16384);
        }
    }

    #[test]
    fn older_xfsprogs_on_pmem() {
        let info = parse_info(PMEM_REFLINK1).unwrap();
        assert_eq!(info.block_size, 4096);
        assert_eq!(info.sector_size, 4096);
        assert_eq!(info.ag_count, 4);
        assert_eq!(info.ag_size_blocks, 97_542_016);
        assert_eq!(info.data_blocks, 390_168_064);
        assert_eq!(info.log_blocks, 190_511);
        assert_eq!(info.reflink, Some(true));
        assert_eq!(info.crc, Some(true));
        // the log section's sunit=1 must not leak into the data stripe unit
        assert_eq!(info.sunit, 0);
        assert_eq!(info.swidth, 0);

        let info = parse_info(PMEM_REFLINK0).unwrap();
        assert_eq!(info.reflink, Some(false));
        assert_eq!(info.data_blocks, 390_168_064);
    }

    #[test]
    fn very_old_format_without_reflink() {
        let text = "meta-data=/dev/sdb1              isize=256    agcount=4, agsize=65536 blks\n\
                    \x20        =                       sectsz=512   attr=2, projid32bit=0\n\
                    data     =                       bsize=4096   blocks=262144, imaxpct=25\n\
                    \x20        =                       sunit=0      swidth=0 blks\n\
                    naming   =version 2              bsize=4096   ascii-ci=0\n\
                    log      =internal               bsize=4096   blocks=2560, version=2\n\
                    \x20        =                       sectsz=512   sunit=0 blks, lazy-count=1\n\
                    realtime =none                   extsz=4096   blocks=0, rtextents=0\n";
        let info = parse_info(text).unwrap();
        assert_eq!(info.reflink, None);
        assert_eq!(info.crc, None);
        assert_eq!(info.log_blocks, 2560);
    }

    #[test]
    fn errors() {
        assert_eq!(parse_info("").unwrap_err(), InspectError::Empty { tool: "xfs_info/mkfs.xfs" });
        let err = parse_info("xfs_info: /dev/sdz is not a valid XFS filesystem\n").unwrap_err();
        assert!(err.to_string().starts_with("xfs_info/mkfs.xfs: unexpected output"));
        let truncated: String = INFO_MOUNTED.lines().take(5).map(|l| format!("{l}\n")).collect();
        let err = parse_info(&truncated).unwrap_err();
        assert!(err.to_string().contains("no blocks= in the log section"), "{err}");
        let bad = INFO_MOUNTED.replace("agcount=4", "agcount=four");
        assert!(parse_info(&bad).is_err());
    }
}
