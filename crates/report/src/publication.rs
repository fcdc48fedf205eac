//! `--figures publication`: every chart of the report as a journal takes it, under
//! `charts/publication/`: vector SVG (text drawn as outlines, so no font is needed) and PDF (the
//! embedded DejaVu Sans, subset, embedded in the file), a PNG at 300 dpi (its pHYs chunk says
//! so), all at a double-column width of 183 mm (Nature's and Science's double column; the
//! charts are drawn for a 1280 px canvas, too wide for an 89 mm single column), and a caption
//! file beside each with its size and its smallest text in points.
//!
//! The SVG the chart layer drew is parsed once by usvg (with the embedded font), then written
//! by usvg's writer, converted by svg2pdf (typst's) and rasterised by resvg: three outputs of
//! one tree, no browser and no process.

use std::path::PathBuf;
use std::sync::Arc;

use resvg::usvg;

use crate::output::Output;
use crate::views::ChartFile;

/// The figures' width: a double column.
pub const WIDTH_MM: f64 = 183.0;
/// The PNG's resolution.
pub const DPI: f64 = 300.0;
/// Where the figures go, under the results directory.
pub const DIR: &str = "charts/publication";

const MM_PER_INCH: f64 = 25.4;
const MM_PER_PT: f64 = MM_PER_INCH / 72.0;

/// Which figures a render writes besides the report's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Figures {
    /// The report's PNG and SVG only.
    #[default]
    Screen,
    /// Also every figure at a journal's size ([`figures`]).
    Publication,
}

impl std::str::FromStr for Figures {
    type Err = String;
    fn from_str(s: &str) -> Result<Figures, String> {
        match s {
            "screen" => Ok(Figures::Screen),
            "publication" => Ok(Figures::Publication),
            other => Err(format!("unknown figures `{other}`: `screen` or `publication`")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PublicationError {
    #[error("{figure}: the chart has no SVG to convert")]
    NoSvg { figure: String },
    #[error("{figure}: parse its SVG")]
    Parse {
        figure: String,
        #[source]
        source: usvg::Error,
    },
    /// svg2pdf's error implements no `std::error::Error`: its text is kept.
    #[error("{figure}: convert to PDF: {message}")]
    Pdf { figure: String, message: String },
    #[error("{figure}: a {width}x{height} px canvas")]
    Canvas { figure: String, width: u32, height: u32 },
    #[error("{figure}: encode the PNG")]
    Png {
        figure: String,
        #[source]
        source: png::EncodingError,
    },
}

/// The usvg options: the embedded DejaVu Sans as every `sans-serif` text's font.
fn options() -> usvg::Options<'static> {
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_font_data(include_bytes!("../../../assets/fonts/DejaVuSans.ttf").to_vec());
    db.load_font_data(include_bytes!("../../../assets/fonts/DejaVuSans-Bold.ttf").to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    opt.font_family = "DejaVu Sans".into();
    opt
}

/// Every chart's publication figure: `<stem>.svg`, `.pdf`, `.png` and `.caption.txt` under
/// [`DIR`], figure numbers in report order.
pub fn figures(charts: &[ChartFile]) -> Result<Vec<Output>, PublicationError> {
    let opt = Arc::new(options());
    let mut out = Vec::new();
    for (i, c) in charts.iter().enumerate() {
        let stem = c.file.trim_start_matches("charts/").trim_end_matches(".png").to_string();
        out.extend(figure(&opt, i + 1, &stem, c)?);
    }
    Ok(out)
}

fn figure(opt: &usvg::Options, number: usize, stem: &str, c: &ChartFile) -> Result<Vec<Output>, PublicationError> {
    let figure = stem.to_string();
    let svg = c.svg.as_deref().ok_or_else(|| PublicationError::NoSvg { figure: figure.clone() })?;
    let tree =
        usvg::Tree::from_str(svg, opt).map_err(|source| PublicationError::Parse { figure: figure.clone(), source })?;
    let size = tree.size();
    let mm_per_px = WIDTH_MM / size.width() as f64;
    let height_mm = size.height() as f64 * mm_per_px;
    let path = |ext: &str| PathBuf::from(DIR).join(format!("{stem}.{ext}"));

    let view_box = format!("0 0 {} {}", size.width(), size.height());
    let svg_out = sized_svg(&tree.to_string(&usvg::WriteOptions::default()), WIDTH_MM, height_mm, &view_box);
    let page = svg2pdf::PageOptions { dpi: (size.width() as f64 / (WIDTH_MM / MM_PER_INCH)) as f32 };
    let pdf = svg2pdf::to_pdf(&tree, svg2pdf::ConversionOptions::default(), page)
        .map_err(|e| PublicationError::Pdf { figure: figure.clone(), message: e.to_string() })?;
    let png = raster(&tree, &figure)?;
    let smallest_pt = smallest_font_px(svg).map(|px| px * mm_per_px / MM_PER_PT);
    let caption = format!(
        "Figure {number}. {}\n\nSize: {WIDTH_MM:.0} x {height_mm:.1} mm (a double column); {stem}.pdf and {stem}.svg are vector (the PDF embeds DejaVu Sans as a subset, the SVG draws its text as outlines), {stem}.png is {} x {} px at {DPI:.0} dpi.{}\n",
        c.caption,
        png.1,
        png.2,
        smallest_pt.map(|pt| format!(" Smallest text: {pt:.1} pt at this size.")).unwrap_or_default(),
    );
    Ok(vec![
        Output::bytes(path("svg"), svg_out.into_bytes()),
        Output::bytes(path("pdf"), pdf),
        Output::bytes(path("png"), png.0),
        Output::bytes(path("caption.txt"), caption.into_bytes()),
    ])
}

/// The SVG with its width and height in millimetres and the view box of its pixels (usvg's
/// writer leaves the view box out).
fn sized_svg(svg: &str, width_mm: f64, height_mm: f64, view_box: &str) -> String {
    let Some(start) = svg.find("<svg") else { return svg.to_string() };
    let end = start + svg[start..].find('>').unwrap_or(0);
    let head = &svg[start..end];
    let set = |head: &str, key: &str, value: String| -> String {
        let pat = format!(" {key}=\"");
        match head.find(&pat) {
            Some(i) => {
                let from = i + pat.len();
                let to = from + head[from..].find('"').unwrap_or(0);
                format!("{}{value}{}", &head[..from], &head[to..])
            }
            None => format!("{head} {key}=\"{value}\""),
        }
    };
    let head = set(head, "width", format!("{width_mm:.1}mm"));
    let head = set(&head, "height", format!("{height_mm:.1}mm"));
    let head = set(&head, "viewBox", view_box.to_string());
    format!("{}{head}{}", &svg[..start], &svg[end..])
}

/// The PNG at [`DPI`] on a white ground, its resolution recorded; with its pixel size.
fn raster(tree: &usvg::Tree, figure: &str) -> Result<(Vec<u8>, u32, u32), PublicationError> {
    let size = tree.size();
    let width = (WIDTH_MM / MM_PER_INCH * DPI).round() as u32;
    let scale = width as f32 / size.width();
    let height = (size.height() * scale).round() as u32;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(width, height).ok_or_else(|| PublicationError::Canvas {
        figure: figure.to_string(),
        width,
        height,
    })?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(tree, resvg::tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    // Opaque pixels: premultiplied RGBA is plain RGBA; drop the alpha.
    let rgb: Vec<u8> = pixmap.data().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
    let mut bytes = Vec::new();
    let err = |source| PublicationError::Png { figure: figure.to_string(), source };
    {
        let mut enc = png::Encoder::new(&mut bytes, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let per_metre = (DPI / MM_PER_INCH * 1000.0).round() as u32;
        enc.set_pixel_dims(Some(png::PixelDimensions { xppu: per_metre, yppu: per_metre, unit: png::Unit::Meter }));
        let mut w = enc.write_header().map_err(err)?;
        w.write_image_data(&rgb).map_err(err)?;
    }
    Ok((bytes, width, height))
}

/// The smallest `font-size` of the chart's SVG, in its pixels.
fn smallest_font_px(svg: &str) -> Option<f64> {
    svg.split("font-size=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse::<f64>().ok())
        .min_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_becomes_svg_pdf_and_png_at_183_mm_and_300_dpi_with_a_caption() {
        let svg = r##"<svg width="1280" height="760" viewBox="0 0 1280 760" xmlns="http://www.w3.org/2000/svg"><rect x="0" y="0" width="1280" height="760" fill="#FFFFFF"/><text x="24" y="40" font-family="sans-serif" font-size="14">throughput</text><text x="24" y="80" font-family="sans-serif" font-size="24" font-weight="bold">title</text></svg>"##;
        let chart = ChartFile {
            section: "s".into(),
            file: "charts/throughput-tpcb-c8.png".into(),
            caption: "tpcb: throughput (error bars: 95%)".into(),
            svg: Some(svg.into()),
        };
        let out = figures(&[chart]).unwrap();
        let names: Vec<String> = out.iter().map(|o| o.path.display().to_string()).collect();
        assert_eq!(
            names,
            ["svg", "pdf", "png", "caption.txt"].map(|x| format!("charts/publication/throughput-tpcb-c8.{x}"))
        );
        let body = |i: usize| match &out[i].body {
            crate::output::Body::Bytes(b) => b.clone(),
            crate::output::Body::Png(_) => unreachable!(),
        };
        let svg_out = String::from_utf8(body(0)).unwrap();
        assert!(svg_out.contains("width=\"183.0mm\"") && svg_out.contains("height=\"108.7mm\""), "{svg_out}");
        assert!(svg_out.contains("viewBox=\"0 0 1280 760\""), "the drawing scaled to the size, not cut: {svg_out}");
        assert!(!svg_out.contains("<text"), "text drawn as outlines");
        let pdf = body(1);
        assert!(pdf.starts_with(b"%PDF-"));
        let pdf_text = String::from_utf8_lossy(&pdf);
        assert!(pdf_text.contains("/FontFile2") && pdf_text.contains("DejaVuSans"), "the font is embedded");
        // 183 mm at 72 pt per inch: a 518.7 pt wide page.
        assert!(pdf_text.contains("518.74"), "page width in points");
        let png = body(2);
        let decoder = png::Decoder::new(std::io::Cursor::new(&png));
        let reader = decoder.read_info().unwrap();
        let info = reader.info();
        assert_eq!((info.width, info.height), (2161, 1283), "183 mm at 300 dpi");
        let dims = info.pixel_dims.unwrap();
        assert_eq!((dims.xppu, dims.unit), (11811, png::Unit::Meter), "300 dpi recorded");
        let caption = String::from_utf8(body(3)).unwrap();
        assert!(caption.starts_with("Figure 1. tpcb: throughput (error bars: 95%)"), "{caption}");
        // 14 px of 1280 across 183 mm: 2.0 mm, 5.66 pt.
        assert!(caption.contains("Smallest text: 5.7 pt"), "{caption}");
    }
}
