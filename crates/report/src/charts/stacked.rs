//! Stacked bars of shares (each bar sums to 100%): the wait events of each placement's backends.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{StackedChart, frame, s};

/// Segments smaller than this (percentage points) get no label inside.
const LABEL_MIN: f64 = 7.0;

pub(super) fn draw_stacked_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &StackedChart,
) -> Result<(), String> {
    let area = frame(root, &c.title, &c.subtitle, &c.series, &c.footnote)?;
    let n = c.bars.len().max(1);
    let labels: Vec<String> = c.bars.iter().map(|b| b.label.clone()).collect();
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1) * n;
    let label_size = if widest > 110 {
        13
    } else if widest > 80 {
        15
    } else {
        18
    };
    let ymax = 112.0;
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
        .y_labels(6)
        .y_label_formatter(&|y| if *y <= 100.0 { format!("{y:.0}%") } else { String::new() })
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .x_label_style(("sans-serif", label_size))
        .y_label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .draw()
        .map_err(s)?;
    let half = if n <= 2 { 0.25 } else { 0.34 };
    let value_size = if n > 8 { 13 } else { 16 };
    for (i, bar) in c.bars.iter().enumerate() {
        let x = i as f64;
        let mut y0 = 0.0;
        for (series, share) in &bar.segments {
            if *share <= 0.0 {
                continue;
            }
            let color =
                c.series.iter().find(|(n, _)| n == series).map(|(_, c)| *c).unwrap_or(RGBColor(0x99, 0x99, 0x99));
            let y1 = y0 + share;
            chart
                .draw_series(std::iter::once(Rectangle::new([(x - half, y0), (x + half, y1)], color.filled())))
                .map_err(s)?;
            chart
                .draw_series(std::iter::once(Rectangle::new([(x - half, y0), (x + half, y1)], WHITE.stroke_width(1))))
                .map_err(s)?;
            if *share >= LABEL_MIN {
                let text = ("sans-serif", value_size)
                    .into_font()
                    .color(&contrast(color))
                    .pos(Pos::new(HPos::Center, VPos::Center));
                chart
                    .draw_series(std::iter::once(Text::new(format!("{share:.0}%"), (x, (y0 + y1) / 2.0), text)))
                    .map_err(s)?;
            }
            y0 = y1;
        }
        let note = ("sans-serif", 15)
            .into_font()
            .style(FontStyle::Bold)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        chart.draw_series(std::iter::once(Text::new(bar.note.clone(), (x, y0.max(100.0) + 2.0), note))).map_err(s)?;
    }
    Ok(())
}

/// Black or white text, whichever reads on `c`.
fn contrast(c: RGBColor) -> RGBColor {
    let l = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if l > 150.0 { BLACK } else { WHITE }
}
