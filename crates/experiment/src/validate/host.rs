//! `[[host]]`: other machines of the experiment, reached over OpenSSH. In this version a host can
//! only be the benchmark client (`roles = ["client"]`); the server and storage-target roles are
//! refused as not built yet.

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
        let mut roles = Vec::new();
        if r.roles.get_ref().is_empty() {
            self.err(span(&r.roles), key("roles"), "a host needs a role: roles = [\"client\"]");
        }
        for role in r.roles.get_ref() {
            match role.get_ref().as_str() {
                "client" if roles.contains(&HostRole::Client) => {
                    self.err(span(role), key("roles"), "\"client\" is listed twice; list it once");
                }
                "client" => roles.push(HostRole::Client),
                w @ ("server" | "target") => self.err(
                    span(role),
                    key("roles"),
                    format!(
                        "the {w:?} role is not implemented yet (only \"client\" is): run the {} on this machine by leaving the role out",
                        if w == "server" { "server" } else { "storage target" }
                    ),
                ),
                other => self.err(
                    span(role),
                    key("roles"),
                    format!("unknown role {other:?}: a host's roles are \"client\" (\"server\" and \"target\" are not implemented yet)"),
                ),
            }
        }
        Some(Host {
            name: n.clone(),
            address: address?,
            user,
            port,
            identity_file,
            known_hosts,
            roles,
            origin: self.origin(span(&r.name), key("name")),
        })
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
