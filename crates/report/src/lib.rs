//! Renders a results directory: the judgement the `analysis` crate makes of it (summary
//! statistics, changes against the baseline, verdicts) as CSV, JSON, charts (PNG and SVG),
//! report.md and report.html. Judges nothing and never runs anything, so `cargo xtask report
//! DIR` can re-render a result set at any time.

pub mod bundle;
pub mod charts;
pub mod compare;
pub mod document;
pub mod export;
pub mod fleet;
pub mod markdown;
pub mod output;
pub mod publication;
pub mod text;
pub mod views;

use std::path::{Path, PathBuf};

pub use analysis::{ResultSet, Summary, summarize};
pub use export::{CsvExporter, ExportError, Exporter, JsonExporter, Output, write_outputs};
pub use markdown::{HtmlExporter, MarkdownExporter};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Read(#[from] results::ReadError),
    #[error(transparent)]
    Export(#[from] ExportError),
}

/// The tables only (CSV and JSON): cheap enough to run after every measured run.
pub fn refresh_tables(dir: &Path) -> Result<Summary, ReportError> {
    let set = ResultSet::load(dir)?;
    let summary = summarize(&set);
    write_outputs(dir, tables(&set, &summary)?)?;
    Ok(summary)
}

/// Everything: tables, charts, report.md and report.html. Returns the summary and the files written.
pub fn render(dir: &Path) -> Result<(Summary, Vec<PathBuf>), ReportError> {
    render_with(dir, publication::Figures::Screen)
}

/// [`render`], and with [`publication::Figures::Publication`] every figure at a journal's size
/// under `charts/publication/` as well.
pub fn render_with(dir: &Path, figures: publication::Figures) -> Result<(Summary, Vec<PathBuf>), ReportError> {
    let set = ResultSet::load(dir)?;
    let summary = summarize(&set);
    let layout = results::ResultsDir::new("");
    let mut files = write_outputs(dir, tables(&set, &summary)?)?;
    // Charts one at a time: each written before the next is drawn.
    let mut captions = Vec::new();
    let mut charts = Vec::new();
    for drawn in views::draw_all(&set, &summary) {
        let (caption, outputs) = drawn.map_err(ExportError::from)?;
        charts.extend(write_outputs(dir, outputs)?);
        captions.push(caption);
    }
    export::remove_stale(dir, &layout.charts_dir(), &charts, views::is_chart)?;
    files.extend(charts);
    if figures == publication::Figures::Publication {
        files.extend(write_outputs(dir, publication::figures(&captions).map_err(ExportError::from)?)?);
    }
    files.extend(write_outputs(dir, MarkdownExporter { charts: captions.clone() }.export(&set, &summary)?)?);
    files.extend(write_outputs(dir, HtmlExporter { charts: captions }.export(&set, &summary)?)?);
    // An appendix an earlier render wrote and this one did not (no shared warning any more).
    export::remove_stale(dir, Path::new(""), &files, |p| {
        p.file_name().is_some_and(|n| markdown::APPENDICES.iter().any(|a| n == *a))
    })?;
    Ok((summary, files))
}

/// The CSV tables and summary.json.
fn tables(set: &ResultSet, summary: &Summary) -> Result<Vec<Output>, ExportError> {
    let mut out = CsvExporter.export(set, summary)?;
    out.extend(JsonExporter.export(set, summary)?);
    Ok(out)
}
