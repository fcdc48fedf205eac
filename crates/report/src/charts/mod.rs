//! Chart rendering (PNG and SVG) with an embedded font, so no system font packages are needed.
//! A chart is data ([`BarChart`], [`LineChart`]); [`render`] turns it into two outputs.

use std::path::Path;
use std::sync::Once;

mod bar;
mod forest;
mod line;
mod stacked;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::output::{Bitmap, Body, Output};

static FONTS: Once = Once::new();

/// Registers the embedded DejaVu Sans (Bitstream Vera licence, see assets/fonts) once.
pub fn register_fonts() {
    FONTS.call_once(|| {
        let regular: &'static [u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");
        let bold: &'static [u8] = include_bytes!("../../../../assets/fonts/DejaVuSans-Bold.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, regular).ok();
        plotters::style::register_font("sans-serif", FontStyle::Bold, bold).ok();
    });
}

/// Colours for placements, in placement order; the same placement gets the same colour in
/// every chart of a report.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x4C, 0x72, 0xB0),
    RGBColor(0xDD, 0x84, 0x52),
    RGBColor(0x55, 0xA8, 0x68),
    RGBColor(0xC4, 0x4E, 0x52),
    RGBColor(0x81, 0x72, 0xB3),
    RGBColor(0x93, 0x78, 0x60),
    RGBColor(0xDA, 0x8B, 0xC3),
    RGBColor(0x8C, 0x8C, 0x8C),
];

pub fn placement_color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// What precedes the interval after Holm's correction in a bar's annotation.
pub const HOLM_MARK: &str = ", after Holm ";

/// One bar.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Legend text (the placement and what it puts where); equal texts share one legend entry.
    pub legend: String,
    pub value: f64,
    /// Half-width of the error bar (95% CI), if known.
    pub error: Option<f64>,
    /// An error bar that is not symmetric around the value (a ratio's 95% interval on logs):
    /// its low and high end; drawn instead of `error` when set.
    pub range: Option<(f64, f64)>,
    pub color: RGBColor,
    /// Printed above the bar, e.g. `+44.6%` or `baseline`; `+44.6% [+30.0, +60.0] (inconclusive)`
    /// is drawn as the change with its verdict over its interval, and an interval after Holm
    /// (`+44.6% [+30.0, +60.0], after Holm [+25.5, +66.0]`, [`HOLM_MARK`]) on a line below,
    /// the 95% one then labelled `95%`.
    pub annotation: String,
    /// Drawn pale and marked: the change is not shown to be real (inconclusive, equivalent or
    /// without an interval).
    pub within_noise: bool,
}

/// Bars side by side under one x-axis label.
#[derive(Clone, Debug)]
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// A bar chart: groups along the x axis (one bar each for a plain chart).
#[derive(Clone, Debug)]
pub struct BarChart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub groups: Vec<BarGroup>,
    /// Small print at the bottom (environment, method).
    pub footnote: Vec<String>,
    /// Decimal places of the value labels.
    pub value_decimals: usize,
    /// Appended to value labels (e.g. `%`).
    pub value_suffix: &'static str,
    /// A dashed horizontal line, e.g. 1.0 for normalised charts.
    pub reference: Option<(f64, String)>,
}

/// One line of a line chart.
#[derive(Clone, Debug)]
pub struct Line {
    pub name: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
    /// Half-widths of error bars at each point (same length as points), if any.
    pub errors: Option<Vec<f64>>,
    pub markers: bool,
    pub dashed: bool,
    /// A point to mark, with its label (e.g. the peak).
    pub mark: Option<(f64, f64, String)>,
}

/// A line chart (scaling curves, per-second series).
#[derive(Clone, Debug)]
pub struct LineChart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Line>,
    /// Vertical marks (x, label), e.g. checkpoints.
    pub vlines: Vec<(f64, String)>,
    pub footnote: Vec<String>,
    /// Integer x values only (client counts).
    pub integer_x: bool,
}

/// One stacked bar: segments (series name, share in %) bottom up, and a note above it.
#[derive(Clone, Debug)]
pub struct StackedBar {
    pub label: String,
    pub segments: Vec<(String, f64)>,
    pub note: String,
}

/// Bars of shares that sum to 100% each (wait events per placement).
#[derive(Clone, Debug)]
pub struct StackedChart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub bars: Vec<StackedBar>,
    /// Every series with its colour, in stacking order (the legend).
    pub series: Vec<(String, RGBColor)>,
    pub footnote: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("chart {path}: {message}")]
pub struct ChartError {
    pub path: String,
    pub message: String,
}

pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 760;

/// Either kind of chart.
#[derive(Clone, Debug)]
pub enum Chart {
    Bar(BarChart),
    Line(LineChart),
    Stacked(StackedChart),
    Forest(ForestChart),
}

/// A verdict's marker in a forest plot: the shape tells verdicts apart without colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Circle,
    Square,
    Triangle,
    Ring,
    Cross,
}

impl Mark {
    /// The marker as a character, for legends and captions.
    pub fn glyph(self) -> &'static str {
        match self {
            Mark::Circle => "●",
            Mark::Square => "■",
            Mark::Triangle => "▲",
            Mark::Ring => "○",
            Mark::Cross => "✕",
        }
    }
}

/// One row of a forest plot: a change in % with its 95% interval (NaN ends: no interval).
#[derive(Clone, Debug)]
pub struct ForestRow {
    pub label: String,
    /// Printed right of the plot: `+44.6% [+30.1, +61.2]`.
    pub value: String,
    pub point: f64,
    pub low: f64,
    pub high: f64,
    /// The interval after Holm's correction when it is wider (drawn as a thin line beyond the
    /// 95% one): the interval that goes with the verdict.
    pub holm: Option<(f64, f64)>,
    pub mark: Mark,
    pub color: RGBColor,
    /// A published figure to hold the interval against: a point (low = high) or a range, in %.
    pub published: Option<(f64, f64)>,
}

/// A forest plot: every change of a study in one figure.
#[derive(Clone, Debug)]
pub struct ForestChart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub rows: Vec<ForestRow>,
    /// The equivalence margin (±%), shaded.
    pub margin_pct: f64,
    /// Marker, verdict and colour of each verdict shown.
    pub legend: Vec<(Mark, String, RGBColor)>,
    pub footnote: Vec<String>,
}

impl Chart {
    pub fn title(&self) -> &str {
        match self {
            Chart::Bar(c) => &c.title,
            Chart::Line(c) => &c.title,
            Chart::Stacked(c) => &c.title,
            Chart::Forest(c) => &c.title,
        }
    }

    /// What the chart's intervals are, for its caption.
    pub fn interval_note(&self) -> &'static str {
        match self {
            Chart::Bar(c) if c.groups.iter().flat_map(|g| &g.bars).any(|b| b.range.is_some()) => {
                "error bars: each ratio's 95% interval"
            }
            Chart::Bar(c) if c.groups.iter().flat_map(|g| &g.bars).any(|b| b.error.is_some()) => {
                "error bars: each mean's 95% confidence interval; labels: the change against the baseline with its 95% interval"
            }
            Chart::Line(c) if c.series.iter().any(|s| s.errors.is_some()) => {
                "error bars: each point's 95% confidence interval"
            }
            Chart::Stacked(_) => "shares of backend time, no interval",
            Chart::Forest(_) => "each change's point and 95% interval; shaded: the equivalence margin",
            _ => "no intervals drawn",
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        match self {
            Chart::Bar(c) => bar::draw_bar_chart(root, c),
            Chart::Line(c) => line::draw_line_chart(root, c),
            Chart::Stacked(c) => stacked::draw_stacked_chart(root, c),
            Chart::Forest(c) => forest::draw_forest_chart(root, c),
        }
    }
}

/// Renders a chart as `<stem>.png` (pixels, encoded when written) and `<stem>.svg`; `stem` is
/// relative to the directory the outputs will be written into.
pub fn render(chart: &Chart, stem: &Path) -> Result<[Output; 2], ChartError> {
    register_fonts();
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    let e = |p: &Path, m: String| ChartError { path: p.display().to_string(), message: m };
    let mut rgb = vec![0u8; 3 * (WIDTH * HEIGHT) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&root).map_err(|m| e(&png, m))?;
        root.present().map_err(|x| e(&png, x.to_string()))?;
    }
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&root).map_err(|m| e(&svg, m))?;
        root.present().map_err(|x| e(&svg, x.to_string()))?;
    }
    Ok([
        Output { path: png, body: Body::Png(Bitmap { width: WIDTH, height: HEIGHT, rgb }) },
        Output::bytes(svg, text.into_bytes()),
    ])
}

fn legend_of<'a>(items: impl Iterator<Item = (&'a str, RGBColor)>) -> Vec<(String, RGBColor)> {
    let mut out: Vec<(String, RGBColor)> = Vec::new();
    for (t, c) in items {
        if !t.is_empty() && !out.iter().any(|(x, _)| x == t) {
            out.push((t.to_string(), c));
        }
    }
    out
}

fn s<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Thousands separators for labels.
pub fn group_digits(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) =
        text.split_once('.').map(|(a, b)| (a.to_string(), Some(b.to_string()))).unwrap_or((text.clone(), None));
    let mut out = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(&f);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

/// Splits `text` into lines no wider than `max` (as `width` measures): between the clauses of a
/// `; `-separated text first, then between words; a word wider than `max` keeps a line of its
/// own. A text that fits stays one line, unchanged.
pub fn wrap(text: &str, max: i32, width: impl Fn(&str) -> i32) -> Vec<String> {
    if width(text) <= max {
        return vec![text.to_string()];
    }
    let clauses: Vec<String> = {
        let parts: Vec<&str> = text.split("; ").collect();
        let last = parts.len() - 1;
        parts.iter().enumerate().map(|(i, p)| if i < last { format!("{p};") } else { p.to_string() }).collect()
    };
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let push = |piece: &str, line: &mut String, lines: &mut Vec<String>| {
        let joined = if line.is_empty() { piece.to_string() } else { format!("{line} {piece}") };
        if line.is_empty() || width(&joined) <= max {
            *line = joined;
        } else {
            lines.push(std::mem::replace(line, piece.to_string()));
        }
    };
    for clause in &clauses {
        if width(clause) <= max {
            push(clause, &mut line, &mut lines);
        } else {
            for word in clause.split(' ') {
                push(word, &mut line, &mut lines);
            }
        }
    }
    lines.push(line);
    lines
}

/// Draws the title, subtitle, a legend row and the footnote; returns the area left for the plot.
/// The legend sits above the plot, so it never hides a bar or its label. Title, subtitle and
/// footnote lines wider than the canvas are wrapped.
pub fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    legend: &[(String, RGBColor)],
    footnote: &[String],
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(s)?;
    let (w, h) = root.dim_in_pixel();
    let width = |text: &str, font: &FontDesc| {
        root.estimate_text_size(text, &font.clone().into_text_style(root))
            .map(|(tw, _)| tw as i32)
            .unwrap_or(8 * text.len() as i32)
    };
    let max = w as i32 - 48;
    let title_font = ("sans-serif", 30).into_font().style(FontStyle::Bold);
    let title_lines = wrap(title, max, |t| width(t, &title_font));
    for (i, line) in title_lines.iter().enumerate() {
        root.draw(&Text::new(line.clone(), (24, 14 + 36 * i as i32), title_font.color(&BLACK))).map_err(s)?;
    }
    let below_title = 36 * (title_lines.len() as i32 - 1);
    let mut top = 56 + below_title;
    if !subtitle.is_empty() {
        let font = ("sans-serif", 19).into_font();
        let lines = wrap(subtitle, max, |t| width(t, &font));
        for (i, line) in lines.iter().enumerate() {
            let y = 54 + below_title + 24 * i as i32;
            root.draw(&Text::new(line.clone(), (24, y), font.color(&RGBColor(0x44, 0x44, 0x44)))).map_err(s)?;
        }
        top = 84 + below_title + 24 * (lines.len() as i32 - 1);
    }
    if !legend.is_empty() {
        let font = ("sans-serif", 16).into_font();
        let (mut x, mut y) = (24i32, top + 4);
        for (text, color) in legend {
            let tw = width(text, &font);
            if x + 26 + tw > w as i32 - 24 {
                x = 24;
                y += 24;
            }
            root.draw(&Rectangle::new([(x, y + 2), (x + 18, y + 16)], color.filled())).map_err(s)?;
            root.draw(&Text::new(text.clone(), (x + 24, y), font.clone().color(&BLACK))).map_err(s)?;
            x += 24 + tw + 28;
        }
        top = y + 28;
    }
    let foot_font = ("sans-serif", 15).into_font();
    let foot_lines: Vec<String> = footnote.iter().flat_map(|l| wrap(l, max, |t| width(t, &foot_font))).collect();
    let foot_h = 20 * foot_lines.len() as i32 + 12;
    for (i, line) in foot_lines.iter().enumerate() {
        let y = h as i32 - foot_h + 6 + 20 * i as i32;
        root.draw(&Text::new(line.clone(), (24, y), foot_font.color(&RGBColor(0x55, 0x55, 0x55)))).map_err(s)?;
    }
    Ok(root.margin(top as u32, foot_h as u32, 0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_clauses_then_words() {
        let width = |t: &str| t.chars().count() as i32;
        assert_eq!(wrap("short; text", 20, width), ["short; text"]);
        assert_eq!(wrap("first clause; second clause; third", 28, width), ["first clause; second clause;", "third"]);
        assert_eq!(wrap("one two three four; five", 10, width), ["one two", "three", "four; five"]);
        assert_eq!(wrap("unbreakable-word-here", 5, width), ["unbreakable-word-here"]);
    }

    #[test]
    fn digits() {
        assert_eq!(group_digits(1234567.891, 1), "1,234,567.9");
        assert_eq!(group_digits(999.0, 0), "999");
        assert_eq!(group_digits(-1000.0, 0), "-1,000");
    }

    fn bar(legend: &str, value: f64, i: usize, note: &str, noise: bool) -> Bar {
        Bar {
            legend: legend.into(),
            value,
            error: Some(5.0),
            range: None,
            color: placement_color(i),
            annotation: note.into(),
            within_noise: noise,
        }
    }

    #[test]
    fn renders_png_and_svg() {
        let d = tempfile::tempdir().unwrap();
        let chart = BarChart {
            title: "t".into(),
            subtitle: "s".into(),
            x_label: "placement".into(),
            y_label: "TPS".into(),
            groups: vec![
                BarGroup { label: "a".into(), bars: vec![bar("a", 100.0, 0, "baseline", false)] },
                BarGroup { label: "b".into(), bars: vec![bar("b", 144.6, 1, "+44.6%", true)] },
            ],
            footnote: vec!["foot".into()],
            value_decimals: 0,
            value_suffix: "",
            reference: Some((100.0, "baseline".into())),
        };
        crate::export::write_outputs(d.path(), render(&Chart::Bar(chart), Path::new("x")).unwrap()).unwrap();
        let png = std::fs::read(d.path().join("x.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let svg = std::fs::read_to_string(d.path().join("x.svg")).unwrap();
        assert!(svg.contains("+44.6%") && svg.contains("baseline"));
    }

    #[test]
    fn renders_a_line_chart() {
        let d = tempfile::tempdir().unwrap();
        let chart = LineChart {
            title: "scaling".into(),
            subtitle: String::new(),
            x_label: "clients".into(),
            y_label: "TPS".into(),
            series: vec![Line {
                name: "a".into(),
                color: placement_color(0),
                points: vec![(1.0, 10.0), (2.0, 20.0), (4.0, 25.0)],
                errors: Some(vec![1.0, 2.0, f64::NAN]),
                markers: true,
                dashed: false,
                mark: Some((4.0, 25.0, "peak 25".into())),
            }],
            vlines: vec![(2.5, "checkpoint".into())],
            footnote: vec![],
            integer_x: true,
        };
        crate::export::write_outputs(d.path(), render(&Chart::Line(chart), Path::new("l")).unwrap()).unwrap();
        let svg = std::fs::read_to_string(d.path().join("l.svg")).unwrap();
        assert!(svg.contains("peak 25") && svg.contains("checkpoint"));
    }
}
