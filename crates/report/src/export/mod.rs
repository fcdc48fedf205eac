//! Exporters: one result model, several formats behind one trait. An exporter only renders: it
//! returns its files as [`Output`]s (a path relative to the output directory and the bytes), and
//! [`write_outputs`] is the one place that puts them on disk, each atomically.

mod contrast;
pub(crate) mod csv;
pub(crate) mod tables;

use std::path::{Path, PathBuf};

use results::write_atomic;

pub(crate) use self::csv::csv_bytes;
pub use self::tables::CsvExporter;
pub(crate) use crate::output::layout;
pub use crate::output::{Bitmap, Body, Output};
use analysis::model::{ResultSet, Summary};

/// Renders one view of a result set into files.
pub trait Exporter {
    fn export(&self, set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error(transparent)]
    Chart(#[from] crate::charts::ChartError),
    #[error(transparent)]
    Publication(#[from] crate::publication::PublicationError),
}

/// Writes every output under `root`, each atomically (a reader never sees half a file); returns
/// the paths written, in order.
pub fn write_outputs(root: &Path, outputs: impl IntoIterator<Item = Output>) -> Result<Vec<PathBuf>, ExportError> {
    let mut written = Vec::new();
    for o in outputs {
        let path = root.join(&o.path);
        let err = |e: std::io::Error| ExportError::Write { path: path.clone(), message: e.to_string() };
        match o.body {
            Body::Bytes(b) => write_atomic(&path, &b).map_err(err)?,
            Body::Png(bitmap) => {
                let png = encode_png(&bitmap, &path).map_err(err)?;
                write_atomic(&path, &png).map_err(err)?;
            }
        }
        written.push(path);
    }
    Ok(written)
}

/// Removes the files under `root/dir` that `is_output` claims and this render did not write
/// (`written`, as [`write_outputs`] returned them): a chart whose cells are gone, an appendix a
/// re-render has no more. The directory itself is made when missing, so it exists even when
/// nothing was written into it. Subdirectories are left alone.
pub fn remove_stale(
    root: &Path,
    dir: &Path,
    written: &[PathBuf],
    is_output: impl Fn(&Path) -> bool,
) -> Result<(), ExportError> {
    let dir = root.join(dir);
    let err = |path: &Path, what: &str, e: std::io::Error| ExportError::Write {
        path: path.to_path_buf(),
        message: if what.is_empty() { e.to_string() } else { format!("{what}: {e}") },
    };
    std::fs::create_dir_all(&dir).map_err(|e| err(&dir, "", e))?;
    let entries = std::fs::read_dir(&dir).map_err(|e| err(&dir, "", e))?;
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_file() && is_output(&path) && !written.contains(&path) {
            std::fs::remove_file(&path).map_err(|e| err(&path, "remove a stale output", e))?;
        }
    }
    Ok(())
}

/// PNG bytes of a bitmap, encoded through a scratch file beside `path` (removed again).
fn encode_png(bitmap: &Bitmap, path: &Path) -> std::io::Result<Vec<u8>> {
    use plotters::prelude::{BitMapBackend, DrawingBackend};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let scratch = dir.join(format!(".{name}.encode-{}.png", std::process::id()));
    let result = (|| {
        let mut b = BitMapBackend::new(&scratch, (bitmap.width, bitmap.height));
        b.blit_bitmap((0, 0), (bitmap.width, bitmap.height), &bitmap.rgb)
            .and_then(|_| b.present())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        std::fs::read(&scratch)
    })();
    let _ = std::fs::remove_file(&scratch);
    result
}

/// `summary.json`: the summary and warnings, for other tools.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, _set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
        let path = layout().summary_json();
        let bytes = serde_json::to_vec_pretty(summary)
            .map_err(|e| ExportError::Write { path: path.clone(), message: e.to_string() })?;
        Ok(vec![Output::bytes(path, bytes)])
    }
}
