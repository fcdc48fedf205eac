//! Forest plots: one row per change, its point and 95% interval on a log-ratio axis labelled in
//! %, the verdict by colour and by marker shape (readable in greyscale), the equivalence margin
//! shaded; a row may carry a published figure (a point or a range) to hold the interval against.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ForestChart, Mark, frame, s};

/// Where a change in % sits on the axis: the logarithm of its ratio.
fn axis(pct: f64) -> f64 {
    (1.0 + pct / 100.0).max(1e-6).ln()
}

pub(super) fn draw_forest_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &ForestChart,
) -> Result<(), String> {
    let legend: Vec<(String, RGBColor)> =
        c.legend.iter().map(|(m, t, col)| (format!("{} {t}", m.glyph()), *col)).collect();
    let area = frame(root, &c.title, &c.subtitle, &legend, &c.footnote)?;
    let n = c.rows.len().max(1);
    let longest = c.rows.iter().map(|r| r.label.chars().count()).max().unwrap_or(8);
    let row_font = if n > 24 {
        12
    } else if n > 14 {
        14
    } else {
        16
    };
    let label_w = ((longest as f64 * row_font as f64 * 0.56) as u32 + 24).min(560);
    let longest_value = c.rows.iter().map(|r| r.value.chars().count()).max().unwrap_or(8);
    let value_w = ((longest_value as f64 * row_font as f64 * 0.6) as u32 + 30).min(460);
    let mut lo = axis(-c.margin_pct.max(1.0) * 1.5);
    let mut hi = axis(c.margin_pct.max(1.0) * 1.5);
    for r in &c.rows {
        let extra = r.published.iter().chain(r.holm.iter()).flat_map(|(a, b)| [*a, *b]);
        for v in [r.point, r.low, r.high].into_iter().chain(extra) {
            if v.is_finite() {
                lo = lo.min(axis(v));
                hi = hi.max(axis(v));
            }
        }
    }
    let pad = (hi - lo) * 0.06;
    let (lo, hi) = (lo - pad, hi + pad);
    let mut chart = ChartBuilder::on(&area)
        .margin_left(label_w)
        .margin_right(value_w)
        .margin_top(6)
        .x_label_area_size(56)
        .build_cartesian_2d(lo..hi, -0.6f64..(n as f64 - 0.4))
        .map_err(s)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_x_mesh()
        .y_labels(0)
        .x_labels(0)
        .x_desc(&c.x_label)
        .x_label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xE8, 0xE8, 0xE8))
        .draw()
        .map_err(s)?;
    let top = n as f64 - 0.4;
    let ticks = ticks(lo, hi);
    for t in &ticks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(axis(*t), -0.6), (axis(*t), top)],
                RGBColor(0xE4, 0xE4, 0xE4).stroke_width(1),
            )))
            .map_err(s)?;
    }
    let band = [(axis(-c.margin_pct), -0.6), (axis(c.margin_pct), top)];
    chart
        .draw_series(std::iter::once(Rectangle::new(band, RGBColor(0xDD, 0xDD, 0xDD).mix(0.6).filled())))
        .map_err(s)?;
    chart
        .draw_series(std::iter::once(PathElement::new(vec![(0.0, -0.6), (0.0, top)], BLACK.stroke_width(1))))
        .map_err(s)?;
    let label_style = ("sans-serif", row_font).into_font().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
    let value_style = ("sans-serif", row_font).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let (right, _) = chart.backend_coord(&(hi, 0.0));
    let (left, _) = chart.backend_coord(&(lo, 0.0));
    let (origin_x, origin_y) = area.get_base_pixel();
    let tick_style = ("sans-serif", 16).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
    let (_, bottom) = chart.backend_coord(&(lo, -0.6));
    for t in &ticks {
        let (px, _) = chart.backend_coord(&(axis(*t), 0.0));
        let text = if *t == 0.0 { "0%".to_string() } else { format!("{t:+}%") };
        area.draw(&Text::new(text, (px - origin_x, bottom - origin_y + 8), tick_style.clone())).map_err(s)?;
    }
    for (i, r) in c.rows.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        if let Some((a, b)) = r.published {
            let (a, b) = (axis(a), axis(b));
            if (b - a).abs() > 1e-9 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(a, y - 0.32), (b, y + 0.32)],
                        RGBColor(0x80, 0x80, 0x80).mix(0.5).filled(),
                    )))
                    .map_err(s)?;
            } else {
                let (px, py) = chart.backend_coord(&(a, y));
                let d = 9;
                let diamond = vec![(px, py - d), (px + d, py), (px, py + d), (px - d, py), (px, py - d)];
                root.draw(&PathElement::new(diamond, BLACK.stroke_width(2))).map_err(s)?;
            }
        }
        // The interval after Holm thin, then the 95% one thick over it: a bar with end ticks.
        for ((lo, hi), width, tick) in [(r.holm, 1, 0.12), (Some((r.low, r.high)), 3, 0.18)]
            .into_iter()
            .filter_map(|(ends, w, t)| ends.filter(|(a, b)| a.is_finite() && b.is_finite()).map(|e| (e, w, t)))
        {
            let (a, b) = (axis(lo), axis(hi));
            let style = r.color.stroke_width(width);
            chart
                .draw_series([
                    PathElement::new(vec![(a, y), (b, y)], style),
                    PathElement::new(vec![(a, y - tick), (a, y + tick)], style),
                    PathElement::new(vec![(b, y - tick), (b, y + tick)], style),
                ])
                .map_err(s)?;
        }
        let (px, py) = chart.backend_coord(&(axis(r.point), y));
        draw_mark(root, r.mark, (px, py), r.color)?;
        let (_, ly) = (origin_x, py - origin_y);
        area.draw(&Text::new(r.label.clone(), (left - origin_x - 10, ly), label_style.clone())).map_err(s)?;
        area.draw(&Text::new(r.value.clone(), (right - origin_x + 12, ly), value_style.clone())).map_err(s)?;
    }
    Ok(())
}

/// A verdict's marker at pixel `(x, y)` of the root area.
fn draw_mark<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    mark: Mark,
    (x, y): (i32, i32),
    color: RGBColor,
) -> Result<(), String> {
    let r = 8;
    match mark {
        Mark::Circle => root.draw(&Circle::new((x, y), r, color.filled())).map_err(s),
        Mark::Square => root.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], color.filled())).map_err(s),
        Mark::Triangle => root
            .draw(&Polygon::new(vec![(x, y - r - 1), (x + r + 1, y + r), (x - r - 1, y + r)], color.filled()))
            .map_err(s),
        Mark::Ring => {
            root.draw(&Circle::new((x, y), r, WHITE.filled())).map_err(s)?;
            root.draw(&Circle::new((x, y), r, color.stroke_width(3))).map_err(s)
        }
        Mark::Cross => {
            let st = color.stroke_width(3);
            root.draw(&PathElement::new(vec![(x - r, y - r), (x + r, y + r)], st)).map_err(s)?;
            root.draw(&PathElement::new(vec![(x - r, y + r), (x + r, y - r)], st)).map_err(s)
        }
    }
}

/// Round changes in % to label the axis with, at most 9 of those within `lo..hi` (log ratios).
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    const CANDIDATES: [f64; 27] = [
        -99.0, -95.0, -90.0, -80.0, -75.0, -50.0, -25.0, -20.0, -10.0, -5.0, -2.0, 0.0, 2.0, 5.0, 10.0, 20.0, 25.0,
        50.0, 100.0, 200.0, 300.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0, 50000.0,
    ];
    let inside: Vec<f64> = CANDIDATES.into_iter().filter(|t| (lo..=hi).contains(&axis(*t))).collect();
    // Keep ticks at least an eleventh of the axis apart, 0 first.
    let gap = (hi - lo) / 11.0;
    let mut kept: Vec<f64> = inside.iter().copied().filter(|t| *t == 0.0).collect();
    for t in inside {
        if kept.iter().all(|k| (axis(*k) - axis(t)).abs() >= gap) {
            kept.push(t);
        }
    }
    kept.sort_by(f64::total_cmp);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_changes_apart() {
        let t = ticks(axis(-60.0), axis(250.0));
        assert!(t.contains(&0.0) && t.contains(&-50.0) && t.contains(&100.0), "{t:?}");
        assert!(t.windows(2).all(|w| axis(w[1]) - axis(w[0]) >= (axis(250.0) - axis(-60.0)) / 11.0), "{t:?}");
    }
}
