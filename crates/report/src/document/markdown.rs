//! A [`Document`] as Markdown: blocks separated by one blank line, GitHub tables, figures as
//! images linking their PNGs, `<details>` as GitHub renders it, appendices in files of their
//! own, linked.

use super::{Block, Document, Numbers, Table};
use std::fmt::Write as _;

/// The Markdown text of a document (its appendices linked, not written: [`render_all`]).
pub fn render(doc: &Document) -> String {
    render_all(doc).0
}

/// The Markdown text of a document and of each appendix file it links, as (file, text).
pub fn render_all(doc: &Document) -> (String, Vec<(String, String)>) {
    let mut w = Writer::default();
    let mut s = format!("# {}\n\n", doc.title);
    blocks(&mut s, &doc.blocks, &mut w);
    end(&mut s);
    let files = w
        .appendices
        .into_iter()
        .map(|(file, mut text)| {
            end(&mut text);
            (file, format!("# {}: appendix to report.md\n\n{text}", doc.title))
        })
        .collect();
    (s, files)
}

/// One newline at the end.
fn end(s: &mut String) {
    s.truncate(s.trim_end().len());
    s.push('\n');
}

#[derive(Default)]
struct Writer {
    numbers: Numbers,
    /// Each appendix file and its text so far.
    appendices: Vec<(String, String)>,
}

fn blocks(s: &mut String, blocks: &[Block], w: &mut Writer) {
    for b in blocks {
        block(s, b, w);
    }
}

fn block(s: &mut String, b: &Block, w: &mut Writer) {
    match b {
        Block::Heading { level, text } => {
            let _ = writeln!(s, "{} {text}\n", "#".repeat(usize::from(*level)));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(s, "{text}\n");
        }
        Block::Code { language, text } => {
            let _ = writeln!(s, "```{language}\n{}\n```\n", text.trim_end());
        }
        Block::Note(text) => {
            let _ = writeln!(s, "> {text}\n");
        }
        Block::List(items) => {
            for i in items {
                let _ = writeln!(s, "- {}", i.text);
                for c in &i.children {
                    let _ = writeln!(s, "  - {c}");
                }
            }
            s.push('\n');
        }
        Block::Table(t) => table(s, t, &mut w.numbers),
        Block::Figure(f) => {
            w.numbers.figure();
            let _ = writeln!(s, "![{}]({})\n", f.caption, f.png);
        }
        Block::Details { summary, blocks: inner } => {
            let _ = writeln!(s, "<details><summary>{summary}</summary>\n");
            blocks(s, inner, w);
            let _ = writeln!(s, "</details>\n");
        }
        Block::Appendix { summary, file, blocks: inner } => {
            let _ = writeln!(s, "{summary}: [{file}]({file})\n");
            let mut text = format!("## {summary}\n\n");
            blocks(&mut text, inner, w);
            match w.appendices.iter_mut().find(|(f, _)| f == file) {
                Some((_, t)) => t.push_str(&text),
                None => w.appendices.push((file.clone(), text)),
            }
        }
    }
}

fn table(s: &mut String, t: &Table, numbers: &mut Numbers) {
    if let Some(c) = &t.caption {
        let _ = writeln!(s, "**Table {}.** {c}\n", numbers.table());
    }
    let heads: Vec<String> =
        t.columns.iter().map(|c| if c.heading.is_empty() { " ".into() } else { format!(" {} ", c.heading) }).collect();
    let _ = writeln!(s, "|{}|", heads.join("|"));
    let rule: String = t.columns.iter().map(|c| if c.numeric { "---:|" } else { "---|" }).collect();
    let _ = writeln!(s, "|{rule}");
    for r in &t.rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s.push('\n');
}
