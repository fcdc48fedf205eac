//! A [`Document`] as Markdown: blocks separated by one blank line, GitHub tables, figures as
//! images linking their PNGs, `<details>` as GitHub renders it.

use super::{Block, Document, Numbers, Table};
use std::fmt::Write as _;

/// The Markdown text of a document.
pub fn render(doc: &Document) -> String {
    let mut s = format!("# {}\n\n", doc.title);
    let mut numbers = Numbers::default();
    blocks(&mut s, &doc.blocks, &mut numbers);
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}

fn blocks(s: &mut String, blocks: &[Block], numbers: &mut Numbers) {
    for b in blocks {
        block(s, b, numbers);
    }
}

fn block(s: &mut String, b: &Block, numbers: &mut Numbers) {
    match b {
        Block::Heading { level, text } => {
            let _ = writeln!(s, "{} {text}\n", "#".repeat(usize::from(*level)));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(s, "{text}\n");
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
        Block::Table(t) => table(s, t, numbers),
        Block::Figure(f) => {
            let n = numbers.figure();
            let _ = writeln!(s, "![{}]({})\n", f.caption, f.png);
            let _ = n;
        }
        Block::Details { summary, blocks: inner } => {
            let _ = writeln!(s, "<details><summary>{summary}</summary>\n");
            blocks(s, inner, numbers);
            let _ = writeln!(s, "</details>\n");
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
