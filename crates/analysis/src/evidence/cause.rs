//! What moved between a baseline cell and a contender cell, as one sentence with figures, and
//! the evidence of every run and cell of a result set.

use super::judge::key_figure;
use super::*;

/// One sentence on what moved between the baseline cell and the contender cell, with figures.
pub fn cause(base: &Evidence, cont: &Evidence, delta: Option<&Delta>) -> String {
    cause_against(base, cont, delta, "the baseline")
}

/// [`cause`] against a cell named otherwise (`the reference`: a study's own contrast).
pub fn cause_against(base: &Evidence, cont: &Evidence, delta: Option<&Delta>, base_name: &str) -> String {
    let mut parts =
        if base.has_waits() && cont.has_waits() { wait_moves(base, cont) } else { counter_moves(base, cont) };
    parts.push(bottleneck_clause(base, cont, base_name));
    let mut s = parts.join("; ");
    s.push_str(&caveats(cont, delta));
    s
}

/// The wait category that moved most (and one that moved the other way by 10 points or more).
fn wait_moves(base: &Evidence, cont: &Evidence) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut moves: Vec<(Category, f64, f64)> =
        Category::ALL.iter().map(|c| (*c, base.share(*c), cont.share(*c))).collect();
    moves.sort_by(|a, b| (b.2 - b.1).abs().total_cmp(&(a.2 - a.1).abs()));
    let (c, a, b) = moves[0];
    if (b - a).abs() >= 3.0 {
        parts.push(format!(
            "{} {} from {a:.0}% to {b:.0}% of backend time",
            capitalise(c.noun()),
            if b < a { "fell" } else { "rose" }
        ));
        if let Some((c2, a2, b2)) = moves[1..]
            .iter()
            .copied()
            .find(|(_, a2, b2)| (b2 - a2).abs() >= 10.0 && (b2 - a2).signum() != (b - a).signum())
        {
            parts.push(format!("{} {} from {a2:.0}% to {b2:.0}%", c2.noun(), if b2 < a2 { "fell" } else { "rose" }));
        }
    } else {
        parts.push(format!("No wait category moved by 3 points or more ({} {a:.0}% vs {b:.0}%)", c.label()));
    }
    parts
}

/// Without wait-event samples: the WAL fsync, the data device, the CPU.
fn counter_moves(base: &Evidence, cont: &Evidence) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    match (base.wal_sync_us_per_sync(), cont.wal_sync_us_per_sync()) {
        (Some(a), Some(b)) if a > 0.0 && (b / a - 1.0).abs() >= 0.1 => parts.push(format!(
            "Time per WAL fsync {} from {} to {} (pg_stat_wal){}",
            if b < a { "fell" } else { "rose" },
            micros(a),
            micros(b),
            match (base.wal_sync_busy_pct(), cont.wal_sync_busy_pct()) {
                (Some(x), Some(y)) => format!("; WAL fsync busy {x:.0}% -> {y:.0}% of the measured time"),
                _ => String::new(),
            }
        )),
        _ => {}
    }
    match (base.roles.get("data"), cont.roles.get("data")) {
        (Some(a), Some(b)) if a.avg_wait_ms > 0.0 && (b.avg_wait_ms / a.avg_wait_ms - 1.0).abs() >= 0.2 => {
            parts.push(format!(
                "{} data device's average I/O wait {} from {:.2} to {:.2} ms",
                if parts.is_empty() { "The" } else { "the" },
                if b.avg_wait_ms < a.avg_wait_ms { "fell" } else { "rose" },
                a.avg_wait_ms,
                b.avg_wait_ms
            ))
        }
        _ => {}
    }
    if parts.is_empty() {
        parts.push("No counter moved by 10% or more (no wait-event samples in this result set)".into());
    }
    parts
}

/// Whether the bottleneck changed, with the figures that decided it.
fn bottleneck_clause(base: &Evidence, cont: &Evidence, base_name: &str) -> String {
    let (jb, jc) = (judge(base), judge(cont));
    if jb.bottleneck != jc.bottleneck {
        format!(
            "the run became {} ({}; {base_name} is {})",
            jc.bottleneck.label(),
            key_figure(cont, jc.bottleneck),
            jb.bottleneck.label()
        )
    } else if jc.bottleneck == Bottleneck::NotJudged {
        format!(
            "neither run's bottleneck is judged (no wait-event samples; client and server used {} vs {})",
            base.cpu_text().unwrap_or_else(|| "n/a".into()),
            cont.cpu_text().unwrap_or_else(|| "n/a".into())
        )
    } else {
        format!(
            "both are {} ({} vs {})",
            jc.bottleneck.label(),
            key_figure(base, jb.bottleneck),
            key_figure(cont, jc.bottleneck)
        )
    }
}

/// What caps or clouds the contender's figure: a saturated CPU, other load on the machine.
fn caveats(cont: &Evidence, delta: Option<&Delta>) -> String {
    let mut s = String::new();
    if let (Some(d), Some(cpu)) = (delta, cont.run_cpu_pct())
        && cpu >= CPU_SATURATED
        && d.pct > 0.0
    {
        s.push_str(", so the remaining gain is capped by CPU");
    }
    if let (Some(busy), Some(cpu)) = (cont.machine_busy_pct(), cont.run_cpu_pct())
        && busy >= CPU_SATURATED
        && cpu < busy - 30.0
    {
        s.push_str(&format!(
            "; the machine was {busy:.0}% busy while this run used {cpu:.0}%: other load competed for the CPU"
        ));
    }
    s
}

pub(super) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

pub(super) fn micros(us: f64) -> String {
    if us >= 1000.0 { format!("{:.2} ms", us / 1000.0) } else { format!("{us:.0} µs") }
}

/// The evidence of every cell of a result set (over the runs its figures come from), and of
/// every run.
#[derive(Clone, Debug, Default)]
pub struct Study {
    pub runs: BTreeMap<String, Evidence>,
    pub cells: BTreeMap<CellKey, Evidence>,
}

impl Study {
    pub fn of(set: &ResultSet, summary: &Summary) -> Study {
        let threads = set.manifest.host.cpu_threads.max(1) as f64;
        let runs: BTreeMap<String, Evidence> = set
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Ok)
            .map(|r| (r.run_id.clone(), Evidence::of_run(r, threads)))
            .collect();
        let mut cells = BTreeMap::new();
        for c in &summary.cells {
            let mut mine: Vec<&RunRecord> =
                set.runs.iter().filter(|r| r.cell == c.key && r.status == RunStatus::Ok).collect();
            mine.sort_by_key(|r| (r.repetition, r.sequence));
            // The rounds a slices contest's warm-up cut left out are out of its figures, and of
            // its evidence.
            let kept: Vec<&&RunRecord> = mine.iter().filter(|r| summary.analysis.counts(r)).collect();
            let used: Vec<Evidence> = if kept.is_empty() { mine.iter().collect() } else { kept }
                .iter()
                .map(|r| runs[&r.run_id].clone())
                .collect();
            cells.insert(c.key.clone(), Evidence::mean(&used));
        }
        Study { runs, cells }
    }

    /// The cause sentence of a contender cell against its baseline cell.
    pub fn cause(&self, key: &CellKey, baseline: &str, delta: Option<&Delta>) -> Option<String> {
        let base = self.cells.get(&key.with_placement(baseline))?;
        let cont = self.cells.get(key)?;
        Some(cause(base, cont, delta))
    }
}
