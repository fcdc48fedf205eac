//! The kernel's mount table (`/proc/mounts` format), parsed.

use std::path::{Path, PathBuf};

/// One line of `/proc/mounts` (or `/proc/self/mounts`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MountEntry {
    pub source: String,
    pub target: PathBuf,
    pub fstype: String,
    /// Options exactly as the kernel shows them, in order.
    pub options: Vec<String>,
}

impl MountEntry {
    /// The value of `key=value` among the options, or `Some("")` for a bare flag `key`.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().find_map(|o| match o.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if o == key => Some(""),
            _ => None,
        })
    }
}

/// Parses text in `/proc/mounts` format. Octal escapes (`\040` for space) are decoded.
pub fn parse_proc_mounts(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let source = unescape(f.next()?);
            let target = PathBuf::from(unescape(f.next()?));
            let fstype = f.next()?.to_string();
            let options = f.next()?.split(',').map(str::to_string).collect();
            Some(MountEntry { source, target, fstype, options })
        })
        .collect()
}

/// Decodes the octal escapes (`\040` for a space) of paths in /proc/mounts and
/// /proc/self/mountinfo.
pub fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let v = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The current mount table of this process's mount namespace.
pub fn current() -> Vec<MountEntry> {
    std::fs::read_to_string("/proc/self/mounts").map(|t| parse_proc_mounts(&t)).unwrap_or_default()
}

/// The last (topmost) mount at `target`, if any.
pub fn find(target: &Path) -> Option<MountEntry> {
    current().into_iter().rev().find(|m| m.target == target)
}

/// True when something is mounted exactly at `path`.
pub fn is_mountpoint(path: &Path) -> bool {
    find(path).is_some()
}

/// Mount points at or below `dir`.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    current().into_iter().map(|m| m.target).filter(|t| t.starts_with(dir)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options_and_escapes() {
        let t = "/dev/loop0 /mnt/a\\040b xfs rw,relatime,dax=never,inode64 0 0\n";
        let m = &parse_proc_mounts(t)[0];
        assert_eq!(m.target, PathBuf::from("/mnt/a b"));
        assert_eq!(m.option("dax"), Some("never"));
        assert_eq!(m.option("inode64"), Some(""));
        assert_eq!(m.option("noatime"), None);
    }
}
