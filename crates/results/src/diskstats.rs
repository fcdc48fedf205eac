//! /proc/diskstats as pgtier reads it while measuring and as the raw files of a run keep it
//! (`runs/<id>/diskstats.begin.txt`, `.end.txt`): the counters of each block device by kernel
//! name.

use std::collections::BTreeMap;

/// Counters of one block device (from /proc/diskstats).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
}

/// Parses /proc/diskstats into counters per kernel name.
pub fn parse_diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    text.lines().filter_map(parse_diskstats_line).map(|(name, c)| (name.to_string(), c)).collect()
}

/// One line of /proc/diskstats: the device's kernel name and its counters.
pub fn parse_diskstats_line(line: &str) -> Option<(&str, DiskCounters)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 11 {
        return None;
    }
    let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
    Some((
        f[2],
        DiskCounters {
            reads: n(3),
            read_sectors: n(5),
            read_ms: n(6),
            writes: n(7),
            write_sectors: n(9),
            write_ms: n(10),
        },
    ))
}
