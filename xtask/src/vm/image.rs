//! The guest image: a small Debian 12 built once with mmdebstrap from the package archive and
//! cached outside the repository, keyed by a hash of the package list and the build recipe.
//!
//! The cache directory (`$PGTIER_VM_CACHE`, default `/var/cache/pgtier/vm`) holds one
//! directory per key with `rootfs.img` (ext4, made from the tree with `mke2fs -d`, so no loop
//! device or mount is needed), the guest's own kernel (`vmlinuz`) and initramfs (`initrd.img`,
//! made by the guest's initramfs-tools with only the modules that mount the root), and
//! `manifest.json` (the package versions, the kernel, how long the build took). A directory
//! is complete once `ready` exists; builds are serialised by a lock file.

use std::fmt::Write as _;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

/// Bump when the recipe changes in a way the hashed texts below do not show.
const RECIPE_VERSION: &str = "pgtier-vm-1";
const SUITE: &str = "bookworm";
const MIRRORS: [&str; 3] = [
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
];

/// What the guest runs: the tools pgtier drives on real devices, PostgreSQL, and what the tests
/// use to set up real hardware (nvmet through configfs, md and LVM members, sshd for the guest
/// to be its own storage target host).
pub const GUEST_PACKAGES: &[&str] = &[
    "linux-image-amd64",
    "initramfs-tools",
    "kmod",
    "udev",
    "systemd",
    "util-linux",
    "mount",
    "e2fsprogs",
    "xfsprogs",
    "parted",
    "ndctl",
    "nvme-cli",
    "fio",
    "postgresql-15",
    "postgresql-contrib",
    "lvm2",
    "mdadm",
    "iproute2",
    "procps",
    "openssh-server",
    "openssh-client",
];

/// Host programs the VM needs, with their Debian packages.
pub const HOST_TOOLS: [(&str, &str); 3] =
    [("qemu-system-x86_64", "qemu-system-x86"), ("mmdebstrap", "mmdebstrap"), ("mke2fs", "e2fsprogs")];

const INIT: &str = include_str!("guest/pgtier-init");

/// Files copied into the guest tree after the packages are installed (path, mode, contents).
fn staged_files() -> Vec<(&'static str, u32, String)> {
    vec![
        ("usr/local/sbin/pgtier-init", 0o755, INIT.to_string()),
        ("etc/hostname", 0o644, "pgtier-vm\n".into()),
        ("etc/hosts", 0o644, "127.0.0.1 localhost\n127.0.1.1 pgtier-vm\n".into()),
        ("etc/fstab", 0o644, "LABEL=pgtier-root / ext4 rw,errors=remount-ro 0 1\n".into()),
        // The initramfs only has to mount the root: about 10 MB instead of 40 (MODULES=most),
        // which saves seconds of decompression under TCG.
        ("etc/initramfs-tools/conf.d/pgtier", 0o644, "MODULES=list\n".into()),
        ("etc/initramfs-tools/modules", 0o644, "virtio_pci\nvirtio_blk\next4\n".into()),
        // No md assembly in the initramfs (it waits for arrays that do not exist).
        ("etc/default/mdadm", 0o644, "INITRDSTART='none'\nAUTOCHECK=false\nSTART_DAEMON=false\n".into()),
    ]
}

/// The cache key: a hash of everything that goes into the image.
pub fn recipe_key() -> String {
    let mut text = String::new();
    let _ = writeln!(text, "{RECIPE_VERSION}\n{SUITE}");
    for m in MIRRORS {
        let _ = writeln!(text, "{m}");
    }
    for p in GUEST_PACKAGES {
        let _ = writeln!(text, "package {p}");
    }
    for (path, mode, contents) in staged_files() {
        let _ = writeln!(text, "file {path} {mode:o}\n{contents}");
    }
    format!("{:016x}", fnv1a64(text.as_bytes()))
}

/// FNV-1a, 64 bits: stable across Rust releases (unlike `DefaultHasher`), enough for a cache key.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

pub fn cache_root() -> PathBuf {
    std::env::var_os("PGTIER_VM_CACHE").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/var/cache/pgtier/vm"))
}

/// A built image.
#[derive(Clone, Debug)]
pub struct Image {
    pub dir: PathBuf,
    pub key: String,
}

impl Image {
    pub fn rootfs(&self) -> PathBuf {
        self.dir.join("rootfs.img")
    }
    pub fn kernel(&self) -> PathBuf {
        self.dir.join("vmlinuz")
    }
    pub fn initrd(&self) -> PathBuf {
        self.dir.join("initrd.img")
    }
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
}

/// The cached image for the current recipe, if it is complete.
pub fn cached() -> Option<Image> {
    let key = recipe_key();
    let dir = cache_root().join(&key);
    dir.join("ready").exists().then_some(Image { dir, key })
}

/// Host programs that are missing, as (program, package).
pub fn missing_host_tools() -> Vec<(&'static str, &'static str)> {
    HOST_TOOLS.iter().copied().filter(|(p, _)| journal::command::which(p).is_none()).collect()
}

/// Installs missing host tools from the package archive (as root), or says what to run.
pub fn ensure_host_tools(log: &mut dyn Write) -> Result<()> {
    let missing = missing_host_tools();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    let cmd = format!("apt-get install -y --no-install-recommends {}", packages.join(" "));
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "the VM needs {} (Debian packages {}); install them as root with: apt-get update && {cmd}",
            missing.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", "),
            packages.join(", ")
        );
    }
    let _ = writeln!(log, "vm: installing {} from the package archive", packages.join(", "));
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !apt(&["update", "-q"]) {
        bail!("apt-get update failed; is the package archive reachable?");
    }
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(&packages);
    if !apt(&args) {
        bail!("`{cmd}` failed");
    }
    let still = missing_host_tools();
    if !still.is_empty() {
        bail!("still missing after install: {:?}", still);
    }
    Ok(())
}

/// Holds the cache's lock file for as long as it lives.
type CacheLock = nix::fcntl::Flock<std::fs::File>;

fn lock_cache(root: &Path) -> Result<CacheLock> {
    std::fs::create_dir_all(root).with_context(|| format!("create {}", root.display()))?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(".lock"))
        .with_context(|| format!("open {}/.lock", root.display()))?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| anyhow!("lock {}/.lock: {e}", root.display()))
}

/// The image for the current recipe: the cached one, or a new build (`rebuild` forces one).
/// Progress goes to `log`.
pub fn ensure(rebuild: bool, log: &mut dyn Write) -> Result<Image> {
    if !rebuild && let Some(img) = cached() {
        return Ok(img);
    }
    ensure_host_tools(log)?;
    if !nix::unistd::geteuid().is_root() {
        bail!("building the VM image needs root (mmdebstrap installs packages into a chroot)");
    }
    let root = cache_root();
    let _lock = lock_cache(&root)?;
    // Someone else may have built it while we waited for the lock.
    if !rebuild && let Some(img) = cached() {
        return Ok(img);
    }
    let key = recipe_key();
    let dir = root.join(&key);
    let build = root.join(format!("{key}.build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build)?;
    let started = Instant::now();
    let result = build_into(&build, &key, log);
    if let Err(e) = result {
        let _ = writeln!(log, "vm: build failed; its log is in {}", build.join("build.log").display());
        let _ = std::fs::remove_dir_all(build.join("tree"));
        return Err(e);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&build, &dir).with_context(|| format!("rename {} -> {}", build.display(), dir.display()))?;
    std::fs::write(dir.join("ready"), format!("{:.1}\n", started.elapsed().as_secs_f64()))?;
    // Older keys' images are only disk space now.
    if let Ok(rd) = std::fs::read_dir(&root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name != key && !name.starts_with('.') && e.path().join("ready").exists() {
                let _ = writeln!(log, "vm: removing the image of an older recipe: {}", e.path().display());
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let _ = writeln!(log, "vm: image ready in {} ({:.0} s)", dir.display(), started.elapsed().as_secs_f64());
    Ok(Image { dir, key })
}

fn run_logged(cmd: &mut Command, log_file: &Path, what: &str) -> Result<()> {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log_file)?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .status()
        .with_context(|| format!("start {what}"))?;
    if !status.success() {
        let text = std::fs::read_to_string(log_file).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
        bail!("{what} failed ({status}); last lines of {}:\n{}", log_file.display(), tail.join("\n"));
    }
    Ok(())
}

fn build_into(build: &Path, key: &str, log: &mut dyn Write) -> Result<()> {
    let log_file = build.join("build.log");
    let tree = build.join("tree");
    let staging = build.join("staging");
    for (path, mode, contents) in staged_files() {
        let p = staging.join(path);
        std::fs::create_dir_all(p.parent().unwrap())?;
        std::fs::write(&p, contents)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
    }
    let t0 = Instant::now();
    let _ = writeln!(
        log,
        "vm: building the guest image (Debian {SUITE}, {} packages) with mmdebstrap from deb.debian.org; log: {}",
        GUEST_PACKAGES.len(),
        log_file.display()
    );
    let mut mm = mmdebstrap_command(&staging, &tree)?;
    run_logged(&mut mm, &log_file, "mmdebstrap")?;
    let mmdebstrap_s = t0.elapsed().as_secs_f64();
    let _ = writeln!(log, "vm: packages installed ({mmdebstrap_s:.0} s)");

    let kernel_version = copy_kernel(&tree, build)?;

    let versions = Command::new("chroot")
        .arg(&tree)
        .args(["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"])
        .args(GUEST_PACKAGES)
        .output()
        .context("dpkg-query in the guest tree")?;
    let versions = String::from_utf8_lossy(&versions.stdout).into_owned();

    let t1 = Instant::now();
    run_logged(
        Command::new("mke2fs")
            .args(["-q", "-t", "ext4", "-L", "pgtier-root", "-F", "-d"])
            .arg(&tree)
            .arg(build.join("rootfs.img"))
            .arg("4G"),
        &log_file,
        "mke2fs",
    )?;
    let mke2fs_s = t1.elapsed().as_secs_f64();
    std::fs::remove_dir_all(&tree).with_context(|| format!("remove {}", tree.display()))?;
    std::fs::remove_dir_all(&staging)?;

    let packages: serde_json::Map<String, serde_json::Value> = versions
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, v)| (p.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    let manifest = serde_json::json!({
        "key": key,
        "recipe": RECIPE_VERSION,
        "suite": SUITE,
        "mirrors": MIRRORS,
        "kernel": kernel_version,
        "packages": packages,
        "seconds": { "mmdebstrap": mmdebstrap_s, "mke2fs": mke2fs_s },
    });
    std::fs::write(build.join("manifest.json"), serde_json::to_string_pretty(&manifest)? + "\n")?;
    Ok(())
}

/// mmdebstrap's command for the guest tree at `tree`, with `staging`'s files copied in.
/// Downloaded packages are kept for the next build (a recipe change), as mmdebstrap's manual
/// describes: sync-in before, sync-out after, and the chroot's copies removed.
fn mmdebstrap_command(staging: &Path, tree: &Path) -> Result<Command> {
    let debs = cache_root().join("debs");
    std::fs::create_dir_all(&debs)?;
    let debs = debs.display().to_string();
    let mut mm = Command::new("mmdebstrap");
    mm.args(["--mode=root", "--variant=apt", "--components=main", "--skip=download/empty"])
        .arg(format!("--include={}", GUEST_PACKAGES.join(",")))
        .arg("--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/")
        .arg(format!("--setup-hook=sync-in {debs} /var/cache/apt/archives/"))
        .arg(format!("--customize-hook=sync-out /var/cache/apt/archives {debs}"))
        .arg("--customize-hook=rm -f \"$1\"/var/cache/apt/archives/*.deb")
        .arg(format!("--customize-hook=cp -a '{}'/. \"$1\"/", staging.display()))
        .arg("--customize-hook=chroot \"$1\" update-initramfs -u -k all")
        .arg(SUITE)
        .arg(tree)
        .args(MIRRORS)
        .env("LC_ALL", "C");
    Ok(mm)
}

/// Copies the guest's own kernel and initramfs out of `tree` into `build`, for qemu's direct
/// kernel boot; the kernel's version.
fn copy_kernel(tree: &Path, build: &Path) -> Result<String> {
    let boot = tree.join("boot");
    let find = |prefix: &str| -> Result<PathBuf> {
        std::fs::read_dir(&boot)?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
            .ok_or_else(|| anyhow!("no {prefix}* in {}", boot.display()))
    };
    let vmlinuz = find("vmlinuz-")?;
    let kernel_version = vmlinuz.file_name().unwrap().to_string_lossy().trim_start_matches("vmlinuz-").to_string();
    std::fs::copy(&vmlinuz, build.join("vmlinuz"))?;
    std::fs::copy(find("initrd.img-")?, build.join("initrd.img"))?;
    Ok(kernel_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_stable_and_follows_the_recipe() {
        assert_eq!(recipe_key(), recipe_key());
        assert_eq!(recipe_key().len(), 16);
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn the_guest_has_the_tools_the_issue_names() {
        for p in ["udev", "util-linux", "xfsprogs", "parted", "ndctl", "nvme-cli", "fio", "postgresql-15", "kmod"] {
            assert!(GUEST_PACKAGES.contains(&p), "{p}");
        }
        assert!(INIT.contains("/job/.vm/status"));
    }
}
