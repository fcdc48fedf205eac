//! Progress for long work: a bar over the matrix (done/total, ETA) with a live line for the
//! current run on a terminal; a line every few seconds otherwise, as pgbench `-P` does.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use runner::pgbench::Progress;

pub struct MatrixProgress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    current: String,
    last_print: Instant,
    started: Instant,
}

impl MatrixProgress {
    pub fn new(total: usize) -> MatrixProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr_with_hz(4));
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:28}] {pos}/{len} runs, elapsed {elapsed}, ETA {eta}\n  {msg}",
                )
                .expect("template")
                .progress_chars("=> "),
            );
            b.set_prefix("matrix");
            b
        });
        MatrixProgress {
            bar,
            total,
            done: 0,
            current: String::new(),
            last_print: Instant::now(),
            started: Instant::now(),
        }
    }

    /// Prints a line above the bar (or plainly).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn start_run(&mut self, run_id: &str) {
        self.current = run_id.to_string();
        let line = format!("[{}/{}] {run_id}", self.done + 1, self.total);
        match &self.bar {
            Some(b) => b.set_message(format!("{run_id}: starting server, checkpoint, dropping caches")),
            None => eprintln!("{line}: starting"),
        }
        self.last_print = Instant::now();
    }

    pub fn finish_run(&mut self, summary: &str) {
        self.done += 1;
        let line = format!("[{}/{}] {}: {summary}", self.done, self.total, self.current);
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.inc(1);
            }
            None => {
                let elapsed = self.started.elapsed().as_secs_f64();
                let eta =
                    if self.done > 0 { elapsed / self.done as f64 * (self.total - self.done) as f64 } else { 0.0 };
                eprintln!("{line}  (elapsed {:.0} s, ETA {:.0} s)", elapsed, eta);
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl runner::execute::Observer for MatrixProgress {
    fn progress(&mut self, p: &Progress, ramp_up: bool) {
        let phase = if ramp_up { "ramp-up" } else { "measuring" };
        let text = format!(
            "{}: {phase} {:>4.0} s  {:>9.1} tps  lat {:>7.3} ms{}",
            self.current,
            p.t,
            p.tps,
            p.latency_ms,
            match p.failed {
                Some(f) if f > 0 => format!("  {f} failed"),
                _ => String::new(),
            }
        );
        match &self.bar {
            Some(b) => b.set_message(text),
            None => {
                if self.last_print.elapsed() >= Duration::from_secs(5) {
                    eprintln!("  {text}");
                    self.last_print = Instant::now();
                }
            }
        }
    }

    fn live(&mut self, text: &str) {
        let text = format!("{}: {text}", self.current);
        match &self.bar {
            Some(b) => b.set_message(text),
            None => {
                if self.last_print.elapsed() >= Duration::from_secs(5) {
                    eprintln!("  {text}");
                    self.last_print = Instant::now();
                }
            }
        }
    }

    fn note(&mut self, text: &str) {
        self.println(&format!("  {text}"));
    }
}
