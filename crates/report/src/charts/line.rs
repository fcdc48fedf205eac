//! Line charts: scaling curves and per-second series.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bar::Plot;
use super::{Line, LineChart, frame, group_digits, legend_of, s};

pub(super) fn draw_line_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> Result<(), String> {
    let legend = legend_of(c.series.iter().map(|l| (l.name.as_str(), l.color)));
    let area = frame(root, &c.title, &c.subtitle, &legend, &c.footnote)?;
    let ymax = y_max(c, area.dim_in_pixel().1 as f64 - 66.0);
    let mut chart = axes(&area, c, ymax)?;
    let (x_pixels, _) = chart.plotting_area().get_pixel_range();
    let text_width = |text: &str, font: &FontDesc| {
        root.estimate_text_size(text, &font.clone().into_text_style(root)).map(|(w, _)| w as i32).unwrap_or(0)
    };
    for (x, label) in &c.vlines {
        let style = RGBColor(0x99, 0x99, 0x99).stroke_width(1);
        chart.draw_series(DashedLineSeries::new(vec![(*x, 0.0), (*x, ymax)], 6, 4, style)).map_err(s)?;
        let font = ("sans-serif", 14).into_font();
        // Right of the line, or left of it where it would run past the plot.
        let fits = chart.backend_coord(&(*x, 0.0)).0 + text_width(label, &font) <= x_pixels.end;
        let st = font
            .color(&RGBColor(0x66, 0x66, 0x66))
            .pos(Pos::new(if fits { HPos::Left } else { HPos::Right }, VPos::Top));
        chart.draw_series(std::iter::once(Text::new(label.clone(), (*x, ymax * 0.99), st))).map_err(s)?;
    }
    // What a peak label must not cover: points, error bars and peak circles (in pixels).
    let mut columns = Vec::new();
    for l in &c.series {
        draw_line(&mut chart, l, &mut columns)?;
    }
    // Peak labels last, above everything drawn under them and above each other.
    let font = ("sans-serif", 16).into_font().style(FontStyle::Bold);
    let marked: Vec<_> = c.series.iter().filter_map(|l| l.mark.as_ref().map(|m| (l.color, m))).collect();
    let labels: Vec<Label> = marked
        .iter()
        .map(|(_, (x, y, text))| Label {
            centre: chart.backend_coord(&(*x, *y)).0,
            width: text_width(text, &font),
            height: MARK_LABEL_H,
        })
        .collect();
    for ((color, (_, _, text)), at) in marked.iter().zip(place_labels(&labels, columns, (x_pixels.start, x_pixels.end)))
    {
        let st = font.color(color).pos(Pos::new(HPos::Left, VPos::Top));
        root.draw(&Text::new(text.clone(), at, st)).map_err(s)?;
    }
    Ok(())
}

/// The top of the y axis: 15% above the highest point (with its error bar), more when the peak
/// labels need it (all of them stacked, in the worst case) on a plot `plot_h` pixels high.
fn y_max(c: &LineChart, plot_h: f64) -> f64 {
    let ytop = c
        .series
        .iter()
        .flat_map(|l| {
            l.points.iter().enumerate().map(move |(i, p)| {
                p.1 + l.errors.as_ref().and_then(|e| e.get(i).copied()).filter(|e| e.is_finite()).unwrap_or(0.0)
            })
        })
        .fold(0.0, f64::max);
    let marks = c.series.iter().filter(|l| l.mark.is_some()).count() as f64;
    let headroom = marks * f64::from(MARK_LABEL_H + GAP) + f64::from(GAP + MARK_R);
    match ytop > 0.0 {
        true if marks > 0.0 && plot_h > headroom * 2.0 => (ytop * 1.15).max(ytop * plot_h / (plot_h - headroom)),
        true => ytop * 1.15,
        false => 1.0,
    }
}

/// The axes: x over the points (3% padding), y from 0 to `ymax`.
fn axes<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    c: &LineChart,
    ymax: f64,
) -> Result<Plot<'a, DB>, String> {
    let xs = c.series.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (xmin, xmax) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    let (xmin, xmax) = if xmin.is_finite() { (xmin, xmax.max(xmin + 1.0)) } else { (0.0, 1.0) };
    let pad = (xmax - xmin) * 0.03;
    let mut chart = ChartBuilder::on(area)
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
    Ok(chart)
}

/// One line with its markers, error bars and peak circle; adds what it drew to `columns`.
fn draw_line<DB: DrawingBackend>(chart: &mut Plot<'_, DB>, l: &Line, columns: &mut Vec<Column>) -> Result<(), String> {
    let style = l.color.stroke_width(3);
    if l.dashed {
        chart.draw_series(DashedLineSeries::new(l.points.clone(), 10, 6, style)).map_err(s)?;
    } else {
        chart.draw_series(LineSeries::new(l.points.clone(), style)).map_err(s)?;
    }
    if l.markers {
        chart.draw_series(l.points.iter().map(|p| Circle::new(*p, 5, l.color.filled()))).map_err(s)?;
        columns.extend(l.points.iter().map(|p| Column::around(chart.backend_coord(p), 5)));
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
                columns.push(Column::around(chart.backend_coord(&(p.0, p.1 + e)), 1));
            }
        }
    }
    if let Some((x, y, _)) = &l.mark {
        chart.draw_series(std::iter::once(Circle::new((*x, *y), 9, l.color.stroke_width(3)))).map_err(s)?;
        columns.push(Column::around(chart.backend_coord(&(*x, *y)), MARK_R));
    }
    Ok(())
}

/// Height of a peak label, its gap to what is under it, and the radius of the peak's circle
/// (with its stroke), in pixels.
const MARK_LABEL_H: i32 = 18;
const GAP: i32 = 4;
const MARK_R: i32 = 11;

/// Pixels a label must stay above: the columns `x0..=x1` from `top` down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Column {
    pub x0: i32,
    pub x1: i32,
    pub top: i32,
}

impl Column {
    fn around((x, y): (i32, i32), radius: i32) -> Column {
        Column { x0: x - radius, x1: x + radius, top: y - radius }
    }
}

/// A label to place: centred on `centre` if it can be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Label {
    pub centre: i32,
    pub width: i32,
    pub height: i32,
}

/// Places each label, in order, as low as it can sit above every column under it (the points
/// and error bars, then the labels placed before it), horizontally centred on its point but
/// inside `left..right`. Returns each label's top-left corner.
pub(crate) fn place_labels(labels: &[Label], mut columns: Vec<Column>, (left, right): (i32, i32)) -> Vec<(i32, i32)> {
    labels
        .iter()
        .map(|l| {
            let x0 = (l.centre - l.width / 2).min(right - l.width).max(left);
            let x1 = x0 + l.width;
            let floor = columns.iter().filter(|c| c.x0 <= x1 && c.x1 >= x0).map(|c| c.top).min();
            // Every label's own point is a column; without one it would sit at the bottom.
            let top = floor.unwrap_or(i32::MAX / 2) - GAP - l.height;
            columns.push(Column { x0, x1, top });
            (x0, top)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_sit_above_error_bars_and_each_other() {
        // Two peaks at the same x: one with a tall error bar, one without.
        let columns =
            vec![Column::around((500, 300), MARK_R), Column::around((500, 120), 1), Column::around((500, 320), MARK_R)];
        let label = Label { centre: 500, width: 100, height: MARK_LABEL_H };
        let at = place_labels(&[label, label], columns, (100, 1000));
        assert_eq!(at[0], (450, 119 - GAP - MARK_LABEL_H), "above the error bar's top, not on it");
        assert_eq!(at[1], (450, at[0].1 - GAP - MARK_LABEL_H), "stacked above the first label");
    }

    #[test]
    fn labels_stay_inside_the_plot() {
        let label = Label { centre: 990, width: 100, height: MARK_LABEL_H };
        let at = place_labels(&[label], vec![Column::around((990, 300), MARK_R)], (100, 1000));
        assert_eq!(at[0].0, 900);
        let at = place_labels(&[Label { centre: 110, ..label }], vec![Column::around((110, 300), MARK_R)], (100, 1000));
        assert_eq!(at[0].0, 100);
    }

    #[test]
    fn a_label_beside_a_tall_bar_is_not_lifted_by_it() {
        let columns = vec![Column::around((300, 400), MARK_R), Column::around((700, 100), 1)];
        let at = place_labels(&[Label { centre: 300, width: 80, height: MARK_LABEL_H }], columns, (0, 1000));
        assert_eq!(at[0].1, 400 - MARK_R - GAP - MARK_LABEL_H);
    }
}
