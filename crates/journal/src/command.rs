//! Running external programs: always an argument vector, never a shell string.

use std::ffi::OsStr;
use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A program and its arguments, as data. Printed by `--dry-run`, executed by [`CommandLine::run`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandLine {
    pub program: String,
    pub args: Vec<String>,
}

impl CommandLine {
    pub fn new(program: impl Into<String>) -> Self {
        CommandLine { program: program.into(), args: Vec::new() }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_string_lossy().into_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self.args.push(a.as_ref().to_string_lossy().into_owned());
        }
        self
    }

    /// Runs the program to completion and returns its output; a non-zero exit is an error that
    /// carries the command line and stderr.
    pub fn run(&self) -> Result<Output, CommandError> {
        self.run_with_timeout(None)
    }

    /// Like [`CommandLine::run`] but kills the program after `timeout`.
    pub fn run_with_timeout(&self, timeout: Option<Duration>) -> Result<Output, CommandError> {
        let output = self.output(timeout)?;
        if output.status != 0 {
            return Err(CommandError::Failed {
                command: self.to_string(),
                status: output.status,
                stderr: output.stderr.trim().to_string(),
                stdout: output.stdout.trim().to_string(),
            });
        }
        Ok(output)
    }

    /// Runs the program and returns its output whatever the exit status.
    pub fn output(&self, timeout: Option<Duration>) -> Result<Output, CommandError> {
        self.output_with_input(None, timeout)
    }

    /// Like [`CommandLine::run_with_timeout`], with `input` as the program's stdin (a secret
    /// that must not be on a command line, such as a file's contents written over ssh).
    pub fn run_with_input(&self, input: &[u8], timeout: Option<Duration>) -> Result<Output, CommandError> {
        let output = self.output_with_input(Some(input), timeout)?;
        if output.status != 0 {
            return Err(CommandError::Failed {
                command: self.to_string(),
                status: output.status,
                stderr: output.stderr.trim().to_string(),
                stdout: output.stdout.trim().to_string(),
            });
        }
        Ok(output)
    }

    /// Runs the program with `input` on stdin (None: /dev/null) and returns its output whatever
    /// the exit status.
    pub fn output_with_input(&self, input: Option<&[u8]>, timeout: Option<Duration>) -> Result<Output, CommandError> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| CommandError::Spawn { command: self.to_string(), source })?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            use std::io::Write;
            // A program that exits without reading its input is seen in its status.
            let _ = stdin.write_all(bytes);
        }
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let out_thread = std::thread::spawn(move || read_all(stdout));
        let err_thread = std::thread::spawn(move || read_all(stderr));
        let status = match timeout {
            None => child.wait(),
            Some(limit) => {
                let start = std::time::Instant::now();
                loop {
                    if let Some(status) =
                        child.try_wait().map_err(|source| CommandError::Spawn { command: self.to_string(), source })?
                    {
                        break Ok(status);
                    }
                    if start.elapsed() > limit {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(CommandError::Timeout { command: self.to_string(), after: limit });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        .map_err(|source| CommandError::Spawn { command: self.to_string(), source })?;
        let stdout = out_thread.join().unwrap_or_default();
        let stderr = err_thread.join().unwrap_or_default();
        Ok(Output { status: status.code().unwrap_or(-1), stdout, stderr })
    }
}

fn read_all<R: std::io::Read>(r: Option<R>) -> String {
    let mut buf = Vec::new();
    if let Some(mut r) = r {
        let _ = r.read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

impl fmt::Display for CommandLine {
    /// Shell-quoted for reading; never fed to a shell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", shell_quote(&self.program))?;
        for a in &self.args {
            write!(f, " {}", shell_quote(a))?;
        }
        Ok(())
    }
}

/// Quotes a word the way a reader would type it into a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%<>".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Quotes a word for a POSIX shell that *will* read it (the remote shell of an `ssh` command):
/// always single quotes, unless the word is made only of characters no shell treats specially.
/// Unlike [`shell_quote`] (for reading), `<`, `>`, `%` and `=` are quoted too.
pub fn posix_quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./,:+@".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A command line as one string for a remote POSIX shell, every word quoted.
pub fn posix_command(words: &[String]) -> String {
    words.iter().map(|w| posix_quote(w)).collect::<Vec<_>>().join(" ")
}

/// `ssh <options> <destination> -- <words, quoted>`: `words` run by the remote user's shell as
/// one string in which every word is quoted ([`posix_command`]).
pub fn ssh_command(options: &[String], destination: &str, words: &[String]) -> CommandLine {
    CommandLine::new("ssh").args(options).arg(destination).arg("--").arg(posix_command(words))
}

/// What a finished program printed.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("could not start `{command}`: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("`{command}` exited with status {status}: {}", if stderr.is_empty() { stdout } else { stderr })]
    Failed { command: String, status: i32, stderr: String, stdout: String },
    #[error("`{command}` did not finish within {after:?} and was killed")]
    Timeout { command: String, after: Duration },
}

/// Finds `program` on PATH (plus the sbin directories root normally has).
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return p.exists().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<std::path::PathBuf> = std::env::split_paths(&path).collect();
    for extra in ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
        dirs.push(extra.into());
    }
    dirs.into_iter().map(|d| d.join(program)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_only_what_needs_it() {
        let c = CommandLine::new("mount").args(["-o", "noatime,dax=always", "/dev/loop0", "/mnt/a b"]);
        assert_eq!(c.to_string(), "mount -o noatime,dax=always /dev/loop0 '/mnt/a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn posix_quote_leaves_nothing_for_the_shell() {
        assert_eq!(posix_quote("pgbench"), "pgbench");
        assert_eq!(posix_quote("/usr/lib/postgresql/15/bin/pgbench"), "/usr/lib/postgresql/15/bin/pgbench");
        assert_eq!(posix_quote(""), "''");
        assert_eq!(posix_quote("a b"), "'a b'");
        assert_eq!(posix_quote("it's"), "'it'\\''s'");
        assert_eq!(posix_quote("--log-prefix=/x"), "'--log-prefix=/x'");
        for w in ["$(reboot)", "`id`", "a;b", "a|b", "a&b", "<x", ">x", "*", "~", "a\nb", "!x", "#x", "%x"] {
            let q = posix_quote(w);
            assert!(q.starts_with('\'') && q.ends_with('\''), "{w:?} -> {q}");
        }
    }

    #[test]
    fn posix_quoted_words_come_back_unchanged_from_a_shell() {
        let _forking = crate::forking();
        let words: Vec<String> =
            ["plain", "a b", "it's", "$(echo no)", "`echo no`", "x;echo no", "'", "\"\\", "", "\n", "*", "a=b"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let script = format!("printf '%s\\0' {}", posix_command(&words));
        let out = CommandLine::new("sh").args(["-c", script.as_str()]).run().unwrap();
        let back: Vec<&str> = out.stdout.split('\0').collect();
        assert_eq!(&back[..words.len()], words.iter().map(String::as_str).collect::<Vec<_>>().as_slice());
    }

    #[test]
    fn input_reaches_stdin() {
        let _forking = crate::forking();
        let out = CommandLine::new("cat").run_with_input(b"secret\n", Some(Duration::from_secs(5))).unwrap();
        assert_eq!(out.stdout, "secret\n");
    }

    #[test]
    fn failure_carries_status_and_stderr() {
        let _forking = crate::forking();
        let err = CommandLine::new("sh").args(["-c", "echo oops >&2; exit 3"]).run().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("status 3") && text.contains("oops"), "{text}");
    }

    #[test]
    fn timeout_kills() {
        let _forking = crate::forking();
        let err = CommandLine::new("sleep").arg("5").run_with_timeout(Some(Duration::from_millis(100))).unwrap_err();
        assert!(matches!(err, CommandError::Timeout { .. }));
    }
}
