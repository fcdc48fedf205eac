//! Undos of effects on another host of the experiment (a storage target host): each runs there
//! over ssh as a constant script with the record's values as positional arguments, every word
//! quoted for the remote shell ([`crate::command::ssh_command`]). Each is idempotent like every
//! undo: it looks first, and says when nothing was left.

use std::time::Duration;

use crate::command::{CommandLine, ssh_command};
use crate::outcome::{Outcome, UndoError};

/// What undoes one effect on another host.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum RemoteOp {
    /// Stop every process named `program` whose command line has `pidfile` as a word (its
    /// `--pidfile`, a path in the run's own directory there): SIGTERM, SIGKILL after 5 s. Found
    /// by its command line, not by the file: a process killed before it wrote the file is found
    /// too, and a reused PID is not.
    StopProcess { program: String, pidfile: String },
    /// Remove a directory (`rmdir`: configfs items of nvmet, which go only once empty). With
    /// `mark`, only when that file exists there: the step that made the directory wrote it
    /// right after its `mkdir` succeeded, so an item that was in the way (another owner's,
    /// EEXIST) is left alone even when pgtier died before it could release this record.
    Rmdir {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mark: Option<String>,
    },
    /// Remove a symbolic link (configfs: a subsystem linked into an nvmet port); with `mark`,
    /// only when that file exists there (as for [`RemoteOp::Rmdir`]).
    Unlink {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mark: Option<String>,
    },
}

/// Finds the processes (not itself, whose command line holds the word too), stops them, waits
/// until they are gone; prints `done` or `none`.
const STOP: &str = r#"prog=$1; needle=$2; found=
for d in /proc/[0-9]*; do
  [ "${d#/proc/}" = "$$" ] && continue
  [ "$(cat "$d/comm" 2>/dev/null)" = "$prog" ] || continue
  tr '\0' '\n' < "$d/cmdline" 2>/dev/null | grep -qxF -- "$needle" || continue
  found="$found ${d#/proc/}"
done
[ -n "$found" ] || { echo none; exit 0; }
kill -TERM $found 2>/dev/null
i=0
while [ $i -lt 50 ]; do
  alive=
  for p in $found; do [ -d "/proc/$p" ] && alive="$alive $p"; done
  [ -n "$alive" ] || { echo done; exit 0; }
  sleep 0.1; i=$((i+1))
done
kill -KILL $alive 2>/dev/null; sleep 0.5
for p in $alive; do [ -d "/proc/$p" ] && { echo "still running: $p" >&2; exit 1; }; done
echo done"#;

/// A mark is gone with its item: the mark file, and its directory once empty.
const UNMARK: &str = r#"unmark() { [ -z "${1:-}" ] || { rm -f -- "$1"; rmdir -- "${1%/*}" 2>/dev/null; }; return 0; }"#;

const RMDIR: &str = r#"[ -d "$1" ] || { echo none; exit 0; }
[ -z "${2:-}" ] || [ -e "$2" ] || { echo "$1: not made by this run (no $2): left alone" >&2; echo none; exit 0; }
rmdir -- "$1" || exit 1
unmark "${2:-}"; echo done"#;

const UNLINK: &str = r#"[ -L "$1" ] || { echo none; exit 0; }
[ -z "${2:-}" ] || [ -e "$2" ] || { echo "$1: not made by this run (no $2): left alone" >&2; echo none; exit 0; }
rm -f -- "$1" || exit 1
unmark "${2:-}"; echo done"#;

impl RemoteOp {
    /// The words run on the host: `sh -c <constant script> sh <values>`.
    pub fn words(&self) -> Vec<String> {
        let (script, args): (String, Vec<&str>) = match self {
            RemoteOp::StopProcess { program, pidfile } => (STOP.into(), vec![program, pidfile]),
            RemoteOp::Rmdir { path, mark } => {
                (format!("{UNMARK}\n{RMDIR}"), std::iter::once(path.as_str()).chain(mark.as_deref()).collect())
            }
            RemoteOp::Unlink { path, mark } => {
                (format!("{UNMARK}\n{UNLINK}"), std::iter::once(path.as_str()).chain(mark.as_deref()).collect())
            }
        };
        let mut w: Vec<String> = vec!["sh".into(), "-c".into(), script, "sh".into()];
        w.extend(args.into_iter().map(str::to_string));
        w
    }

    /// What the undo does, as teardown prints it.
    pub fn describe(&self) -> String {
        match self {
            RemoteOp::StopProcess { program, pidfile } => format!("stop {program} (--pidfile {pidfile})"),
            RemoteOp::Rmdir { path, mark: None } => format!("rmdir {path}"),
            RemoteOp::Rmdir { path, mark: Some(_) } => format!("rmdir {path} (if this run made it)"),
            RemoteOp::Unlink { path, mark: None } => format!("rm {path}"),
            RemoteOp::Unlink { path, mark: Some(_) } => format!("rm {path} (if this run made it)"),
        }
    }

    /// The command line that performs it on the host reached by `options` and `destination`.
    pub fn command(&self, options: &[String], destination: &str) -> CommandLine {
        ssh_command(options, destination, &self.words())
    }

    /// Performs it over ssh.
    pub fn perform(&self, options: &[String], destination: &str) -> Result<Outcome, UndoError> {
        let out = self.command(options, destination).run_with_timeout(Some(Duration::from_secs(60)))?;
        Ok(if out.stdout.trim() == "none" { Outcome::NothingLeft } else { Outcome::Done })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_positional_arguments_of_a_constant_script() {
        let op = RemoteOp::StopProcess { program: "nbdkit".into(), pidfile: "/tmp/pgtier-x/$(reboot).pid".into() };
        let c = op.command(&["-F".into(), "none".into()], "root@192.0.2.9");
        let remote = c.args.last().unwrap();
        assert!(remote.starts_with("sh -c 'prog=$1;"), "{remote}");
        assert!(remote.ends_with(" sh nbdkit '/tmp/pgtier-x/$(reboot).pid'"), "{remote}");
        assert_eq!(&c.args[..4], ["-F", "none", "root@192.0.2.9", "--"]);
        let w = RemoteOp::Rmdir { path: "/sys/kernel/config/nvmet/ports/7".into(), mark: None }.words();
        assert_eq!(&w[3..], ["sh", "/sys/kernel/config/nvmet/ports/7"]);
    }

    #[test]
    fn a_process_is_stopped_by_the_word_on_its_command_line() {
        let _forking = crate::forking();
        let d = tempfile::tempdir().unwrap();
        let word = d.path().join("x.pid").display().to_string();
        // `sh -c SCRIPT WORD`: WORD is on sh's command line, as --pidfile's value is on nbdkit's.
        let mut child =
            std::process::Command::new("sh").args(["-c", "while :; do sleep 0.1; done", &word]).spawn().unwrap();
        let pid = child.id();
        // Reaped as soon as it exits, as a daemon's parent (init) would.
        let reaper = std::thread::spawn(move || child.wait());
        let op = RemoteOp::StopProcess { program: "sh".into(), pidfile: word };
        let w = op.words();
        let out = CommandLine::new(&w[0]).args(&w[1..]).run().unwrap();
        assert_eq!(out.stdout.trim(), "done");
        reaper.join().unwrap().unwrap();
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        let out = CommandLine::new(&w[0]).args(&w[1..]).run().unwrap();
        assert_eq!(out.stdout.trim(), "none", "idempotent");
    }

    #[test]
    fn the_scripts_run_in_a_posix_shell() {
        // Locally, as the host's shell would: nothing to stop, nothing to remove.
        let d = tempfile::tempdir().unwrap();
        for op in [
            RemoteOp::StopProcess { program: "no-such-program".into(), pidfile: "/nonexistent/x.pid".into() },
            RemoteOp::Rmdir { path: d.path().join("missing").display().to_string(), mark: None },
            RemoteOp::Unlink { path: d.path().join("missing").display().to_string(), mark: None },
        ] {
            let w = op.words();
            let out = CommandLine::new(&w[0]).args(&w[1..]).run().unwrap();
            assert_eq!(out.stdout.trim(), "none", "{}", op.describe());
        }
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let w = RemoteOp::Rmdir { path: sub.display().to_string(), mark: None }.words();
        assert_eq!(CommandLine::new(&w[0]).args(&w[1..]).run().unwrap().stdout.trim(), "done");
        assert!(!sub.exists());
    }

    #[test]
    fn a_marked_undo_removes_only_what_its_mark_says_this_run_made() {
        let d = tempfile::tempdir().unwrap();
        let (sub, link, mark) = (d.path().join("sub"), d.path().join("link"), d.path().join("made-sub"));
        std::fs::create_dir(&sub).unwrap();
        std::os::unix::fs::symlink(&sub, &link).unwrap();
        let run = |op: &RemoteOp| {
            let w = op.words();
            CommandLine::new(&w[0]).args(&w[1..]).run().unwrap()
        };
        let p = |x: &std::path::Path| x.display().to_string();
        let rmdir = RemoteOp::Rmdir { path: p(&sub), mark: Some(p(&mark)) };
        let unlink = RemoteOp::Unlink { path: p(&link), mark: Some(p(&mark)) };
        // No mark: another owner's (the mkdir that recorded this undo failed, EEXIST): left.
        for op in [&unlink, &rmdir] {
            let out = run(op);
            assert_eq!(out.stdout.trim(), "none", "{}", op.describe());
            assert!(out.stderr.contains("not made by this run"), "{}", out.stderr);
        }
        assert!(sub.exists() && link.exists());
        // Marked: removed.
        std::fs::write(&mark, "").unwrap();
        assert_eq!(run(&unlink).stdout.trim(), "done");
        assert!(!mark.exists(), "the mark goes with its item");
        std::fs::write(&mark, "").unwrap();
        assert_eq!(run(&rmdir).stdout.trim(), "done");
        assert!(!sub.exists() && !link.exists() && !mark.exists());
        // A record written before marks existed reads as unmarked.
        let old: RemoteOp = serde_json::from_str(r#"{"op":"rmdir","path":"/x"}"#).unwrap();
        assert_eq!(old, RemoteOp::Rmdir { path: "/x".into(), mark: None });
    }
}
