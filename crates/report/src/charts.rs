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
    pub label: String,
    /// Legend text (the placement and what it puts where).
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

/// A bar chart: one bar per placement.
#[derive(Clone, Debug)]
pub struct BarChart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub bars: Vec<Bar>,
    /// Small print at the bottom (environment, method).
    pub footnote: Vec<String>,
    /// Decimal places of the value labels.
    pub value_decimals: usize,
}

#[derive(Debug, thiserror::Error)]
#[error("chart {path}: {message}")]
pub struct ChartError {
    pub path: String,
    pub message: String,
}

pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 760;

/// Renders `chart` as `<stem>.png` and `<stem>.svg`.
pub fn render_bar_chart(chart: &BarChart, stem: &Path) -> Result<(), ChartError> {
    register_fonts();
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    let e = |p: &Path, m: String| ChartError { path: p.display().to_string(), message: m };
    {
        let root = BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area();
        draw_bar_chart(&root, chart).map_err(|m| e(&png, m))?;
        root.present().map_err(|x| e(&png, x.to_string()))?;
    }
    {
        let root = SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw_bar_chart(&root, chart).map_err(|m| e(&svg, m))?;
        root.present().map_err(|x| e(&svg, x.to_string()))?;
    }
    Ok(())
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
pub fn frame<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
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
    let legend: Vec<(String, RGBColor)> = c.bars.iter().map(|b| (b.legend.clone(), b.color)).collect();
    let area = frame(root, &c.title, &c.subtitle, &legend, &c.footnote)?;
    let n = c.bars.len().max(1);
    let top = c.bars.iter().map(|b| b.value + b.error.filter(|e| e.is_finite()).unwrap_or(0.0)).fold(0.0, f64::max);
    let ymax = if top > 0.0 { top * 1.2 } else { 1.0 };
    let labels: Vec<String> = c.bars.iter().map(|b| b.label.clone()).collect();
    let mut chart = ChartBuilder::on(&area)
        .margin_left(20)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(56)
        .y_label_area_size(100)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(s)?;
    let decimals = c.value_decimals;
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
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .draw()
        .map_err(s)?;
    for (i, b) in c.bars.iter().enumerate() {
        let x = i as f64;
        let fill = if b.within_noise { b.color.mix(0.4).filled() } else { b.color.filled() };
        chart.draw_series(std::iter::once(Rectangle::new([(x - 0.32, 0.0), (x + 0.32, b.value)], fill))).map_err(s)?;
        if b.within_noise {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.32, 0.0), (x + 0.32, b.value)],
                    b.color.stroke_width(2),
                )))
                .map_err(s)?;
        }
        let mut label_y = b.value;
        if let Some(e) = b.error.filter(|e| e.is_finite() && *e > 0.0) {
            let (lo, hi) = ((b.value - e).max(0.0), b.value + e);
            let black = BLACK.stroke_width(2);
            chart
                .draw_series([
                    PathElement::new(vec![(x, lo), (x, hi)], black),
                    PathElement::new(vec![(x - 0.06, lo), (x + 0.06, lo)], black),
                    PathElement::new(vec![(x - 0.06, hi), (x + 0.06, hi)], black),
                ])
                .map_err(s)?;
            label_y = hi;
        }
        let value_style =
            ("sans-serif", 17).into_font().color(&RGBColor(0x22, 0x22, 0x22)).pos(Pos::new(HPos::Center, VPos::Bottom));
        let note_style = ("sans-serif", 21)
            .into_font()
            .style(FontStyle::Bold)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series([
                Text::new(group_digits(b.value, decimals), (x, label_y + ymax * 0.015), value_style),
                Text::new(b.annotation.clone(), (x, label_y + ymax * 0.065), note_style),
            ])
            .map_err(s)?;
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

    #[test]
    fn renders_png_and_svg() {
        let d = tempfile::tempdir().unwrap();
        let chart = BarChart {
            title: "t".into(),
            subtitle: "s".into(),
            x_label: "placement".into(),
            y_label: "TPS".into(),
            bars: vec![
                Bar {
                    label: "a".into(),
                    legend: "a".into(),
                    value: 100.0,
                    error: Some(5.0),
                    color: placement_color(0),
                    annotation: "baseline".into(),
                    within_noise: false,
                },
                Bar {
                    label: "b".into(),
                    legend: "b".into(),
                    value: 144.6,
                    error: None,
                    color: placement_color(1),
                    annotation: "+44.6%".into(),
                    within_noise: true,
                },
            ],
            footnote: vec!["foot".into()],
            value_decimals: 0,
        };
        render_bar_chart(&chart, &d.path().join("x")).unwrap();
        let png = std::fs::read(d.path().join("x.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let svg = std::fs::read_to_string(d.path().join("x.svg")).unwrap();
        assert!(svg.contains("+44.6%") && svg.contains("baseline"));
    }
}
