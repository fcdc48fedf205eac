//! `[[host]]`: the client host of the experiment, and the errors that name file, line and key.

mod common;

use std::path::Path;

use common::*;
use experiment::{ConfigErrors, HostRole, parse};

const HOST: &str = r#"
[[host]]
name = "loadgen"
address = "169.254.200.2"
identity_file = "keys/id_ed25519"
known_hosts = "/etc/pgtier/known_hosts"
roles = ["client"]
"#;

fn with_host(host: &str) -> String {
    format!("{BASE}{host}")
}

fn errors(text: &str) -> ConfigErrors {
    parse(Path::new("/exp/dir/exp.toml"), text, &opts(true)).expect_err("should be rejected")
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
}

#[test]
fn a_file_without_hosts_runs_everything_here() {
    let e = parse(Path::new("exp.toml"), BASE, &opts(true)).unwrap();
    assert!(e.hosts.is_empty());
    assert!(e.client_host().is_none());
    let json = serde_json::to_string(&e).unwrap();
    assert!(!json.contains("\"hosts\""), "a local run's resolved configuration is as before: {json}");
}

#[test]
fn a_client_host_resolves_with_defaults() {
    let e = parse(Path::new("/exp/dir/exp.toml"), &with_host(HOST), &opts(true)).unwrap();
    let h = e.client_host().expect("the client host");
    assert_eq!(h.name, "loadgen");
    assert_eq!(h.address.to_string(), "169.254.200.2");
    assert_eq!(h.user, "root", "default user");
    assert_eq!(h.port, 22, "default port");
    assert_eq!(h.identity_file.as_deref(), Some(Path::new("/exp/dir/keys/id_ed25519")), "relative to the file");
    assert_eq!(h.known_hosts.as_deref(), Some(Path::new("/etc/pgtier/known_hosts")));
    assert_eq!(h.roles, vec![HostRole::Client]);
    let plain = HOST
        .replace("identity_file = \"keys/id_ed25519\"\n", "")
        .replace("known_hosts = \"/etc/pgtier/known_hosts\"\n", "");
    let e = parse(Path::new("exp.toml"), &with_host(&plain), &opts(true)).unwrap();
    let h = e.client_host().unwrap();
    assert_eq!((h.identity_file.as_deref(), h.known_hosts.as_deref()), (None, None), "OpenSSH's defaults");
}

#[test]
fn unknown_and_repeated_roles_are_refused_with_file_line_and_key() {
    let text = with_host(&HOST.replace("roles = [\"client\"]", "roles = [\"client\", \"client\", \"printer\"]"));
    let errs = errors(&text);
    let roles: Vec<_> = errs.0.iter().filter(|e| e.key.as_deref() == Some("host[loadgen].roles")).collect();
    assert_eq!(roles.len(), 2, "{errs}");
    assert!(roles[0].message.contains("\"client\" is listed twice"), "{errs}");
    assert!(roles[1].message.contains("unknown role \"printer\""), "{errs}");
    for e in &roles {
        assert_eq!(e.line, Some(line_of(&text, "roles = [")));
        assert_eq!(e.file, Path::new("/exp/dir/exp.toml"));
    }
    assert!(errs.to_string().contains(&format!("/exp/dir/exp.toml:{}:", line_of(&text, "roles = ["))), "{errs}");
}

#[test]
fn every_problem_of_a_host_is_reported_at_once() {
    let text = with_host(
        &HOST
            .replace("169.254.200.2", "loadgen.example")
            .replace("name = \"loadgen\"", "name = \"load gen\"\nuser = \"-oProxyCommand=x\"\nport = 70000")
            .replace("roles = [\"client\"]", "roles = []")
            .replace("/etc/pgtier/known_hosts", "/etc/pgtier/\\\"known_hosts"),
    );
    let errs = errors(&text);
    let keys: Vec<&str> = errs.0.iter().filter_map(|e| e.key.as_deref()).collect();
    for k in [
        "host[load gen].name",
        "host[load gen].address",
        "host[load gen].user",
        "host[load gen].port",
        "host[load gen].roles",
        "host[load gen].known_hosts",
    ] {
        assert!(keys.contains(&k), "{k} missing: {errs}");
    }
    let addr = errs.0.iter().find(|e| e.key.as_deref() == Some("host[load gen].address")).unwrap();
    assert_eq!(addr.line, Some(line_of(&text, "loadgen.example")));
    assert!(addr.message.contains("not an IP address"), "{addr}");
}

#[test]
fn unknown_host_keys_are_errors() {
    let text = with_host(&HOST.replace("roles =", "password = \"x\"\nroles ="));
    let errs = errors(&text);
    assert!(errs.0[0].key.as_deref().is_some_and(|k| k.ends_with("password")), "{errs}");
    assert!(errs.0[0].message.contains("unknown key `password` in [[host]]; its keys are name, address"), "{errs}");
    assert_eq!(errs.0[0].line, Some(line_of(&text, "password")));
}

#[test]
fn one_client_host_and_tpcc_on_it() {
    let second = HOST.replace("loadgen", "loadgen2").replace(".2\"", ".3\"");
    let text = with_host(&format!("{HOST}{second}"))
        .replace("kind = \"pgbench\"\nbuiltin = \"tpcb-like\"\nscale = 100", "kind = \"tpcc\"\nwarehouses = 2");
    let errs = errors(&text);
    let second = errs.0.iter().find(|e| e.key.as_deref() == Some("host[loadgen2].roles")).expect("second client");
    assert!(second.message.contains("one client host"), "{second}");
    // The TPC-C driver runs on the client host (pgtier's binary shipped there).
    assert!(!errs.0.iter().any(|e| e.key.as_deref() == Some("workload[rw].kind")), "{errs}");
}

const SERVERS: &str = r#"
[[host]]
name = "db1"
address = "192.0.2.11"
known_hosts = "keys/known_hosts"
state_dir = "/srv/pgtier"
roles = ["server"]

[[host]]
name = "db2"
address = "192.0.2.12"
roles = ["server"]
"#;

#[test]
fn server_hosts_make_a_fleet() {
    let e = parse(Path::new("/exp/dir/exp.toml"), &with_host(SERVERS), &opts(true)).unwrap();
    let servers = e.server_hosts();
    assert_eq!(servers.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["db1", "db2"]);
    assert_eq!(servers[0].roles, vec![HostRole::Server]);
    assert_eq!(servers[0].state_dir.as_deref(), Some(Path::new("/srv/pgtier")));
    assert_eq!(servers[1].state_dir, None, "the host's default, /var/lib/pgtier");
    // Read on the controller: relative to the experiment file, as for a client host.
    assert_eq!(servers[0].known_hosts.as_deref(), Some(Path::new("/exp/dir/keys/known_hosts")));
    assert!(e.client_host().is_none());
    let mut on_host = e.clone();
    on_host.as_server_host();
    assert!(on_host.hosts.is_empty(), "a server host runs the matrix as this machine");
}

#[test]
fn a_fleet_cannot_share_a_client_host_and_its_files_are_read_on_the_server() {
    let text = with_host(&format!("{SERVERS}{HOST}"));
    let errs = errors(&text);
    let shared = errs.0.iter().find(|e| e.key.as_deref() == Some("host[loadgen].roles")).expect("refused");
    assert!(shared.message.contains("a client host with 2 server hosts"), "{errs}");
    let rel = errs.0.iter().find(|e| e.key.as_deref() == Some("host[loadgen].identity_file")).expect("refused");
    assert!(rel.message.contains("read on the server host"), "{errs}");
    assert_eq!(rel.line, Some(line_of(&text, "identity_file = \"keys/id_ed25519\"")));
    // One server host and an absolute client identity: the server drives the client.
    let one = with_host(&format!(
        "{}{}",
        SERVERS.split("\n[[host]]\nname = \"db2\"").next().unwrap(),
        HOST.replace("keys/id_ed25519", "/etc/pgtier/id_ed25519")
    ));
    let e = parse(Path::new("/exp/dir/exp.toml"), &one, &opts(true)).unwrap();
    assert_eq!(e.server_hosts().len(), 1);
    assert_eq!(e.client_host().unwrap().name, "loadgen");
}

#[test]
fn a_host_is_client_or_server_and_only_a_server_has_a_state_dir() {
    let text = with_host(
        &HOST.replace("roles = [\"client\"]", "roles = [\"client\", \"server\"]\nstate_dir = \"relative/dir\""),
    );
    let errs = errors(&text);
    let msgs: Vec<String> = errs.0.iter().map(|e| e.message.clone()).collect();
    assert!(msgs.iter().any(|m| m.contains("a server host has no other role")), "{errs}");
    assert!(msgs.iter().any(|m| m.contains("give an absolute path on the host")), "{errs}");
    let text = with_host(&HOST.replace("roles = [\"client\"]", "roles = [\"client\"]\nstate_dir = \"/srv/x\""));
    let errs = errors(&text);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("host[loadgen].state_dir")).expect("refused");
    assert!(e.message.contains("state_dir is for a server host"), "{errs}");
    assert_eq!(e.line, Some(line_of(&text, "state_dir")));
}

#[test]
fn cpu_pinning_is_refused_when_the_client_runs_on_another_host() {
    let text =
        with_host(HOST).replacen("[[host]]", "[measurement]\npin_client = \"0\"\npin_servers = \"1\"\n\n[[host]]", 1);
    let errs = errors(&text);
    let err =
        errs.0.iter().find(|e| e.key.as_deref() == Some("measurement.pin_client")).unwrap_or_else(|| panic!("{errs}"));
    assert_eq!(err.line, Some(line_of(&text, "pin_client")));
    assert!(err.message.contains("\"loadgen\"") && err.message.contains("run the client here"), "{err}");
}
