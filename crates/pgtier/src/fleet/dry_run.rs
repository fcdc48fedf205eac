//! `--dry-run` of a fleet: how each server host is reached and what runs there.

use super::Launch;
use super::host::DEFAULT_STATE_DIR;

/// `--dry-run` of a fleet: how each server host is reached and what runs there, then the plan
/// and matrix every host runs on its own devices follow
/// (`compare`'s dry run, which `cli` prints after this).
pub fn print(launch: &Launch) {
    let servers = launch.exp.server_hosts();
    println!(
        "# pgtier dry run: {} ({}) on a fleet of {} server host(s)",
        launch.exp.name,
        launch.exp.file.display(),
        servers.len()
    );
    println!("# nothing below has been executed; no host has been contacted.");
    println!("\n## Fleet\n");
    println!(
        "Every server host runs the whole matrix at the same time as the others, driven over its own ssh connection by a copy of this pgtier binary; its result set comes back to {}/hosts/<name>/ and report.md there compares the hosts (the first, {}, is the reference).\n",
        launch.dir.display(),
        servers.first().map(|h| h.name.as_str()).unwrap_or("-")
    );
    for h in &servers {
        let ssh = crate::remote::SshHost::new(h, launch.token);
        let state = h.state_dir.as_ref().map(|d| d.display().to_string()).unwrap_or(DEFAULT_STATE_DIR.into());
        let remote_results = format!("{state}/results/{}", launch.run_id);
        println!("### Host {} ({})\n", h.name, ssh.destination);
        println!(
            "1. open the connection (host key checked against the known_hosts file, no prompt):\n   {}",
            ssh.master_command()
        );
        println!("2. measure the clock offset: 5 x `date +%s.%N` over it, the fastest round trip's midpoint");
        println!(
            "3. make {} (mode 0700) and copy this binary, configs/ and the experiment file into it over ssh's stdin",
            ssh.work_dir
        );
        let mut words = vec!["compare".to_string(), "--config".into(), format!("{}/experiment.toml", ssh.work_dir)];
        words.extend(["--out".into(), remote_results.clone(), "--seed".into(), launch.seed.to_string()]);
        words.extend(["--as-host".into(), h.name.clone()]);
        if launch.emulate {
            words.push("--emulate".into());
        }
        let shipped = crate::remote::Shipped {
            bin: format!("{}/pgtier", ssh.work_dir),
            configs: format!("{}/configs", ssh.work_dir),
            version: String::new(),
        };
        println!(
            "4. run the matrix there, its own run record in {state}/journal (standard input open: its end stops the host's run, which tears down):\n   {}",
            ssh.command(&shipped.words(&state, Some("<revision>"), &words))
        );
        println!("5. bring {remote_results} back with tar over ssh, then remove it there");
        println!("6. teardown: `pgtier cleanup --wait 10min` on the host, rm -rf {}, ssh -O exit\n", ssh.work_dir);
    }
    println!("## What each host runs\n");
    println!(
        "(Client counts relative to the hardware threads are resolved on each host with its own; below with this machine's {}.)\n",
        crate::host::hardware_threads()
    );
}
