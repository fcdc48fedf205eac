//! Bar charts: groups of bars with error bars, value labels and annotations.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use plotters::coord::types::RangedCoordf64;

use super::{Bar, BarChart, HOLM_MARK, frame, group_digits, legend_of, s};

/// The plot of a chart: f64 x and y.
pub(super) type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

pub(super) fn draw_bar_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BarChart) -> Result<(), String> {
    let legend = legend_of(c.groups.iter().flat_map(|g| g.bars.iter().map(|b| (b.legend.as_str(), b.color))));
    let area = frame(root, &c.title, &c.subtitle, &legend, &c.footnote)?;
    let n = c.groups.len().max(1);
    let per_group = c.groups.iter().map(|g| g.bars.len()).max().unwrap_or(1).max(1);
    let top = c
        .groups
        .iter()
        .flat_map(|g| g.bars.iter())
        .map(|b| match b.range {
            Some((_, hi)) if hi.is_finite() => hi.max(b.value),
            _ => b.value + b.error.filter(|e| e.is_finite()).unwrap_or(0.0),
        })
        .chain(c.reference.iter().map(|r| r.0))
        .fold(0.0, f64::max);
    // Room above the highest bar for its labels: one line more where an interval after Holm is
    // drawn.
    let holm = c.groups.iter().flat_map(|g| g.bars.iter()).any(|b| b.annotation.contains(HOLM_MARK));
    let ymax = if top > 0.0 { top * if holm { 1.3 } else { 1.2 } } else { 1.0 };
    let mut chart = axes(&area, c, n, ymax)?;
    if let Some((y, label)) = &c.reference {
        let style = RGBColor(0x55, 0x55, 0x55).stroke_width(2);
        chart.draw_series(DashedLineSeries::new(vec![(-0.5, *y), (n as f64 - 0.5, *y)], 8, 6, style)).map_err(s)?;
        let st =
            ("sans-serif", 15).into_font().color(&RGBColor(0x55, 0x55, 0x55)).pos(Pos::new(HPos::Left, VPos::Bottom));
        chart.draw_series(std::iter::once(Text::new(label.clone(), (-0.49, *y + ymax * 0.01), st))).map_err(s)?;
    }
    let slot = 0.8 / per_group as f64;
    let sizes = match per_group {
        1 => (17, 21),
        2 => (15, 17),
        _ => (12, 13),
    };
    for (gi, g) in c.groups.iter().enumerate() {
        for (bi, b) in g.bars.iter().enumerate() {
            let x = gi as f64 - 0.4 + slot * (bi as f64 + 0.5);
            draw_bar(&mut chart, c, b, (x, slot * 0.42), sizes, ymax)?;
        }
    }
    Ok(())
}

/// The axes, with the groups' labels along x.
fn axes<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    c: &BarChart,
    n: usize,
    ymax: f64,
) -> Result<Plot<'a, DB>, String> {
    let labels: Vec<String> = c.groups.iter().map(|g| g.label.clone()).collect();
    let y_format = |y: &f64| group_digits(*y, if ymax < 10.0 { 1 } else { 0 });
    category_axes(area, &labels, (&c.x_label, &c.y_label), (n, ymax), None, &y_format)
}

/// Axes of a chart of categories: `n` slots along x labelled by `labels` (smaller when many
/// long ones share the width), 0 to `ymax` along y with `y_labels` labels (plotters' default
/// count when None) formatted by `y_format`.
pub(super) fn category_axes<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    labels: &[String],
    (x_desc, y_desc): (&str, &str),
    (n, ymax): (usize, f64),
    y_labels: Option<usize>,
    y_format: &dyn Fn(&f64) -> String,
) -> Result<Plot<'a, DB>, String> {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    let widest = longest * n;
    // Too long to stand side by side even small: the labels turn upright, below the axis.
    let upright = widest > 240;
    let label_size = if widest > 110 {
        13
    } else if widest > 80 {
        15
    } else {
        18
    };
    let mut chart = ChartBuilder::on(area)
        .margin_left(20)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(if upright { (longest as u32 * 9 + 50).min(300) } else { 56 })
        .y_label_area_size(100)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(s)?;
    let x_format = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 0.01 && i >= 0.0 {
            // plotters turns a label about its middle: blanks in front (a space is about half a
            // character wide) put the whole text below the axis.
            let l = labels.get(i as usize).cloned().unwrap_or_default();
            if upright { format!("{}{l}", " ".repeat(l.chars().count() * 2 + 2)) } else { l }
        } else {
            String::new()
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh().x_labels(n).x_label_formatter(&x_format).y_label_formatter(&y_format);
    if let Some(count) = y_labels {
        mesh.y_labels(count);
    }
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_style(if upright {
            ("sans-serif", 14).into_font().transform(FontTransform::Rotate90).into_text_style(area)
        } else {
            ("sans-serif", label_size).into_font().into_text_style(area)
        })
        .y_label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .draw()
        .map_err(s)?;
    Ok(chart)
}

/// One bar at `x` (half-width `half`) with its error bar, its value and its annotation above.
fn draw_bar<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    c: &BarChart,
    b: &Bar,
    (x, half): (f64, f64),
    (value_size, note_size): (u32, u32),
    ymax: f64,
) -> Result<(), String> {
    let fill = if b.within_noise { b.color.mix(0.4).filled() } else { b.color.filled() };
    chart.draw_series(std::iter::once(Rectangle::new([(x - half, 0.0), (x + half, b.value)], fill))).map_err(s)?;
    if b.within_noise {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - half, 0.0), (x + half, b.value)],
                b.color.stroke_width(2),
            )))
            .map_err(s)?;
    }
    let mut label_y = b.value;
    let range = match (b.range, b.error) {
        (Some((lo, hi)), _) if lo.is_finite() && hi.is_finite() && hi > lo => Some((lo.max(0.0), hi)),
        (_, Some(e)) if e.is_finite() && e > 0.0 => Some(((b.value - e).max(0.0), b.value + e)),
        _ => None,
    };
    if let Some((lo, hi)) = range {
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
        .draw_series([Text::new(
            format!("{}{}", group_digits(b.value, c.value_decimals), c.value_suffix),
            (x, label_y + ymax * 0.012),
            value_style,
        )])
        .map_err(s)?;
    // `+44.6% [+30.1, +61.2] (inconclusive)`: the change and its verdict, its interval below;
    // with `, after Holm [..]`, the 95% interval labelled so and the one after Holm below it.
    let (change, interval, holm) = split_interval(&b.annotation);
    let lines = 1 + usize::from(interval.is_some()) + usize::from(holm.is_some());
    let line_y = |i: usize| label_y + ymax * (0.055 + 0.043 * i as f64);
    let mut notes = vec![Text::new(change, (x, line_y(lines - 1)), note_style.clone())];
    let small = ("sans-serif", note_size.saturating_sub(2).max(10))
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    if let Some(interval) = interval {
        let interval = if holm.is_some() { format!("95% {interval}") } else { interval };
        notes.push(Text::new(interval, (x, line_y(lines - 2)), small.clone()));
    }
    if let Some(holm) = holm {
        notes.push(Text::new(holm, (x, line_y(0)), small));
    }
    chart.draw_series(notes).map_err(s)?;
    Ok(())
}

/// An annotation's change (with its verdict), its bracketed interval and its interval after Holm
/// (`after Holm [..]`), apart.
fn split_interval(annotation: &str) -> (String, Option<String>, Option<String>) {
    let (rest, holm) = match annotation.find(HOLM_MARK) {
        Some(k) => match annotation[k..].find(']') {
            Some(e) => (
                format!("{}{}", &annotation[..k], &annotation[k + e + 1..]),
                Some(annotation[k + 2..=k + e].to_string()),
            ),
            None => (annotation.to_string(), None),
        },
        None => (annotation.to_string(), None),
    };
    match (rest.find(" ["), rest.find(']')) {
        (Some(i), Some(j)) if j > i => {
            (format!("{}{}", &rest[..i], &rest[j + 1..]), Some(rest[i + 1..=j].to_string()), holm)
        }
        _ => (rest, None, holm),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_annotation_is_split_into_change_and_interval() {
        assert_eq!(
            super::split_interval("-3.0% [-8.0, +2.0] (inconclusive)"),
            ("-3.0% (inconclusive)".to_string(), Some("[-8.0, +2.0]".to_string()), None)
        );
        assert_eq!(super::split_interval("baseline"), ("baseline".to_string(), None, None));
        assert_eq!(
            super::split_interval("+138.8% [+16.7, +388.5], after Holm [-4.2, +498.0] (inconclusive)"),
            (
                "+138.8% (inconclusive)".to_string(),
                Some("[+16.7, +388.5]".to_string()),
                Some("after Holm [-4.2, +498.0]".to_string())
            )
        );
    }
}
