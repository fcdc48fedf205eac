//! Errors that name the file, line and key, and say how to fix the input.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in a configuration file.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based line, when the problem has a place in the file.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// The key, as a dotted path (`device[2].emulate.size`).
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in the configuration (all are reported at once).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Maps byte offsets of one file to lines and columns.
pub struct Source<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        (line, col)
    }

    /// An error at `span` (or without a place).
    pub fn error(
        &self,
        span: Option<Range<usize>>,
        key: impl Into<Option<String>>,
        message: impl Into<String>,
    ) -> ConfigError {
        let (line, column) = match span {
            Some(s) => {
                let (l, c) = self.line_col(s.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ConfigError { file: self.path.to_path_buf(), line, column, key: key.into(), message: message.into() }
    }
}
