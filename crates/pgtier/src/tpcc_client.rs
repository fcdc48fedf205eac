//! The TPC-C driver on a client host (`[[host]] roles = ["client"]` with a `kind = "tpcc"`
//! workload): pgtier's own binary is shipped to the host once per run (into the run's
//! directory there, removed at teardown), and the runner runs it there as the hidden
//! subcommand `tpcc-client` (`runner::tpcc_remote`): one driver session for the run, started
//! through the client transport at the first drive, serving every drive over its stdin and
//! stdout.

use anyhow::Result;
use experiment::Host;
use results::manifest::ClientRecord;
use runner::env::RemoteClient;

use crate::remote::SshHost;

/// Copies pgtier's binary and `configs/` to the client host, checks that it starts there, and
/// hands the runner the words that run it (its environment included) and the manifest what
/// ran there.
pub fn ship_driver(host: &Host, token: &str, client: &mut RemoteClient, record: &mut ClientRecord) -> Result<()> {
    let ssh = SshHost::new(host, token);
    eprintln!("  copying pgtier's binary to client host {} for the TPC-C driver", ssh.name);
    let t0 = std::time::Instant::now();
    let shipped = ssh.ship_pgtier()?;
    let words = shipped.words(&format!("{}/state", ssh.work_dir), None, &[]);
    client.tpcc_driver = Some(std::sync::Arc::new(runner::tpcc_remote::TpccDriver::new(words)));
    record.tpcc_driver = Some(format!("{} ({}, shipped for the run)", shipped.version, shipped.bin));
    eprintln!("  {} answers on {} ({:.1} s to ship)", shipped.version, ssh.name, t0.elapsed().as_secs_f64());
    Ok(())
}

/// The hidden `tpcc-client` subcommand: the drives asked for on stdin, on this machine (the
/// client host), until stdin ends.
pub fn serve() -> std::process::ExitCode {
    std::process::ExitCode::from(runner::tpcc_remote::serve().clamp(0, 255) as u8)
}
