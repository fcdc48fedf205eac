//! Scanner for kernel log text (`dmesg`, `dmesg -T`, `journalctl -k`).

const MESSAGE: &str = "DAX unsupported by block device";

/// Device names (`"pmem0"`, `"loop0p1"`) for which the kernel logged that
/// DAX is unsupported by the block device:
///
/// ```text
/// [ 2884.137115] XFS (loop0p1): DAX unsupported by block device. Turning off DAX.
/// [ 2884.756036] EXT4-fs (loop0p2): DAX unsupported by block device.
/// ```
///
/// XFS then mounts without DAX (`dax=never` in /proc/mounts); current ext4
/// refuses the mount, older ext4 also turned DAX off. Timestamps are
/// optional, and several messages glued onto one line are all found. Each
/// device is listed once, in order of first appearance.
pub fn dax_fallback_devices(text: &str) -> Vec<String> {
    let mut devices: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(MESSAGE) {
        if let Some(device) = device_before(&rest[..at])
            && !devices.contains(&device)
        {
            devices.push(device);
        }
        rest = &rest[at + MESSAGE.len()..];
    }
    devices
}

/// What the kernel logged about DAX for `device` (`"pmem0"`), in order, each message without
/// its timestamp and prefix: `DAX unsupported by block device. Turning off DAX.`, `DAX not
/// supported for blocksize. Turning off DAX.` (the block size is not the page size), `DAX and
/// reflink cannot work with multi-partitions!`, `DAX enabled. Warning: EXPERIMENTAL, use at your
/// own risk` (the messages of Linux 6.1 `xfs_setup_dax_always()`; ext4's are found the same way).
/// Messages glued onto one line are split at the next `[timestamp]`.
pub fn dax_messages(text: &str, device: &str) -> Vec<String> {
    let needle = format!("({device}): ");
    let mut found = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(&needle) {
            let after = &rest[at + needle.len()..];
            let end = after.find(" [").or_else(|| after.find('[')).unwrap_or(after.len());
            let msg = after[..end].trim();
            if msg.contains("DAX") {
                found.push(msg.to_string());
            }
            rest = &after[end..];
        }
    }
    found
}

/// The `name` of a `... (name): ` prefix that ends right before the message.
fn device_before(prefix: &str) -> Option<String> {
    let head = prefix.trim_end().strip_suffix("):")?;
    let open = head.rfind('(')?;
    let name = &head[open + 1..];
    let valid =
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '!'));
    if valid { Some(name.to_string()) } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL_XFS: &str = include_str!("../../tests/fixtures/local/dmesg.xfs-mount-dax-always-on-loop.txt");
    const LOCAL_XFS_LEGACY: &str = include_str!("../../tests/fixtures/local/dmesg.xfs-mount-dax-legacy-on-loop.txt");
    const LOCAL_EXT4: &str = include_str!("../../tests/fixtures/local/dmesg.ext4-mount-dax-always-on-loop.txt");
    const LOCAL_SESSION: &str = include_str!("../../tests/fixtures/local/dmesg.all-captured-session.txt");
    const KB_GLUED: &str =
        include_str!("../../tests/fixtures/kernel/dmesg.xfs-dax-unsupported.raw-namespace.pmem-kb100000016.txt");
    const PPC64_NO_TIMESTAMPS: &str =
        include_str!("../../tests/fixtures/kernel/dmesg.xfs-dax-unsupported.ppc64-pmem.linux-nvdimm-2019.txt");
    const REFLINK_CONFLICT: &str = include_str!(
        "../../tests/fixtures/kernel/dmesg.xfs-dax-and-reflink-cannot-be-used-together.pmem-kb100000005.txt"
    );

    #[test]
    fn local_xfs_and_ext4() {
        assert_eq!(dax_fallback_devices(LOCAL_XFS), ["loop0p1"]);
        assert_eq!(dax_fallback_devices(LOCAL_XFS_LEGACY), ["loop0p1"]);
        assert_eq!(dax_fallback_devices(LOCAL_EXT4), ["loop0p2"]);
        // loop0p1 is logged twice in the session; listed once
        assert_eq!(dax_fallback_devices(LOCAL_SESSION), ["loop0p1", "loop0p2"]);
    }

    #[test]
    fn published_pmem_logs() {
        assert_eq!(dax_fallback_devices(KB_GLUED), ["pmem0"]);
        assert_eq!(dax_fallback_devices(PPC64_NO_TIMESTAMPS), ["pmem0"]);
        // "DAX enabled" + reflink conflict is a different failure
        assert!(dax_fallback_devices(REFLINK_CONFLICT).is_empty());
    }

    #[test]
    fn dax_messages_of_one_device() {
        let vm = include_str!("../../tests/fixtures/vm/dmesg.xfs-dax.txt");
        assert_eq!(dax_messages(vm, "pmem0"), ["DAX enabled. Warning: EXPERIMENTAL, use at your own risk"]);
        assert_eq!(dax_messages(vm, "pmem1"), ["DAX not supported for blocksize. Turning off DAX."]);
        assert!(dax_messages(vm, "nvme0n1").is_empty());
        assert_eq!(
            dax_messages(KB_GLUED, "pmem0"),
            [
                "DAX enabled. Warning: EXPERIMENTAL, use at your own risk",
                "DAX unsupported by block device. Turning off DAX."
            ]
        );
        assert_eq!(
            dax_messages(REFLINK_CONFLICT, "pmem0").last().map(String::as_str),
            Some("DAX and reflink cannot be used together!")
        );
    }

    #[test]
    fn other_forms() {
        let glued = "[1.0] XFS (pmem1): DAX unsupported by block device. Turning off DAX.[1.1] EXT4-fs (pmem2): DAX unsupported by block device.";
        assert_eq!(dax_fallback_devices(glued), ["pmem1", "pmem2"]);
        let journal = "Nov 29 21:29:00 host kernel: XFS (dm-3): DAX unsupported by block device. Turning off DAX.\n";
        assert_eq!(dax_fallback_devices(journal), ["dm-3"]);
        let dmesg_t = "[Sat Nov 29 21:29:00 2026] XFS (pmem0.1): DAX unsupported by block device. Turning off DAX.\n";
        assert_eq!(dax_fallback_devices(dmesg_t), ["pmem0.1"]);
        assert!(dax_fallback_devices("").is_empty());
        assert!(dax_fallback_devices("DAX unsupported by block device.").is_empty());
        assert!(dax_fallback_devices("XFS (a b): DAX unsupported by block device.").is_empty());
    }
}
