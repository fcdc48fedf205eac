//! The report as a view model: sections, paragraphs, lists, tables and figures, built once from
//! the analysis (`markdown`'s section functions) and rendered by two writers, report.md
//! ([`markdown`]) and report.html ([`html`]), so the two cannot say different things.
//!
//! Text in the model is CommonMark inline markup (`**bold**`, `` `code` ``, `[text](link)`):
//! Markdown writes it as it is, HTML renders it through pulldown-cmark, any raw HTML in it
//! escaped as text.

pub mod html;
pub mod markdown;

/// A whole report: its title and its blocks in order.
#[derive(Clone, Debug, Default)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

/// One block of a report.
#[derive(Clone, Debug)]
pub enum Block {
    /// A section (level 2) or subsection (level 3) heading.
    Heading {
        level: u8,
        text: String,
    },
    Paragraph(String),
    /// Verbatim text (a configuration, a command), with its language for Markdown's fence.
    Code {
        language: String,
        text: String,
    },
    /// A notice set apart from the text (Markdown's `>`).
    Note(String),
    List(Vec<Item>),
    Table(Table),
    Figure(Figure),
    /// Content a reader opens when wanted (HTML `<details>`).
    Details {
        summary: String,
        blocks: Vec<Block>,
    },
    /// Long content kept out of the main text: HTML shows it as `<details>`, Markdown writes it
    /// into `file` (beside report.md; blocks naming one file share it, each under its summary
    /// as a heading) and links it.
    Appendix {
        summary: String,
        file: String,
        blocks: Vec<Block>,
    },
}

/// A list item, with its own sub-items.
#[derive(Clone, Debug)]
pub struct Item {
    pub text: String,
    pub children: Vec<String>,
}

/// A table: its columns, rows of inline text, and a caption saying what it shows (and what its
/// intervals are).
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<String>>,
    pub caption: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Column {
    pub heading: String,
    /// Right-aligned (figures).
    pub numeric: bool,
}

/// A chart: the PNG Markdown links to, the SVG text HTML inlines, and its caption.
#[derive(Clone, Debug)]
pub struct Figure {
    pub png: String,
    pub svg: Option<String>,
    pub caption: String,
}

impl Table {
    /// A table of the given headings; a heading ending in `:` is a figure column (right-aligned),
    /// the `:` left out.
    pub fn new<S: AsRef<str>>(headings: &[S]) -> Table {
        let columns = headings
            .iter()
            .map(|h| {
                let h = h.as_ref();
                match h.strip_suffix(':') {
                    Some(name) => Column { heading: name.to_string(), numeric: true },
                    None => Column { heading: h.to_string(), numeric: false },
                }
            })
            .collect();
        Table { columns, rows: Vec::new(), caption: None }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn caption(mut self, caption: impl Into<String>) -> Table {
        self.caption = Some(caption.into());
        self
    }
}

impl Document {
    pub fn heading(&mut self, level: u8, text: impl Into<String>) {
        self.blocks.push(Block::Heading { level, text: text.into() });
    }

    pub fn para(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    pub fn code(&mut self, language: impl Into<String>, text: impl Into<String>) {
        self.blocks.push(Block::Code { language: language.into(), text: text.into() });
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Note(text.into()));
    }

    /// A list of items without sub-items.
    pub fn list<I: IntoIterator<Item = String>>(&mut self, items: I) {
        let items: Vec<Item> = items.into_iter().map(|text| Item { text, children: Vec::new() }).collect();
        if !items.is_empty() {
            self.blocks.push(Block::List(items));
        }
    }

    pub fn items(&mut self, items: Vec<Item>) {
        if !items.is_empty() {
            self.blocks.push(Block::List(items));
        }
    }

    pub fn table(&mut self, table: Table) {
        self.blocks.push(Block::Table(table));
    }

    pub fn figure(&mut self, figure: Figure) {
        self.blocks.push(Block::Figure(figure));
    }

    pub fn details(&mut self, summary: impl Into<String>, blocks: Vec<Block>) {
        self.blocks.push(Block::Details { summary: summary.into(), blocks });
    }

    pub fn appendix(&mut self, summary: impl Into<String>, file: impl Into<String>, blocks: Vec<Block>) {
        self.blocks.push(Block::Appendix { summary: summary.into(), file: file.into(), blocks });
    }
}

/// Figure and table numbers in document order, counted alike by both writers (a table is
/// numbered when it has a caption).
#[derive(Debug, Default)]
pub(crate) struct Numbers {
    figures: usize,
    tables: usize,
}

impl Numbers {
    pub(crate) fn figure(&mut self) -> usize {
        self.figures += 1;
        self.figures
    }

    pub(crate) fn table(&mut self) -> usize {
        self.tables += 1;
        self.tables
    }
}
