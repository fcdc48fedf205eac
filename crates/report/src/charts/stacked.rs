//! Stacked bars of shares (each bar sums to 100%): the wait events of each placement's backends.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bar::category_axes;
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
    let y_format = |y: &f64| if *y <= 100.0 { format!("{y:.0}%") } else { String::new() };
    let mut chart = category_axes(&area, &labels, (&c.x_label, &c.y_label), (n, 112.0), Some(6), &y_format)?;
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
