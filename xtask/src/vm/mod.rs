//! `cargo xtask vm`: a real kernel on virtual hardware, for pgtier's real-device paths.
//!
//! A small Debian 12 guest ([`image`]: mmdebstrap from the package archive, Debian's own
//! kernel, cached outside the repository) boots under `qemu-system-x86_64 -accel tcg`
//! ([`machine`]) with emulated NVDIMMs (with label areas, so that ndctl manages namespaces),
//! six NVMe drives, a disk with a RAID-like geometry and a SCSI disk; the kernel's NVMe/TCP
//! target (nvmet, nvmet-tcp) is there for a test to configure through configfs. The checkout
//! and the pgtier binary are shared read-only at the same paths as on the host (9p), so the
//! guest runs exactly this build; a job directory is shared read-write at /job. One command runs
//! per boot; its stdout, stderr and exit status come back, the console goes to a log, and a
//! guest whose kernel hangs (a soft lockup of minutes) is killed at once, any other at the timeout.
//!
//! Software emulation makes everything CPU-bound: the VM proves that the real paths work with
//! the real kernel and tools; it says nothing about how fast a device is.

pub mod image;
pub mod machine;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum VmCommand {
    /// Build the guest image, or reuse the cached one, and print its directory.
    Build {
        /// Build again even if the cache has an image for this recipe.
        #[arg(long)]
        rebuild: bool,
    },
    /// Boot the guest, run COMMAND in it (in the checkout, as root), copy its output here and
    /// exit with its status (123: the guest's kernel hung and was killed; 124: the guest was
    /// killed at the timeout; 125: it did not run).
    Run {
        /// Kill the guest after this many seconds.
        #[arg(long, default_value_t = 1800)]
        timeout: u64,
        /// Host directory shared read-write at /job (default: a new one, removed afterwards).
        #[arg(long)]
        job_dir: Option<PathBuf>,
        /// Where the guest's console goes (default: JOB_DIR/.vm/console.log).
        #[arg(long)]
        console: Option<PathBuf>,
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// Where the cached image is, its recipe key and its package versions.
    Info,
}

pub fn command(cmd: VmCommand) -> ExitCode {
    match cmd {
        VmCommand::Build { rebuild } => match image::ensure(rebuild, &mut std::io::stderr()) {
            Ok(img) => {
                println!("{}", img.dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
        VmCommand::Info => {
            println!("cache: {}", image::cache_root().display());
            println!("recipe key: {}", image::recipe_key());
            match image::cached() {
                Some(img) => {
                    println!("image: {} (key {})", img.dir.display(), img.key);
                    print!("{}", std::fs::read_to_string(img.manifest()).unwrap_or_default());
                }
                None => println!("image: not built yet (cargo xtask vm build)"),
            }
            let missing = image::missing_host_tools();
            if !missing.is_empty() {
                println!("missing host tools: {missing:?}");
            }
            ExitCode::SUCCESS
        }
        VmCommand::Run { timeout, job_dir, console, command } => {
            run(command, Duration::from_secs(timeout), job_dir, console)
        }
    }
}

fn run(argv: Vec<String>, timeout: Duration, job_dir: Option<PathBuf>, console: Option<PathBuf>) -> ExitCode {
    let img = match image::ensure(false, &mut std::io::stderr()) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(125);
        }
    };
    let (job_dir, temporary) = match job_dir {
        Some(d) => (d, false),
        None => {
            let d = PathBuf::from(format!("/var/tmp/pgtier-vm-job-{}", std::process::id()));
            (d, true)
        }
    };
    if let Err(e) = std::fs::create_dir_all(&job_dir) {
        eprintln!("error: create {}: {e}", job_dir.display());
        return ExitCode::from(125);
    }
    let job_dir = std::fs::canonicalize(&job_dir).unwrap_or(job_dir);
    let console = console.unwrap_or_else(|| job_dir.join(".vm").join("console.log"));
    let spec = run_spec(argv, timeout, &job_dir, &console);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let result = machine::run(&img, &spec, &stop);
    let code = exit_code(result, timeout, &console);
    if temporary {
        let _ = std::fs::remove_dir_all(&job_dir);
    }
    ExitCode::from(code)
}

/// What the guest runs: `argv` in the repository (shared read-only, with the xtask binary's
/// directory when it lies outside), with a plain PATH and the C locale.
fn run_spec(argv: Vec<String>, timeout: Duration, job_dir: &Path, console: &Path) -> machine::RunSpec {
    let repo = pgtier::paths::repo_root();
    let exe = std::env::current_exe().ok().and_then(|e| std::fs::canonicalize(e).ok());
    let mut ro_shares = vec![repo.clone()];
    if let Some(dir) = exe.as_ref().and_then(|e| e.parent())
        && !dir.starts_with(&repo)
    {
        ro_shares.push(dir.to_path_buf());
    }
    let mut env =
        vec![("PATH".to_string(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string())];
    env.push(("LC_ALL".into(), "C".into()));
    if let Some(e) = &exe {
        env.push(("PGTIER_XTASK".into(), e.display().to_string()));
    }
    machine::RunSpec {
        job_dir: job_dir.to_path_buf(),
        argv,
        cwd: repo,
        ro_shares,
        env,
        timeout,
        console_log: console.to_path_buf(),
        stream: true,
    }
}

/// The exit status `vm run` gives for the guest's outcome: the command's own, 123 when the
/// guest's kernel hung (a soft lockup of minutes), 124 after the timeout, 125 when the guest or
/// the machine failed; each said on stderr.
fn exit_code(result: anyhow::Result<machine::Outcome>, timeout: Duration, console: &Path) -> u8 {
    match result {
        Ok(machine::Outcome { hung: Some(report), wall_seconds, .. }) => {
            eprintln!(
                "vm: the guest's kernel hung and the guest was killed after {wall_seconds:.0} s: {report}; console ({}):\n{}",
                console.display(),
                machine::console_tail(console, 25)
            );
            123
        }
        Ok(o) if o.timed_out => {
            eprintln!(
                "vm: the guest did not finish within {} s and was killed; console ({}):\n{}",
                timeout.as_secs(),
                console.display(),
                machine::console_tail(console, 15)
            );
            124
        }
        Ok(o) => match o.status {
            Some(s) => {
                eprintln!(
                    "vm: guest command exited with status {s} (boot {}, wall {:.1} s); console log: {}",
                    o.boot_seconds.map(|b| format!("{b:.1} s")).unwrap_or_else(|| "?".into()),
                    o.wall_seconds,
                    console.display()
                );
                s.clamp(0, 255) as u8
            }
            None => {
                eprintln!(
                    "vm: the guest stopped before the command finished; console ({}):\n{}",
                    console.display(),
                    machine::console_tail(console, 25)
                );
                125
            }
        },
        Err(e) => {
            eprintln!("error: {e:#}");
            125
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: Option<i32>, timed_out: bool, hung: Option<&str>) -> anyhow::Result<machine::Outcome> {
        Ok(machine::Outcome {
            status,
            timed_out,
            hung: hung.map(str::to_string),
            boot_seconds: Some(20.0),
            wall_seconds: 300.0,
        })
    }

    #[test]
    fn each_way_a_guest_ends_has_its_own_exit_status() {
        let console = Path::new("/nonexistent/console.log");
        let t = Duration::from_secs(900);
        assert_eq!(exit_code(outcome(Some(0), false, None), t, console), 0);
        assert_eq!(exit_code(outcome(Some(3), false, None), t, console), 3);
        let report = "[ 2976.9] watchdog: BUG: soft lockup - CPU#1 stuck for 2686s! [xtask:334]";
        assert_eq!(exit_code(outcome(None, false, Some(report)), t, console), 123);
        assert_eq!(exit_code(outcome(None, true, None), t, console), 124);
        assert_eq!(exit_code(outcome(None, false, None), t, console), 125);
        assert_eq!(exit_code(Err(anyhow::anyhow!("no qemu")), t, console), 125);
    }
}
