//! Ctrl-C and SIGTERM: the first one stops the current step and starts teardown; later ones
//! only say that teardown is in progress (it always completes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Shared flags: `cancel` is set on the first signal; `tearing_down` once teardown started.
#[derive(Clone)]
pub struct Interrupts {
    pub cancel: Arc<AtomicBool>,
    pub tearing_down: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
}

impl Interrupts {
    pub fn install() -> Interrupts {
        let it = Interrupts {
            cancel: Arc::new(AtomicBool::new(false)),
            tearing_down: Arc::new(AtomicBool::new(false)),
            count: Arc::new(AtomicUsize::new(0)),
        };
        let me = it.clone();
        let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP]).expect("signal handlers");
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if sig == SIGHUP {
                    // The terminal is gone: writing to it would fail (and eprintln! would
                    // panic in the middle of teardown), so the rest goes to a file.
                    redirect_output_after_hangup();
                }
                let n = me.count.fetch_add(1, Ordering::SeqCst);
                me.cancel.store(true, Ordering::SeqCst);
                let name = match sig {
                    SIGINT => "interrupt",
                    SIGTERM => "SIGTERM",
                    _ => "SIGHUP",
                };
                if me.tearing_down.load(Ordering::SeqCst) || n > 0 {
                    eprintln!(
                        "\n{name}: teardown is in progress and will finish; it undoes everything this run made. Please wait."
                    );
                } else {
                    eprintln!("\n{name}: stopping the current step, then tearing down everything this run made.");
                }
            }
        });
        it
    }

    /// Reads standard input as a server host's run's line from its controller (whose ssh
    /// session it is): a line `stop` is an interrupt (the controller was interrupted; the
    /// session stays, and what this run prints still reaches it); the end of the input is one
    /// too (the connection was lost or the controller is gone), and output goes to a file from
    /// then on, as the session is gone.
    pub fn watch_stdin(&self) {
        let me = self.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(l) if l.trim() == "stop" => me.interrupt("the controller asked to stop"),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            redirect_output_after_hangup();
            me.interrupt("the controller's session ended (standard input closed)");
        });
    }

    /// An interrupt from elsewhere than a signal: the first stops the current step.
    fn interrupt(&self, why: &str) {
        self.count.fetch_add(1, Ordering::SeqCst);
        if !self.cancel.swap(true, Ordering::SeqCst) {
            eprintln!("\n{why}: stopping the current step, then tearing down everything this run made.");
        }
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
}

/// Points stdout and stderr at `<state dir>/hangup-<pid>.log` (or /dev/null if that cannot be
/// created).
fn redirect_output_after_hangup() {
    let log = crate::paths::state_dir().join(format!("hangup-{}.log", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .or_else(|_| std::fs::OpenOptions::new().write(true).open("/dev/null"));
    if let Ok(f) = file {
        let _ = nix::unistd::dup2_stdout(&f);
        let _ = nix::unistd::dup2_stderr(&f);
    }
}
