//! `cargo xtask report DIR --bundle OUT.tar.gz`: a result set as one file to hand to a
//! co-author or a journal: the manifest, the tables, the report (report.md with its appendices,
//! report.html), the charts and the probes' figures; the runs' raw outputs (`runs/`) only when
//! asked, since they are most of a result set's size. The experiment file is taken from where
//! the manifest says it was, when it is there, and named in the bundle's note as it is now.

use std::fs::File;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

/// The files and directories of a result set a bundle holds, when present (relative to it).
const KEPT: [&str; 15] = [
    "manifest.json",
    "summary.csv",
    "contrast.csv",
    "summary.json",
    "runs.csv",
    "series.csv",
    "statements.csv",
    "devices.csv",
    "contests.json",
    "plan.txt",
    "report.md",
    "report.html",
    "charts",
    "probes",
    "comparison",
];

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{0}: the bundle must be a new .tar.gz (or .tgz) file")]
    Name(PathBuf),
    #[error("{0} exists: name a new file")]
    Exists(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// What went into a bundle.
#[derive(Debug)]
pub struct Bundled {
    /// Paths inside the archive, in order.
    pub entries: Vec<String>,
    /// The experiment file included, if it was found.
    pub experiment: Option<PathBuf>,
}

/// Writes `out` (a new `.tar.gz`) from the result set in `dir`; `raw` adds `runs/`.
pub fn write(dir: &Path, out: &Path, raw: bool) -> Result<Bundled, BundleError> {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !(name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
        return Err(BundleError::Name(out.to_path_buf()));
    }
    if out.exists() {
        return Err(BundleError::Exists(out.to_path_buf()));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BundleError::Io { path, source }
    };
    let top = name.trim_end_matches(".tar.gz").trim_end_matches(".tgz").to_string();
    let manifest = results::ResultsDir::new(dir).read_manifest().ok();
    let file = File::create_new(out).map_err(io(out))?;
    let mut tar = tar::Builder::new(GzEncoder::new(file, Compression::default()));
    tar.follow_symlinks(false);
    let mut entries = Vec::new();
    let mut add = |rel: &str, tar: &mut tar::Builder<GzEncoder<File>>| -> Result<(), BundleError> {
        let path = dir.join(rel);
        let inside = format!("{top}/{rel}");
        if path.is_dir() {
            tar.append_dir_all(&inside, &path).map_err(io(&path))?;
        } else if path.is_file() {
            tar.append_path_with_name(&path, &inside).map_err(io(&path))?;
        } else {
            return Ok(());
        }
        entries.push(inside);
        Ok(())
    };
    for rel in KEPT.iter().copied().chain(crate::markdown::APPENDICES) {
        add(rel, &mut tar)?;
    }
    if raw {
        add("runs", &mut tar)?;
    }
    let experiment = manifest.as_ref().map(|m| PathBuf::from(&m.experiment_file)).filter(|p| p.is_file());
    if let Some(p) = &experiment {
        let inside = format!("{top}/experiment.toml");
        tar.append_path_with_name(p, &inside).map_err(io(p))?;
        entries.push(inside);
    }
    let note = note(manifest.as_ref(), experiment.as_deref(), raw);
    let mut header = tar::Header::new_gnu();
    header.set_size(note.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    let inside = format!("{top}/BUNDLE.txt");
    tar.append_data(&mut header, &inside, note.as_bytes()).map_err(io(out))?;
    entries.push(inside);
    let gz = tar.into_inner().map_err(io(out))?;
    gz.finish().map_err(io(out))?;
    Ok(Bundled { entries, experiment })
}

/// The bundle's note: what it holds and what it leaves out.
fn note(m: Option<&results::Manifest>, experiment: Option<&Path>, raw: bool) -> String {
    let mut s = String::from(
        "A pgtier result set, bundled by `cargo xtask report DIR --bundle`: manifest.json (the configuration as resolved, host, tools, devices), the tables (summary, runs, series, statements, devices), report.md with its appendices, report.html, the charts (PNG and SVG) and the device probes.\n",
    );
    if let Some(m) = m {
        s.push_str(&format!(
            "Experiment {} (pgtier {}, commit {}), command: {}\n",
            m.experiment_name,
            m.pgtier_version,
            m.git_commit.as_deref().unwrap_or("not recorded"),
            m.command_line
        ));
        match experiment {
            Some(p) => s.push_str(&format!(
                "experiment.toml: {} as it was when the bundle was made (the result set does not keep the file; manifest.json's resolved_config is what the run used)\n",
                p.display()
            )),
            None => s.push_str(&format!(
                "The experiment file ({}) was not found where the manifest names it; manifest.json's resolved_config is what the run used.\n",
                m.experiment_file
            )),
        }
    }
    s.push_str(if raw {
        "runs/: every run's raw tool output is included.\n"
    } else {
        "Left out: runs/ (every run's raw tool output; `--bundle-raw` includes it).\n"
    });
    s
}
