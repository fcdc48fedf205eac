//! Chart rendering (PNG and SVG) with an embedded font, so no system font packages are needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

static FONTS: Once = Once::new();

/// Registers the embedded DejaVu Sans (Bitstream Vera licence, see assets/fonts) once.
pub fn register_fonts() {
    FONTS.call_once(|| {
        let regular: &'static [u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
        let bold: &'static [u8] = include_bytes!("../../../assets/fonts/DejaVuSans-Bold.ttf");
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

/// One bar.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Legend text (the placement and what it puts where); equal texts share one legend entry.
    pub legend: String,
    pub value: f64,
    /// Half-width of the error bar (95% CI), if known.
    pub error: Option<f64>,
    pub color: RGBColor,
    /// Printed above the bar, e.g. `+44.6%` or `baseline`.
    pub annotation: String,
    /// Drawn pale and marked: the change is within the noise.
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

#[derive(Debug, thiserror::Error)]
#[error("chart {path}: {message}")]
pub struct ChartError {
    pub path: String,
    pub message: String,
}

pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 760;

/// Renders a chart as `<stem>.png` and `<stem>.svg` with `draw` for each backend.
fn render(
    stem: &Path,
    draw_png: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<(), String>,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<(), ChartError> {
    register_fonts();
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    let e = |p: &Path, m: String| ChartError { path: p.display().to_string(), message: m };
    {
        let root = BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area();
        draw_png(&root).map_err(|m| e(&png, m))?;
        root.present().map_err(|x| e(&png, x.to_string()))?;
    }
    {
        let root = SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw_svg(&root).map_err(|m| e(&svg, m))?;
        root.present().map_err(|x| e(&svg, x.to_string()))?;
    }
    Ok(())
}

/// Renders a bar chart as `<stem>.png` and `<stem>.svg`.
pub fn render_bar_chart(chart: &BarChart, stem: &Path) -> Result<(), ChartError> {
    render(stem, |r| draw_bar_chart(r, chart), |r| draw_bar_chart(r, chart))
}

/// Renders a line chart as `<stem>.png` and `<stem>.svg`.
pub fn render_line_chart(chart: &LineChart, stem: &Path) -> Result<(), ChartError> {
    render(stem, |r| draw_line_chart(r, chart), |r| draw_line_chart(r, chart))
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

/// Draws the title, subtitle, a legend row and the footnote; returns the area left for the plot.
/// The legend sits above the plot, so it never hides a bar or its label.
pub fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    legend: &[(String, RGBColor)],
    footnote: &[String],
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(s)?;
    let (w, h) = root.dim_in_pixel();
    let title_style = ("sans-serif", 30).into_font().style(FontStyle::Bold).color(&BLACK);
    root.draw(&Text::new(title.to_string(), (24, 14), title_style)).map_err(s)?;
    let mut top = 56;
    if !subtitle.is_empty() {
        root.draw(&Text::new(
            subtitle.to_string(),
            (24, 54),
            ("sans-serif", 19).into_font().color(&RGBColor(0x44, 0x44, 0x44)),
        ))
        .map_err(s)?;
        top = 84;
    }
    if !legend.is_empty() {
        let font = ("sans-serif", 16).into_font();
        let (mut x, mut y) = (24i32, top as i32 + 4);
        for (text, color) in legend {
            let tw = root
                .estimate_text_size(text, &font.clone().into_text_style(root))
                .map(|(tw, _)| tw as i32)
                .unwrap_or(8 * text.len() as i32);
            if x + 26 + tw > w as i32 - 24 {
                x = 24;
                y += 24;
            }
            root.draw(&Rectangle::new([(x, y + 2), (x + 18, y + 16)], color.filled())).map_err(s)?;
            root.draw(&Text::new(text.clone(), (x + 24, y), font.clone().color(&BLACK))).map_err(s)?;
            x += 24 + tw + 28;
        }
        top = (y + 28) as u32;
    }
    let foot_h = 20 * footnote.len() as i32 + 12;
    for (i, line) in footnote.iter().enumerate() {
        let y = h as i32 - foot_h + 6 + 20 * i as i32;
        root.draw(&Text::new(line.clone(), (24, y), ("sans-serif", 15).into_font().color(&RGBColor(0x55, 0x55, 0x55))))
            .map_err(s)?;
    }
    Ok(root.margin(top, foot_h as u32, 0, 0))
}

fn draw_bar_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BarChart) -> Result<(), String> {
    let legend = legend_of(c.groups.iter().flat_map(|g| g.bars.iter().map(|b| (b.legend.as_str(), b.color))));
    let area = frame(root, &c.title, &c.subtitle, &legend, &c.footnote)?;
    let n = c.groups.len().max(1);
    let per_group = c.groups.iter().map(|g| g.bars.len()).max().unwrap_or(1).max(1);
    let top = c
        .groups
        .iter()
        .flat_map(|g| g.bars.iter())
        .map(|b| b.value + b.error.filter(|e| e.is_finite()).unwrap_or(0.0))
        .chain(c.reference.iter().map(|r| r.0))
        .fold(0.0, f64::max);
    let ymax = if top > 0.0 { top * 1.2 } else { 1.0 };
    let labels: Vec<String> = c.groups.iter().map(|g| g.label.clone()).collect();
    // Smaller axis labels when many long ones must share the width.
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1) * n;
    let label_size = if widest > 110 {
        13
    } else if widest > 80 {
        15
    } else {
        18
    };
    let mut chart = ChartBuilder::on(&area)
        .margin_left(20)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(56)
        .y_label_area_size(100)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(s)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| group_digits(*y, if ymax < 10.0 { 1 } else { 0 }))
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .x_label_style(("sans-serif", label_size))
        .y_label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .draw()
        .map_err(s)?;
    if let Some((y, label)) = &c.reference {
        let style = RGBColor(0x55, 0x55, 0x55).stroke_width(2);
        chart.draw_series(DashedLineSeries::new(vec![(-0.5, *y), (n as f64 - 0.5, *y)], 8, 6, style)).map_err(s)?;
        let st =
            ("sans-serif", 15).into_font().color(&RGBColor(0x55, 0x55, 0x55)).pos(Pos::new(HPos::Left, VPos::Bottom));
        chart.draw_series(std::iter::once(Text::new(label.clone(), (-0.49, *y + ymax * 0.01), st))).map_err(s)?;
    }
    let slot = 0.8 / per_group as f64;
    let half = slot * 0.42;
    let (value_size, note_size) = match per_group {
        1 => (17, 21),
        2 => (15, 17),
        _ => (12, 13),
    };
    for (gi, g) in c.groups.iter().enumerate() {
        for (bi, b) in g.bars.iter().enumerate() {
            let x = gi as f64 - 0.4 + slot * (bi as f64 + 0.5);
            let fill = if b.within_noise { b.color.mix(0.4).filled() } else { b.color.filled() };
            chart
                .draw_series(std::iter::once(Rectangle::new([(x - half, 0.0), (x + half, b.value)], fill)))
                .map_err(s)?;
            if b.within_noise {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - half, 0.0), (x + half, b.value)],
                        b.color.stroke_width(2),
                    )))
                    .map_err(s)?;
            }
            let mut label_y = b.value;
            if let Some(e) = b.error.filter(|e| e.is_finite() && *e > 0.0) {
                let (lo, hi) = ((b.value - e).max(0.0), b.value + e);
                let black = BLACK.stroke_width(2);
                let cap = half * 0.2;
                chart
                    .draw_series([
                        PathElement::new(vec![(x, lo), (x, hi)], black),
                        PathElement::new(vec![(x - cap, lo), (x + cap, lo)], black),
                        PathElement::new(vec![(x - cap, hi), (x + cap, hi)], black),
                    ])
                    .map_err(s)?;
                label_y = hi;
            }
            let value_style = ("sans-serif", value_size)
                .into_font()
                .color(&RGBColor(0x22, 0x22, 0x22))
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            let note_style = ("sans-serif", note_size)
                .into_font()
                .style(FontStyle::Bold)
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series([
                    Text::new(
                        format!("{}{}", group_digits(b.value, c.value_decimals), c.value_suffix),
                        (x, label_y + ymax * 0.012),
                        value_style,
                    ),
                    Text::new(b.annotation.clone(), (x, label_y + ymax * 0.055), note_style),
                ])
                .map_err(s)?;
        }
    }
    Ok(())
}

fn draw_line_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> Result<(), String> {
    let legend = legend_of(c.series.iter().map(|l| (l.name.as_str(), l.color)));
    let area = frame(root, &c.title, &c.subtitle, &legend, &c.footnote)?;
    let xs = c.series.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (xmin, xmax) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    let (xmin, xmax) = if xmin.is_finite() { (xmin, xmax.max(xmin + 1.0)) } else { (0.0, 1.0) };
    let ytop = c
        .series
        .iter()
        .flat_map(|l| {
            l.points.iter().enumerate().map(move |(i, p)| {
                p.1 + l.errors.as_ref().and_then(|e| e.get(i).copied()).filter(|e| e.is_finite()).unwrap_or(0.0)
            })
        })
        .fold(0.0, f64::max);
    let ymax = if ytop > 0.0 { ytop * 1.15 } else { 1.0 };
    let pad = (xmax - xmin) * 0.03;
    let mut chart = ChartBuilder::on(&area)
        .margin_left(20)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(56)
        .y_label_area_size(100)
        .build_cartesian_2d((xmin - pad)..(xmax + pad), 0f64..ymax)
        .map_err(s)?;
    let integer_x = c.integer_x;
    chart
        .configure_mesh()
        .x_label_formatter(&|x| {
            if integer_x {
                if (x - x.round()).abs() < 1e-6 { format!("{}", x.round()) } else { String::new() }
            } else {
                format!("{x:.0}")
            }
        })
        .y_label_formatter(&|y| group_digits(*y, if ymax < 10.0 { 1 } else { 0 }))
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .draw()
        .map_err(s)?;
    for (x, label) in &c.vlines {
        let style = RGBColor(0x99, 0x99, 0x99).stroke_width(1);
        chart.draw_series(DashedLineSeries::new(vec![(*x, 0.0), (*x, ymax)], 6, 4, style)).map_err(s)?;
        let st = ("sans-serif", 14).into_font().color(&RGBColor(0x66, 0x66, 0x66)).pos(Pos::new(HPos::Left, VPos::Top));
        chart.draw_series(std::iter::once(Text::new(label.clone(), (*x, ymax * 0.99), st))).map_err(s)?;
    }
    for l in &c.series {
        let style = l.color.stroke_width(3);
        if l.dashed {
            chart.draw_series(DashedLineSeries::new(l.points.clone(), 10, 6, style)).map_err(s)?;
        } else {
            chart.draw_series(LineSeries::new(l.points.clone(), style)).map_err(s)?;
        }
        if l.markers {
            chart.draw_series(l.points.iter().map(|p| Circle::new(*p, 5, l.color.filled()))).map_err(s)?;
        }
        if let Some(errs) = &l.errors {
            for (p, e) in l.points.iter().zip(errs) {
                if e.is_finite() && *e > 0.0 {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(p.0, (p.1 - e).max(0.0)), (p.0, p.1 + e)],
                            l.color.stroke_width(2),
                        )))
                        .map_err(s)?;
                }
            }
        }
        if let Some((x, y, label)) = &l.mark {
            chart.draw_series(std::iter::once(Circle::new((*x, *y), 9, l.color.stroke_width(3)))).map_err(s)?;
            let st = ("sans-serif", 16)
                .into_font()
                .style(FontStyle::Bold)
                .color(&l.color)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart.draw_series(std::iter::once(Text::new(label.clone(), (*x, *y + ymax * 0.03), st))).map_err(s)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        render_bar_chart(&chart, &d.path().join("x")).unwrap();
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
        render_line_chart(&chart, &d.path().join("l")).unwrap();
        let svg = std::fs::read_to_string(d.path().join("l.svg")).unwrap();
        assert!(svg.contains("peak 25") && svg.contains("checkpoint"));
    }
}
