//! Every text of every chart the report draws from the fixtures fits its canvas. Widths are
//! measured with the embedded DejaVu Sans glyph advances (and kerning) at the size plotters lays
//! the text out with, which is what the PNG shows; browsers draw the SVG text slightly narrower.

mod common;

use ab_glyph::{Font, FontRef, ScaleFont};
use common::{FIXTURES, rendered};

const REGULAR: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const BOLD: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-Bold.ttf");

/// One `<text>` element of an SVG written by plotters.
#[derive(Debug)]
struct SvgText {
    x: f32,
    y: f32,
    /// plotters writes `font-size` as its nominal size / 1.24.
    font_size: f32,
    anchor: String,
    bold: bool,
    rotated: bool,
    text: String,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

fn texts(svg: &str) -> Vec<SvgText> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text ") {
        rest = &rest[i..];
        let close = rest.find('>').expect("tag ends");
        let tag = &rest[..close];
        let end = rest.find("</text>").expect("text ends");
        let num = |n: &str| attr(tag, n).and_then(|v| v.parse::<f32>().ok()).unwrap_or_else(|| panic!("{n} in {tag}"));
        out.push(SvgText {
            x: num("x"),
            y: num("y"),
            font_size: num("font-size"),
            anchor: attr(tag, "text-anchor").unwrap_or("start").to_string(),
            bold: attr(tag, "font-weight") == Some("bold"),
            rotated: attr(tag, "transform").is_some_and(|t| t.starts_with("rotate(270")),
            text: unescape(rest[close + 1..end].trim()),
        });
        rest = &rest[end..];
    }
    out
}

fn canvas(svg: &str) -> (f32, f32) {
    let tag = &svg[svg.find("<svg ").expect("svg element")..];
    let tag = &tag[..tag.find('>').unwrap()];
    (attr(tag, "width").unwrap().parse().unwrap(), attr(tag, "height").unwrap().parse().unwrap())
}

/// Width in pixels as plotters' ab_glyph layout computes it.
fn width(t: &SvgText, regular: &FontRef, bold: &FontRef) -> f32 {
    let font = if t.bold { bold } else { regular };
    let scaled = font.as_scaled(t.font_size * 1.24);
    let mut w = 0.0;
    let mut prev = None;
    for c in t.text.chars() {
        let g = scaled.glyph_id(c);
        w += scaled.h_advance(g);
        if let Some(p) = prev {
            w += scaled.kern(p, g);
        }
        prev = Some(g);
    }
    w
}

/// The horizontal (or, rotated, vertical) span of a text along its baseline.
fn span(t: &SvgText, w: f32) -> (f32, f32) {
    let at = if t.rotated { t.y } else { t.x };
    match (t.anchor.as_str(), t.rotated) {
        ("middle", _) => (at - w / 2.0, at + w / 2.0),
        // Rotated by 270 degrees the text runs upwards: its start is at the bottom.
        ("end", false) | ("start", true) => (at - w, at),
        _ => (at, at + w),
    }
}

#[test]
fn every_chart_text_fits_its_canvas() {
    let regular = FontRef::try_from_slice(REGULAR).unwrap();
    let bold = FontRef::try_from_slice(BOLD).unwrap();
    let mut overflows = Vec::new();
    let mut checked = 0;
    for f in FIXTURES {
        let r = rendered(f);
        for file in r.svgs() {
            let svg = r.read(file);
            let (cw, ch) = canvas(&svg);
            for t in texts(&svg) {
                checked += 1;
                let (lo, hi) = span(&t, width(&t, &regular, &bold));
                let limit = if t.rotated { ch } else { cw };
                if lo < 0.0 || hi > limit {
                    overflows.push(format!("{f}/{file}: {:?} spans {lo:.0}..{hi:.0} of 0..{limit}", t.text));
                }
                let cross = if t.rotated { t.x } else { t.y };
                if cross < 0.0 || cross > if t.rotated { cw } else { ch } {
                    overflows.push(format!("{f}/{file}: {:?} is placed off the canvas at {cross}", t.text));
                }
            }
        }
    }
    assert!(checked > 500, "only {checked} texts found: is the SVG parsing right?");
    assert!(overflows.is_empty(), "{} text(s) outside the canvas:\n{}", overflows.len(), overflows.join("\n"));
}

#[test]
fn width_estimate_matches_a_known_text() {
    // "placement" at plotters' size 20 (font-size 16.13 in the SVG): the axis description of
    // every bar chart, centred on the plot; about 90 px wide.
    let regular = FontRef::try_from_slice(REGULAR).unwrap();
    let bold = FontRef::try_from_slice(BOLD).unwrap();
    let t = SvgText {
        x: 100.0,
        y: 0.0,
        font_size: 20.0 / 1.24,
        anchor: "middle".into(),
        bold: false,
        rotated: false,
        text: "placement".into(),
    };
    let w = width(&t, &regular, &bold);
    assert!((80.0..100.0).contains(&w), "{w}");
    let (lo, hi) = span(&t, w);
    assert!((lo + hi - 200.0).abs() < 0.01);
}
