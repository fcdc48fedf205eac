//! Line charts: scaling curves and per-second series.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{LineChart, frame, group_digits, legend_of, s};

pub(super) fn draw_line_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> Result<(), String> {
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
