//! The report as a reader sees it (issue 28): the golden seed-000 slices fixture is rendered,
//! report.html is opened in headless Chromium (Debian's `chromium`, which `cargo xtask setup`
//! installs with poppler-utils): every figure is drawn, nothing is wider than an A4 page's
//! printable area, and the printed PDF (pdfinfo, pdftotext) has the pages and the figure captions
//! expected, each figure's title on the page of its caption (a chart is not cut across pages).
//! Artefacts (report.html, the probe page, report.pdf, screenshots) are kept under
//! `target/tmp/browser/` for a reader to look at. No root needed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::skip;

/// The printable width of an A4 page in CSS pixels: 210 mm less report.css's 12 mm margins
/// each side, at 96 px per inch.
const A4_PRINTABLE_PX: u32 = 703;

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Runs a command to its end (killed after two minutes: a hung browser fails the test rather
/// than the suite); returns its stdout, panicking with its stderr when it fails. Its output goes
/// through scratch files, which a long output cannot fill as it would a pipe nobody reads yet.
fn run(cmd: &mut Command) -> String {
    let what = format!("{cmd:?}");
    let scratch = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (scratch.path().join("stdout"), scratch.path().join("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(status.success(), "{what} failed ({status}): {stderr}");
    String::from_utf8_lossy(&std::fs::read(&out_path).unwrap()).into_owned()
}

/// Headless Chromium with a profile of its own in `dir` (as root it needs `--no-sandbox`).
fn chromium(profile: &Path, args: &[&str]) -> String {
    let mut c = Command::new("chromium");
    c.args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args);
    run(&mut c)
}

fn url(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// One figure as the probe saw it.
struct Seen {
    id: String,
    right: i64,
    width: i64,
    height: i64,
    drawn: i64,
}

/// Opens a copy of `html` whose print rules apply on screen, at the width of A4's printable
/// area, with the probe injected (written to `page`): every figure as it was drawn, and what is
/// wrong (a page wider than the window, a figure not drawn, a figure or table wider than A4).
fn on_screen(profile: &Path, page: &Path, html: &str) -> (Vec<Seen>, Vec<String>) {
    let probe = html
        .replace("@media print {", "@media all {")
        .replace("</body>", &format!("<script>{}</script></body>", include_str!("browser/probe.js")));
    std::fs::write(page, probe).unwrap();
    let window = format!("--window-size={A4_PRINTABLE_PX},1100");
    let dom = chromium(profile, &[&window, "--dump-dom", &url(page)]);
    let report = dom
        .rsplit("<pre id=\"probe\">")
        .next()
        .filter(|_| dom.contains("<pre id=\"probe\">"))
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!("the probe did not run: {}", &dom[dom.len().saturating_sub(400)..]);
        });
    let mut figures = Vec::new();
    let mut problems = Vec::new();
    for line in report.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| w.get(i).and_then(|v| v.parse::<i64>().ok()).unwrap_or(-1);
        match w[0] {
            "page" if n(1) > n(2) => problems.push(format!("the page is {} px wide in a {} px window", n(1), n(2))),
            "figure" => figures.push(Seen { id: w[1].into(), right: n(3), width: n(4), height: n(5), drawn: n(6) }),
            "table" if n(3) > i64::from(A4_PRINTABLE_PX) => {
                problems.push(format!("{} ends at {} px, wider than A4's {A4_PRINTABLE_PX}", w[1], n(3)))
            }
            _ => {}
        }
    }
    for f in &figures {
        if f.width < 300 || f.height < 150 || f.drawn < 20 {
            problems.push(format!("{} is not drawn: {}x{} px, {} elements", f.id, f.width, f.height, f.drawn));
        }
        if f.right > i64::from(A4_PRINTABLE_PX) {
            problems.push(format!("{} ends at {} px, wider than A4's {A4_PRINTABLE_PX}", f.id, f.right));
        }
    }
    (figures, problems)
}

/// The first (bold: its title) and the last text (its footnote's last line) drawn in a
/// figure's SVG, entities decoded; empty without a chart.
fn chart_texts(html: &str, id: &str) -> (String, String) {
    let Some(start) = html.find(&format!("id=\"{id}\"")) else { return Default::default() };
    let figure = &html[start..html[start..].find("</figure>").map_or(html.len(), |e| start + e)];
    let Some(svg) = figure.find("<svg").map(|i| &figure[i..]) else { return Default::default() };
    let texts: Vec<String> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim().to_string()))
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.replace("&apos;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .collect();
    let title = svg.split("font-weight=\"bold\">").nth(1).and_then(|s| s.split("</text>").next()).unwrap_or("");
    (title.to_string(), texts.last().cloned().unwrap_or_default())
}

/// Prints `page` to `pdf` and reads it back: its page count, and what is wrong (not A4, a
/// figure's caption missing, a figure's title, drawn inside its SVG, not on the page of its
/// caption: the figure is missing or cut by a page break, a section missing). `html` is the
/// page's text; `ids` the figures in order, as report.html numbers them.
fn printed(profile: &Path, page: &Path, html: &str, ids: &[&str], pdf: &Path) -> (usize, Vec<String>) {
    chromium(profile, &["--no-pdf-header-footer", &format!("--print-to-pdf={}", pdf.display()), &url(page)]);
    let info = run(Command::new("pdfinfo").arg(pdf));
    let pages: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("pdfinfo: {info}"));
    let mut missing = Vec::new();
    if !info.contains("(A4)") {
        missing.push(format!("not printed on A4: {info}"));
    }
    let page_texts: Vec<String> = (1..=pages)
        .map(|p| {
            run(Command::new("pdftotext")
                .args(["-layout", "-f", &p.to_string(), "-l", &p.to_string()])
                .arg(pdf)
                .arg("-"))
        })
        .collect();
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    let squashed: Vec<String> = page_texts.iter().map(|t| squash(t)).collect();
    for (i, id) in ids.iter().enumerate() {
        let caption = format!("Figure{}.", i + 1);
        let Some(page) = squashed.iter().position(|t| t.contains(&caption)) else {
            missing.push(format!("{id}: its caption \"Figure {}.\" is not in the PDF", i + 1));
            continue;
        };
        // The chart's top (its title, drawn inside the SVG) and bottom (its footnote's last line)
        // are printed on the page of its caption: the figure is whole there. The caption repeats
        // the title, so the page holds it twice. A figure without its chart has neither.
        let (title, last) = chart_texts(html, id);
        let head: String = squash(&title).chars().take(24).collect();
        let tail: String = squash(&last).chars().take(24).collect();
        if head.is_empty() || squashed[page].matches(&head).count() < 2 {
            missing.push(format!("{id}: its chart's title \"{title}\" is not on page {} with its caption", page + 1));
        }
        if tail.is_empty() || !squashed[page].contains(&tail) {
            missing
                .push(format!("{id}: its chart's last line \"{last}\" is not on page {} with its caption", page + 1));
        }
    }
    for t in ["Table1.", "Contents", "Publishedvsmeasured", "Findings", "Results", "Method"] {
        if !squashed.iter().any(|p| p.contains(t)) {
            missing.push(format!("\"{t}\" is not in the PDF"));
        }
    }
    (pages, missing)
}

#[test]
fn report_html_in_a_browser_and_printed() {
    if !on_path("chromium") {
        skip("chromium is not installed (cargo xtask test, or cargo xtask setup --tests, installs Debian's chromium)");
        return;
    }
    if !on_path("pdftotext") || !on_path("pdfinfo") {
        skip(
            "pdftotext/pdfinfo are not installed (cargo xtask test, or cargo xtask setup --tests, installs poppler-utils)",
        );
        return;
    }
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser");
    let _ = std::fs::remove_dir_all(&out);
    let set = out.join("seed000-slices");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/report/tests/fixtures/seed000-slices");
    copy_dir(&fixture, &set);
    report::render(&set).unwrap();
    let html = std::fs::read_to_string(set.join("report.html")).unwrap();
    assert!(!html.contains("<script"), "report.html needs no script");
    for fetch in ["src=\"http", "href=\"http", "<link", "@import", "url("] {
        assert!(!html.contains(fetch), "report.html fetches nothing, but has {fetch}");
    }
    let charts = std::fs::read_dir(set.join("charts"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert!(charts >= 8, "the fixture draws its charts ({charts})");
    let profile = out.join("chromium-profile");

    // On screen, the print rules applied, at the width of A4's printable area.
    let window = format!("--window-size={A4_PRINTABLE_PX},1100");
    let (figures, problems) = on_screen(&profile, &set.join("probe.html"), &html);
    assert_eq!(figures.len(), charts, "every chart is a figure of report.html");
    assert!(problems.is_empty(), "report.html at A4 width:\n{}", problems.join("\n"));

    // Screenshots, for a reader of the test's artefacts.
    let top = out.join("report-top.png");
    chromium(&profile, &[&window, &format!("--screenshot={}", top.display()), &url(&set.join("report.html"))]);
    assert!(std::fs::metadata(&top).is_ok_and(|m| m.len() > 10_000), "a screenshot of the report's first screen");

    // Printed: A4 pages, every caption, each figure whole on its page.
    let pdf = out.join("report.pdf");
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    let (pages, missing) = printed(&profile, &set.join("report.html"), &html, &ids, &pdf);
    // A chart kept whole takes about half a page at A4's width; the text, tables and table of
    // contents add a few pages, the closed run lists none.
    assert!((charts.div_ceil(2)..=charts + 8).contains(&pages), "{pages} pages for {charts} figures");
    assert!(missing.is_empty(), "report.pdf ({pages} pages):\n{}", missing.join("\n"));

    // The check itself: a figure cut by a page break (its caption forced onto the next page)
    // and a figure whose chart is missing (its SVG removed) must each fail it, by name.
    let cut = html.find("id=\"figure-2\"").expect("a second figure");
    let caption = cut + html[cut..].find("<figcaption").unwrap();
    let mut broken = format!("{}<div style=\"break-before: page\"></div>{}", &html[..caption], &html[caption..]);
    let gone = broken.find("id=\"figure-3\"").expect("a third figure");
    let (svg, svg_end) =
        (gone + broken[gone..].find("<svg").unwrap(), gone + broken[gone..].find("</svg>").unwrap() + 6);
    broken.replace_range(svg..svg_end, "");
    let broken_page = set.join("broken.html");
    std::fs::write(&broken_page, &broken).unwrap();
    let (_, screen) = on_screen(&profile, &set.join("broken-probe.html"), &broken);
    let (_, print) = printed(&profile, &broken_page, &broken, &ids, &out.join("broken.pdf"));
    let of = |p: &str, id: &str| p.starts_with(&format!("{id} ")) || p.starts_with(&format!("{id}:"));
    let named = |problems: &[String], id: &str, what: &str| problems.iter().any(|p| of(p, id) && p.contains(what));
    assert!(named(&screen, "figure-3", "is not drawn"), "the missing chart is found on screen: {screen:?}");
    assert!(named(&print, "figure-3", "is not on page"), "the missing chart is found in print: {print:?}");
    assert!(named(&print, "figure-2", "is not on page"), "the cut figure is found in print: {print:?}");
    let others: Vec<&String> =
        screen.iter().chain(&print).filter(|p| !of(p, "figure-2") && !of(p, "figure-3")).collect();
    assert!(others.is_empty(), "only the broken figures fail: {others:?}");
    let _ = std::fs::remove_dir_all(&profile);
}
