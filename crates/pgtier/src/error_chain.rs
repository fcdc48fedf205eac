//! Errors shown with their causes, as `{:#}` shows an `anyhow::Error` ("outer: cause: cause"),
//! but without a cause whose text its parent's message already contains: many error types put
//! their source into their own message (`"journal {path}: {source}"`) *and* report it as
//! `source()`, and the line a user reads must say each thing once.

use std::error::Error;
use std::fmt;

/// Displays `error` and each cause its message does not already contain, joined by ": ".
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parent = self.0.to_string();
        f.write_str(&parent)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let text = c.to_string();
            if !parent.contains(&text) {
                write!(f, ": {text}")?;
            }
            parent = text;
            cause = c.source();
        }
        Ok(())
    }
}

/// The chain of an `anyhow::Error`.
pub fn chain(e: &anyhow::Error) -> Chain<'_> {
    Chain(e.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[derive(Debug, thiserror::Error)]
    #[error("journal /x: {source}")]
    struct Repeats {
        source: std::io::Error,
    }

    fn io() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied")
    }

    #[test]
    fn like_alternate_display_for_contexts() {
        let e = Err::<(), _>(io()).context("write provision.log").context("step 2").unwrap_err();
        assert_eq!(chain(&e).to_string(), format!("{e:#}"));
        assert_eq!(chain(&e).to_string(), "step 2: write provision.log: permission denied");
    }

    #[test]
    fn a_source_already_in_the_message_is_said_once() {
        let e = anyhow::Error::from(Repeats { source: io() });
        assert_eq!(format!("{e:#}"), "journal /x: permission denied: permission denied");
        assert_eq!(chain(&e).to_string(), "journal /x: permission denied");
        let e = e.context("open the run record");
        assert_eq!(chain(&e).to_string(), "open the run record: journal /x: permission denied");
    }
}
