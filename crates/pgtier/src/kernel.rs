//! Kernel settings an experiment asks for (sysctls, transparent huge pages, CPU governor):
//! each old value is written to the run record before the new one, so teardown restores it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use experiment::KernelSettings;
use journal::{Journal, Undo};

/// The word in brackets of a sysfs choice list (`always [madvise] never` -> `madvise`).
pub fn selected(choice: &str) -> String {
    choice
        .split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']'))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| choice.trim().to_string())
}

fn set(journal: &Journal, path: &Path, old: String, new: &str, what: &str, log: &mut Vec<String>) -> Result<()> {
    if old.trim() == new.trim() {
        log.push(format!("{what} already {new}"));
        return Ok(());
    }
    journal.record(Undo::RestoreFile { path: path.to_path_buf(), contents: old.clone() }, what)?;
    std::fs::write(path, new).with_context(|| format!("set {what} = {new} ({})", path.display()))?;
    log.push(format!("{what}: {} -> {new} (restored at teardown)", old.trim()));
    Ok(())
}

/// Applies the settings; returns one line per setting for the manifest.
pub fn apply(k: &KernelSettings, journal: &Journal) -> Result<Vec<String>> {
    let mut log = Vec::new();
    for (key, value) in &k.sysctls {
        let path = PathBuf::from("/proc/sys").join(key.replace('.', "/"));
        let old = std::fs::read_to_string(&path).with_context(|| format!("sysctl {key} does not exist here"))?;
        set(journal, &path, old, value, key, &mut log)?;
    }
    if let Some(thp) = &k.transparent_hugepages {
        let path = PathBuf::from("/sys/kernel/mm/transparent_hugepage/enabled");
        let old = selected(&std::fs::read_to_string(&path).context("transparent huge pages are not exposed")?);
        set(journal, &path, old, thp, "transparent_hugepage/enabled", &mut log)?;
    }
    if let Some(gov) = &k.cpu_governor {
        let mut any = false;
        for e in std::fs::read_dir("/sys/devices/system/cpu").into_iter().flatten().flatten() {
            let path = e.path().join("cpufreq/scaling_governor");
            if let Ok(old) = std::fs::read_to_string(&path) {
                any = true;
                set(journal, &path, old, gov, &format!("{} governor", e.file_name().to_string_lossy()), &mut log)?;
            }
        }
        if !any {
            log.push(format!("CPU governor {gov} asked for, but this machine exposes no cpufreq governor (typical of VMs); nothing changed"));
        }
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    #[test]
    fn selected_choice() {
        assert_eq!(super::selected("always [madvise] never\n"), "madvise");
        assert_eq!(super::selected("performance\n"), "performance");
    }
}
