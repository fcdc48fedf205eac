//! `[[host]]`: other machines of the experiment, reached over OpenSSH: the benchmark client
//! (`roles = ["client"]`), the servers (`roles = ["server"]`: the matrix runs there; several are
//! a fleet) and storage targets (`roles = ["target"]`, resolved against the devices in
//! `validate::target`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use runner::matrix::WorkloadSpec;
use toml::Spanned;

use super::Validator;
use crate::model::{Host, HostRole};
use crate::raw::{RawFile, RawHost};
use crate::spans::span;

impl Validator<'_> {
    pub(super) fn hosts(&mut self, raw: &RawFile, _workloads: &[WorkloadSpec]) -> Vec<Host> {
        let mut hosts = Vec::new();
        let mut seen = BTreeSet::new();
        for h in &raw.host {
            self.unique(&mut seen, "host", &h.get_ref().name);
            if let Some(host) = self.host(h) {
                hosts.push(host);
            }
        }
        let clients: Vec<&Spanned<RawHost>> =
            raw.host.iter().filter(|h| h.get_ref().roles.get_ref().iter().any(|r| r.get_ref() == "client")).collect();
        for extra in clients.iter().skip(1) {
            let n = extra.get_ref().name.get_ref();
            self.err(
                span(&extra.get_ref().roles),
                format!("host[{n}].roles"),
                format!(
                    "a second client host ({:?} is the first): one client host is built so far; give the role to one host",
                    clients[0].get_ref().name.get_ref()
                ),
            );
        }
        self.fleet_rules(raw, &hosts);
        hosts
    }

    fn host(&mut self, h: &Spanned<RawHost>) -> Option<Host> {
        let r = h.get_ref();
        let n = r.name.get_ref().clone();
        let key = |k: &str| format!("host[{n}].{k}");
        self.name(&r.name, &key("name"));
        let address = match r.address.get_ref().parse::<std::net::IpAddr>() {
            Ok(a) => Some(a),
            Err(_) => {
                self.err(
                    span(&r.address),
                    key("address"),
                    format!(
                        "{:?} is not an IP address: give the host's address (such as \"192.0.2.7\"); host names are not resolved yet, because the server admits the client by its address",
                        r.address.get_ref()
                    ),
                );
                None
            }
        };
        let user = self.host_user(r.user.as_ref(), &key("user"));
        let port = self.host_port(r.port.as_ref(), &key("port"));
        let identity_file = r.identity_file.as_ref().map(|f| self.host_path(f, &key("identity_file")));
        let known_hosts = r.known_hosts.as_ref().map(|f| self.host_path(f, &key("known_hosts")));
        let roles = self.host_roles(&r.roles, &key("roles"));
        let state_dir = r.state_dir.as_ref().map(|d| self.host_state_dir(d, &key("state_dir")));
        if state_dir.is_some() && !roles.contains(&HostRole::Server) {
            let d = r.state_dir.as_ref().expect("checked");
            self.err(span(d), key("state_dir"), "state_dir is for a server host (roles = [\"server\"]); leave it out");
        }
        Some(Host {
            name: n.clone(),
            address: address?,
            user,
            port,
            identity_file,
            known_hosts,
            roles,
            state_dir,
            origin: self.origin(span(&r.name), key("name")),
        })
    }

    fn host_roles(&mut self, raw: &Spanned<Vec<Spanned<String>>>, key: &str) -> Vec<HostRole> {
        let mut roles = Vec::new();
        if raw.get_ref().is_empty() {
            self.err(span(raw), key, "a host needs a role: roles = [\"client\"] or [\"server\"]");
        }
        for role in raw.get_ref() {
            let r = match role.get_ref().as_str() {
                "client" => HostRole::Client,
                "server" => HostRole::Server,
                "target" => HostRole::Target,
                other => {
                    self.err(
                        span(role),
                        key,
                        format!("unknown role {other:?}: a host's roles are \"client\", \"server\" and \"target\""),
                    );
                    continue;
                }
            };
            if roles.contains(&r) {
                self.err(span(role), key, format!("{:?} is listed twice; list it once", role.get_ref()));
            } else {
                roles.push(r);
            }
        }
        if roles.len() > 1 && roles.contains(&HostRole::Server) {
            self.err(
                span(raw),
                key,
                "a server host has no other role: the client runs on the server when no host has the client role, and a server's own devices need no target",
            );
        }
        roles
    }

    /// A server host's state directory: an absolute path (it is on the host).
    fn host_state_dir(&mut self, d: &Spanned<String>, key: &str) -> PathBuf {
        let s = d.get_ref();
        if !s.starts_with('/') || s.chars().any(|c| c.is_control()) || s.split('/').any(|c| c == "..") {
            self.err(
                span(d),
                key,
                format!("{s:?}: give an absolute path on the host without '..', such as \"/var/lib/pgtier\""),
            );
        }
        PathBuf::from(s)
    }

    /// With server hosts, the rest of the experiment runs there: a client host is driven from
    /// its one server (so a fleet cannot share one), and its files are read on that server,
    /// so they must be absolute paths.
    fn fleet_rules(&mut self, raw: &RawFile, hosts: &[Host]) {
        let servers = hosts.iter().filter(|h| h.roles.contains(&HostRole::Server)).count();
        if servers == 0 {
            return;
        }
        for h in &raw.host {
            let r = h.get_ref();
            let Some(role) =
                r.roles.get_ref().iter().map(|x| x.get_ref().as_str()).find(|x| *x == "client" || *x == "target")
            else {
                continue;
            };
            let n = r.name.get_ref();
            if servers > 1 {
                self.err(
                    span(&r.roles),
                    format!("host[{n}].roles"),
                    format!(
                        "a {role} host with {servers} server hosts: it is driven from its server, and a fleet's servers would share it (their runs would disturb each other); leave the host out (each server runs its own client and devices) or keep one server host"
                    ),
                );
            }
            for (k, f) in [("identity_file", &r.identity_file), ("known_hosts", &r.known_hosts)] {
                if let Some(f) = f.as_ref().filter(|f| !f.get_ref().starts_with('/')) {
                    self.err(
                        span(f),
                        format!("host[{n}].{k}"),
                        format!(
                            "{:?}: with a server host this file is read on the server host, which drives this host: give its absolute path there",
                            f.get_ref()
                        ),
                    );
                }
            }
        }
    }

    /// The SSH user: root by default; a name of letters, digits, '-', '_' and '.'.
    fn host_user(&mut self, user: Option<&Spanned<String>>, key: &str) -> String {
        match user {
            None => "root".to_string(),
            Some(u) => {
                let s = u.get_ref();
                if s.is_empty()
                    || s.starts_with('-')
                    || !s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                {
                    self.err(
                        span(u),
                        key.to_string(),
                        format!(
                            "{s:?} is not a user name: use letters, digits, '-', '_' and '.', not starting with '-'"
                        ),
                    );
                }
                s.clone()
            }
        }
    }

    /// The SSH port: 22 by default, else 1 to 65535.
    fn host_port(&mut self, port: Option<&Spanned<i64>>, key: &str) -> u16 {
        match port {
            None => 22,
            Some(p) => match u16::try_from(*p.get_ref()) {
                Ok(v) if v > 0 => v,
                _ => {
                    self.err(span(p), key.to_string(), format!("{} is not a TCP port: give 1 to 65535", p.get_ref()));
                    22
                }
            },
        }
    }

    /// A file named by the experiment file: relative to the file's directory; not a word that
    /// OpenSSH would read as an option.
    fn host_path(&mut self, f: &Spanned<String>, key: &str) -> PathBuf {
        let s = f.get_ref();
        if s.is_empty() {
            self.err(span(f), key, "an empty path: name the file, or leave the key out");
        }
        if s.chars().any(|c| c == '"' || c.is_control()) {
            self.err(
                span(f),
                key,
                format!("{s:?}: a path with '\"' or a control character cannot be handed to ssh; rename the file"),
            );
        }
        let p = Path::new(s);
        if p.is_absolute() { p.to_path_buf() } else { self.src.path.parent().unwrap_or(Path::new(".")).join(p) }
    }
}
