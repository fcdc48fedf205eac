//! A [`Document`] as one self-contained HTML file: the charts' SVG inline, the style sheet in
//! the head, no script and nothing fetched; a table of contents, numbered figures and tables
//! with their captions, and a print style sheet (A4, tables and charts not cut).
//!
//! Templated with maud: the markup is checked when pgtier is compiled and every value is
//! escaped unless it is marked as markup (the inline text pulldown-cmark rendered, and the SVG
//! the chart renderer drew).

use super::{Block, Document, Numbers, Table};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// Tables of this many columns or more are set in a smaller type.
const WIDE: usize = 9;

/// The style sheet, screen and print.
const STYLE: &str = include_str!("report.css");

/// The HTML text of a document.
pub fn render(doc: &Document) -> String {
    let mut ids = Ids::default();
    let toc: Vec<(u8, String, Markup)> =
        headings(&doc.blocks).into_iter().map(|(level, text)| (level, ids.next(text), inline(text))).collect();
    let mut ids = Ids::default();
    let mut numbers = Numbers::default();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content="pgtier";
                title { (doc.title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header { h1 { (doc.title) } }
                nav.toc aria-label="Contents" {
                    h2 { "Contents" }
                    ol {
                        @for (i, (level, id, text)) in toc.iter().enumerate() {
                            @if *level <= 2 {
                                li {
                                    a href=(format!("#{id}")) { (text) }
                                    @let subs: Vec<_> = toc[i + 1..].iter().take_while(|(l, _, _)| *l > 2).collect();
                                    @if !subs.is_empty() {
                                        ol { @for (_, id, text) in subs { li { a href=(format!("#{id}")) { (text) } } } }
                                    }
                                }
                            }
                        }
                    }
                }
                main { (blocks(&doc.blocks, &mut ids, &mut numbers)) }
            }
        }
    }
    .into_string()
}

/// The headings of a document in order, those inside `<details>` left out (a reader cannot
/// jump into a closed block).
fn headings(blocks: &[Block]) -> Vec<(u8, &str)> {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading { level, text } => Some((*level, text.as_str())),
            _ => None,
        })
        .collect()
}

fn blocks(blocks: &[Block], ids: &mut Ids, numbers: &mut Numbers) -> Markup {
    html! { @for b in blocks { (block(b, ids, numbers)) } }
}

fn block(b: &Block, ids: &mut Ids, numbers: &mut Numbers) -> Markup {
    match b {
        Block::Heading { level, text } => {
            let id = ids.next(text);
            match level {
                2 => html! { h2 id=(id) { (inline(text)) } },
                3 => html! { h3 id=(id) { (inline(text)) } },
                _ => html! { h4 id=(id) { (inline(text)) } },
            }
        }
        Block::Paragraph(text) => html! { p { (inline(text)) } },
        Block::Code { text, .. } => html! { pre { code { (text) } } },
        Block::Note(text) => html! { aside.note { p { (inline(text)) } } },
        Block::List(items) => html! {
            ul {
                @for i in items {
                    li {
                        (inline(&i.text))
                        @if !i.children.is_empty() {
                            ul { @for c in &i.children { li { (inline(c)) } } }
                        }
                    }
                }
            }
        },
        Block::Table(t) => table(t, numbers),
        Block::Figure(f) => {
            let n = numbers.figure();
            html! {
                figure.chart id=(format!("figure-{n}")) {
                    @match &f.svg {
                        Some(svg) => div.svg { (PreEscaped(svg_body(svg))) },
                        None => img src=(f.png) alt=(f.caption);
                    }
                    figcaption { b { "Figure " (n) "." } " " (inline(&f.caption)) }
                }
            }
        }
        Block::Details { summary, blocks: inner } | Block::Appendix { summary, blocks: inner, .. } => html! {
            details {
                summary { (inline(summary)) }
                (blocks(inner, ids, numbers))
            }
        },
    }
}

fn table(t: &Table, numbers: &mut Numbers) -> Markup {
    let n = t.caption.as_ref().map(|_| numbers.table());
    let class = |numeric: bool| if numeric { "num" } else { "" };
    html! {
        div.table.wide[t.columns.len() >= WIDE] id=[n.map(|n| format!("table-{n}"))] {
            table {
                @if let (Some(n), Some(c)) = (n, &t.caption) {
                    caption { b { "Table " (n) "." } " " (inline(c)) }
                }
                thead { tr { @for c in &t.columns { th class=(class(c.numeric)) { (inline(&c.heading)) } } } }
                tbody {
                    @for r in &t.rows {
                        tr {
                            @for (i, cell) in r.iter().enumerate() {
                                td class=(class(t.columns.get(i).is_some_and(|c| c.numeric))) { (inline(cell)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The SVG element of a chart file, without an XML declaration, for inlining.
fn svg_body(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// Inline markup as HTML: bold, code and links; raw HTML in the text (`runs/<id>/`) is text.
pub(crate) fn inline(text: &str) -> Markup {
    let events = Parser::new(text).filter_map(|e| match e {
        Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) => None,
        Event::Html(h) | Event::InlineHtml(h) => Some(Event::Text(h)),
        e => Some(e),
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    PreEscaped(out.trim_end().to_string())
}

/// Element ids from heading texts: lower-case words joined by `-`, made unique with a number.
#[derive(Default)]
struct Ids(Vec<String>);

impl Ids {
    fn next(&mut self, text: &str) -> String {
        let mut slug = String::new();
        for c in text.chars() {
            if c.is_alphanumeric() {
                slug.extend(c.to_lowercase());
            } else if !slug.is_empty() && !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug = slug.trim_end_matches('-').to_string();
        let slug = if slug.is_empty() { "section".to_string() } else { slug };
        let mut id = slug.clone();
        let mut n = 1;
        while self.0.contains(&id) {
            n += 1;
            id = format!("{slug}-{n}");
        }
        self.0.push(id.clone());
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markup_is_rendered_and_raw_html_escaped() {
        assert_eq!(
            inline("a **real change**, `x<y>`").into_string(),
            "a <strong>real change</strong>, <code>x&lt;y&gt;</code>"
        );
        assert_eq!(inline("in runs/<id>/ & <script>").into_string(), "in runs/&lt;id&gt;/ &amp; &lt;script&gt;");
        assert_eq!(inline("[f.json](runs/f.json)").into_string(), "<a href=\"runs/f.json\">f.json</a>");
    }

    #[test]
    fn ids_are_unique_slugs() {
        let mut ids = Ids::default();
        assert_eq!(ids.next("Published vs measured"), "published-vs-measured");
        assert_eq!(ids.next("Device ceilings (fio, before the matrix)"), "device-ceilings-fio-before-the-matrix");
        assert_eq!(ids.next("Published vs measured"), "published-vs-measured-2");
        assert_eq!(ids.next("**?**"), "section");
    }
}
