//! Load and virtual-user sweep against a private PostgreSQL cluster, for the figures in the
//! crate README and docs/benchmarks.md. Needs root (the server runs as the OS user postgres).
//!
//! ```text
//! cargo run --release -p tpcc --example bench -- --warehouses 4 --workers 2 \
//!     --vus 1,2,4,8 --ramp 5 --duration 30 --mode spec --side server [--no-fsync]
//! ```
//!
//! `--mode` takes a comma-separated list (`spec,hammerdb,hammerdb-faithful`): each mode gets a
//! database of its own, loaded once, and the sweep runs every virtual-user count in every mode
//! one after the other, `--rounds` times, then prints the median client/server CPU share per
//! mode and count.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tpcc::{Mode, Side, TpccConfig, check_consistency, create_schema_and_load, run};

struct Args {
    warehouses: u32,
    workers: u32,
    vus: Vec<u32>,
    ramp: u64,
    duration: u64,
    modes: Vec<Mode>,
    rounds: u32,
    side: Side,
    fsync: bool,
    all_warehouses: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        warehouses: 4,
        workers: 2,
        vus: vec![1, 2, 4, 8],
        ramp: 5,
        duration: 30,
        modes: vec![Mode::Spec],
        rounds: 1,
        side: Side::ServerProcedures,
        fsync: true,
        all_warehouses: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--warehouses" => a.warehouses = num(value()?)? as u32,
            "--workers" => a.workers = num(value()?)? as u32,
            "--vus" => {
                a.vus = value()?
                    .split(',')
                    .map(|v| v.parse::<u32>().map_err(|e| format!("--vus: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--ramp" => a.ramp = num(value()?)?,
            "--duration" => a.duration = num(value()?)?,
            "--mode" => {
                a.modes = value()?
                    .split(',')
                    .map(|m| Mode::parse(m).ok_or(format!("--mode {m}: spec, hammerdb or hammerdb-faithful")))
                    .collect::<Result<_, _>>()?
            }
            "--rounds" => a.rounds = num(value()?)? as u32,
            "--side" => {
                a.side = match value()?.as_str() {
                    "server" => Side::ServerProcedures,
                    "client" => Side::ClientSql,
                    s => return Err(format!("--side {s}: server or client")),
                }
            }
            "--no-fsync" => a.fsync = false,
            "--all-warehouses" => a.all_warehouses = true,
            f => return Err(format!("unknown flag {f}")),
        }
    }
    Ok(a)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    if !common::root_or_skip() {
        return;
    }
    let mut settings: Vec<(&str, &str)> = vec![
        ("shared_buffers", "1GB"),
        ("max_connections", "200"),
        ("max_wal_size", "8GB"),
        ("checkpoint_timeout", "30min"),
    ];
    if !args.fsync {
        settings.extend([("fsync", "off"), ("synchronous_commit", "off"), ("full_page_writes", "off")]);
    }
    let cluster = common::Cluster::start("bench", &settings).await;
    let cancel = AtomicBool::new(false);
    println!("settings: {settings:?}");
    let admin = cluster.connect("postgres").await;
    let mut targets = Vec::new();
    for mode in &args.modes {
        let cfg = TpccConfig {
            warehouses: args.warehouses,
            mode: *mode,
            side: args.side,
            keying_and_thinking: false,
            all_warehouses: args.all_warehouses,
        };
        let db = mode.as_str().replace('-', "_");
        admin.batch_execute(&format!("CREATE DATABASE {db}")).await.unwrap();
        let conn = tpcc::ConnectSpec { database: db, ..cluster.conn.clone() };
        let load = match create_schema_and_load(&conn, &cfg, args.workers, &cancel, &mut |p| {
            if matches!(p.phase, tpcc::LoadPhase::Copy) {
                eprint!("\r{:5.1}s {} / {} warehouses", p.elapsed_seconds, p.warehouses_done, p.warehouses_total);
            }
        })
        .await
        {
            Ok(l) => l,
            Err(e) => {
                eprintln!("load failed: {e}");
                cluster.shutdown().await;
                std::process::exit(1);
            }
        };
        eprintln!();
        println!(
            "load ({}): {} warehouses, {} workers: {:.1} s (schema {:.2}, copy {:.1}, index {:.1}, analyze {:.1}) = {:.1} warehouses/min, {} rows, {:.0} MB",
            mode.as_str(),
            load.warehouses,
            load.workers,
            load.seconds,
            load.schema_seconds,
            load.copy_seconds,
            load.index_seconds,
            load.analyze_seconds,
            load.warehouses_per_minute,
            load.rows,
            load.database_bytes as f64 / 1e6
        );
        targets.push((cfg, conn));
    }
    println!(
        "{:>5} {:>4} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>11} {:>7} {:>8} {:>17}",
        "round",
        "vus",
        "nopm",
        "tpm",
        "no_p50",
        "no_p99",
        "client_s",
        "server_s",
        "cli_ms/1ktx",
        "cli/srv",
        "errors",
        "mode"
    );
    let mut shares: std::collections::BTreeMap<(u32, &str), Vec<f64>> = Default::default();
    for round in 0..args.rounds {
        for vus in &args.vus {
            for (cfg, conn) in &targets {
                let r = match run(
                    conn,
                    cfg,
                    *vus,
                    (Duration::from_secs(args.ramp), Duration::from_secs(args.duration)),
                    &cancel,
                    &mut |_| {},
                )
                .await
                {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("run with {vus} VUs failed: {e}");
                        continue;
                    }
                };
                let server = r.server_cpu_seconds.unwrap_or(f64::NAN);
                let errors: u64 = r.errors.values().sum();
                println!(
                    "{:>5} {:>4} {:>9.0} {:>9.0} {:>8.2} {:>8.2} {:>9.2} {:>9.2} {:>11.1} {:>6.2}% {:>8} {:>17}",
                    round,
                    vus,
                    r.nopm,
                    r.tpm,
                    r.per_type[0].p50_ms,
                    r.per_type[0].p99_ms,
                    r.client_cpu_seconds,
                    server,
                    r.client_cpu_ms_per_1000_transactions(),
                    100.0 * r.client_cpu_seconds / server,
                    errors,
                    r.mode.as_str()
                );
                shares.entry((*vus, r.mode.as_str())).or_default().push(100.0 * r.client_cpu_seconds / server);
                if std::env::var("BENCH_VERBOSE").is_ok() {
                    for t in &r.per_type {
                        println!("     {t:?}");
                    }
                }
                if !r.error_samples.is_empty() {
                    println!("     error samples: {:?}", r.error_samples);
                }
            }
        }
    }
    if args.rounds > 1 || args.modes.len() > 1 {
        println!("\nclient / server CPU, median [min, max] over rounds:");
        for ((vus, mode), mut v) in shares {
            v.sort_by(|a, b| a.total_cmp(b));
            println!("{vus:>4} {mode:>17} {:>6.2}% [{:.2}, {:.2}]", v[v.len() / 2], v[0], v[v.len() - 1]);
        }
    }
    for (cfg, conn) in &targets {
        if cfg.mode == Mode::HammerDbFaithful {
            // HammerDB's loader and transactions break several conditions by design.
            continue;
        }
        match check_consistency(conn).await {
            Ok(v) if v.is_empty() => println!("consistency ({}): all conditions hold", cfg.mode.as_str()),
            Ok(v) => println!("consistency ({}): {v:#?}", cfg.mode.as_str()),
            Err(e) => println!("consistency check failed: {e}"),
        }
    }
    drop(admin);
    cluster.shutdown().await;
}
