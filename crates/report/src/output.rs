//! What a rendered view is made of: files as a path relative to the directory written into and
//! their bytes (or a chart's pixels). The leaf every renderer builds on; writing them is
//! [`crate::export::write_outputs`]'s.

use std::path::PathBuf;

/// One file of a rendered view.
#[derive(Debug)]
pub struct Output {
    /// Relative to the directory written into (the results directory, or a comparison's).
    pub path: PathBuf,
    pub body: Body,
}

/// What a file holds.
#[derive(Debug)]
pub enum Body {
    Bytes(Vec<u8>),
    /// A chart's pixels, encoded as PNG when written (plotters reaches its PNG encoder through a
    /// file only).
    Png(Bitmap),
}

/// RGB pixels, 3 bytes each, row by row.
pub struct Bitmap {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl std::fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bitmap({}x{})", self.width, self.height)
    }
}

impl Output {
    pub fn bytes(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Output {
        Output { path: path.into(), body: Body::Bytes(bytes) }
    }
}

/// Paths in the results layout relative to the results directory (`runs.csv`, `charts/`...).
pub(crate) fn layout() -> results::ResultsDir {
    results::ResultsDir::new("")
}
