//! NVMe/TCP: one connect per subsystem (the secret through a mode-0600 libnvme configuration,
//! never argv), the controllers and namespaces it made found through nvme-cli's JSON.

use std::collections::BTreeMap;

use super::*;

/// The NVMe/TCP connection a device is a namespace of: the settings pgtier asked for and what
/// the controller reports it runs with.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NvmeTcpConnection {
    /// The controller the connect created (`nvme6`), when nvme-cli said.
    pub controller: Option<String>,
    /// By nvme-cli option (`ctrl-loss-tmo`, `reconnect-delay`, `nr-io-queues`, `queue-size`):
    /// the value pgtier passed, or "kernel default".
    pub requested: BTreeMap<String, String>,
    /// By the same options, what the controller reports in sysfs (`/sys/class/nvme/<ctrl>/`):
    /// `ctrl_loss_tmo` (seconds, or `off`), `reconnect_delay`, `queue_count` less the admin
    /// queue, `sqsize` plus one (the kernel keeps it zero-based); those it could not read are
    /// missing.
    pub in_force: BTreeMap<String, String>,
}

/// The connection record of a device on `controller`, its settings read from sysfs.
pub(super) fn connection_record(sys: &mut dyn System, controller: Option<&str>) -> NvmeTcpConnection {
    let mut in_force = BTreeMap::new();
    if let Some(c) = controller {
        let dir = Path::new("/sys/class/nvme").join(c);
        let mut read = |attr: &str| sys.read_to_string(&dir.join(attr)).ok().map(|s| s.trim().to_string());
        let number =
            |s: Option<String>, delta: i64| s.and_then(|v| v.parse::<i64>().ok()).map(|v| (v + delta).to_string());
        let found = [
            ("ctrl-loss-tmo", read("ctrl_loss_tmo").filter(|v| !v.is_empty())),
            ("reconnect-delay", read("reconnect_delay").filter(|v| !v.is_empty())),
            ("nr-io-queues", number(read("queue_count"), -1)),
            ("queue-size", number(read("sqsize"), 1)),
        ];
        for (k, v) in found {
            if let Some(v) = v {
                in_force.insert(k.to_string(), v);
            }
        }
    }
    NvmeTcpConnection {
        controller: controller.map(str::to_string),
        requested: crate::plan::connect_settings(),
        in_force,
    }
}

impl Executor<'_> {
    /// `nvme connect` in the form the nvme-cli found supports, recording its undo before it runs
    /// and the controller it created right after.
    pub(super) fn connect(
        &mut self,
        n: usize,
        t: &NvmeTcpTarget,
        secret_file: Option<&Path>,
        devices: &[String],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<(), StepError> {
        let version =
            self.nvme_cli.clone().ok_or_else(|| "`nvme version` was not read before the connect".to_string())?;
        let (host_nqn, host_id) = self.host_identity(t);
        let secret = match &t.dhchap_secret {
            Some(src) => Some(read_secret(src)?),
            None => None,
        };
        let mut cmd = CommandLine::new("nvme").arg("connect");
        let connect_by_file = secret.is_some() && version.connect_config_connects_itself();
        if !connect_by_file {
            cmd = cmd.args([
                "--transport",
                "tcp",
                "--traddr",
                t.address.as_str(),
                "--trsvcid",
                &t.port.to_string(),
                "--nqn",
                t.nqn.as_str(),
            ]);
        }
        if let Some(q) = &host_nqn {
            cmd = cmd.args(["--hostnqn", q.as_str()]);
        }
        if let Some(i) = &host_id {
            cmd = cmd.args(["--hostid", i.as_str()]);
        }
        for (option, value) in crate::plan::passed_connect_settings() {
            cmd = cmd.arg(format!("--{option}")).arg(value);
        }
        let mut written = None;
        if let (Some(secret), Some(file)) = (&secret, secret_file) {
            self.write_secret_config(t, (host_nqn.as_deref(), host_id.as_deref()), secret, file)?;
            written = Some(file.to_path_buf());
            cmd = cmd.arg("--config").arg(file);
        }
        // nvme-cli 1.14 and older know no --output-format on connect: the controller is then
        // found in list-subsys (see `created_controller`).
        if version.connect_has_output_format() {
            cmd = cmd.args(["--output-format", "json"]);
        }
        // Recorded before the connect: if pgtier dies before it learns the controller's name,
        // cleanup disconnects the subsystem (which was not connected before, see the check).
        // Both hold the target's export of these devices (on a target host of this run):
        // the port and namespace stay while the connection does.
        let boot_id = journal::undo::current_boot_id();
        let exports = self.exports_of(devices);
        let by_nqn = self
            .journal
            .record_holding(
                Undo::NvmeDisconnect { nqn: t.nqn.clone(), boot_id: boot_id.clone(), controller: None },
                "NVMe/TCP connection",
                &exports,
            )
            .map_err(|e| e.to_string())?;
        let result = self.run_redacted(n, &cmd, secret.as_deref(), Duration::from_secs(120));
        if let Some(file) = &written {
            // The key lives in the file only while nvme-cli reads it.
            if self.sys.remove_file(file).is_err() && self.sys.file_kind(file) != FileKind::Missing {
                on_event(Event::Note(format!("could not remove {}; teardown removes it", file.display())));
            }
        }
        let out = result?;
        let controller = self.created_controller(n, t, &out.stdout)?;
        let mut holds = self.hold_controller(t, controller.clone(), (by_nqn, boot_id), &exports, on_event)?;
        // The mount holds the export too (directly: also when the connection's record is the
        // NQN-wide one).
        holds.extend(exports);
        for d in devices {
            self.connections.insert(d.clone(), holds.clone());
            self.controllers.insert(d.clone(), controller.clone());
        }
        Ok(())
    }

    /// The host NQN and host ID to connect with: both from the experiment file (the ID derived
    /// from a UUID NQN when only the NQN is given), or both from /etc/nvme.
    fn host_identity(&mut self, t: &NvmeTcpTarget) -> (Option<String>, Option<String>) {
        let from_file = |sys: &mut dyn System, p: &str| {
            sys.read_to_string(Path::new(p)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
        };
        match (&t.host_nqn, &t.host_id) {
            (Some(q), Some(i)) => (Some(q.clone()), Some(i.clone())),
            (Some(q), None) => (Some(q.clone()), crate::build::uuid_of_host_nqn(q)),
            (None, _) => (from_file(self.sys, "/etc/nvme/hostnqn"), from_file(self.sys, "/etc/nvme/hostid")),
        }
    }

    /// Replaces the journal's disconnect-by-NQN (`by_nqn`) with a disconnect of `controller`,
    /// the one this connect created, when nvme-cli named it; the journal entries that hold it.
    fn hold_controller(
        &mut self,
        t: &NvmeTcpTarget,
        controller: Option<String>,
        (by_nqn, boot_id): (journal::RecordId, Option<String>),
        exports: &[journal::RecordId],
        on_event: &mut dyn FnMut(Event),
    ) -> Result<Vec<journal::RecordId>, StepError> {
        Ok(match &controller {
            Some(c) => {
                let id = self
                    .journal
                    .record_holding(
                        Undo::NvmeDisconnect { nqn: t.nqn.clone(), boot_id, controller: Some(c.clone()) },
                        format!("NVMe/TCP controller {c}"),
                        exports,
                    )
                    .map_err(|e| e.to_string())?;
                self.journal.release(by_nqn).map_err(|e| e.to_string())?;
                vec![id]
            }
            None => {
                on_event(Event::Note(format!(
                    "nvme connect did not say which controller it created; teardown disconnects subsystem {} by NQN",
                    t.nqn
                )));
                vec![by_nqn]
            }
        })
    }

    /// libnvme's JSON configuration with the DH-HMAC-CHAP key for `t`, written mode 0600 (its
    /// removal recorded first); a key needs a host NQN and ID.
    fn write_secret_config(
        &mut self,
        t: &NvmeTcpTarget,
        host: (Option<&str>, Option<&str>),
        secret: &str,
        file: &Path,
    ) -> Result<(), StepError> {
        let (Some(q), Some(i)) = host else {
            return Err(format!(
                "a DH-HMAC-CHAP secret goes to nvme-cli in libnvme's configuration, for a host NQN and host ID; this machine has no /etc/nvme/hostnqn or /etc/nvme/hostid, so give host_nqn and host_id for {} in the experiment file",
                t.nqn
            )
            .into());
        };
        let config = serde_json::json!([{
            "hostnqn": q,
            "hostid": i,
            "dhchap_key": secret,
            "subsystems": [{
                "nqn": t.nqn,
                "ports": [{ "transport": "tcp", "traddr": t.address, "trsvcid": t.port.to_string() }],
            }],
        }]);
        self.record(Undo::RemoveFile { path: file.to_path_buf() }, "nvme-cli configuration with the DH-HMAC-CHAP key")?;
        self.sys
            .write_private(file, &serde_json::to_string_pretty(&config).expect("JSON"))
            .map_err(|e| format!("write {} (mode 0600): {e}", file.display()))?;
        Ok(())
    }

    /// The controller `nvme connect` created: from its JSON output, else (nvme-cli 2.11+ with
    /// --config prints nothing) the subsystem's only controller, as it was not connected before.
    fn created_controller(&mut self, n: usize, t: &NvmeTcpTarget, stdout: &str) -> Result<Option<String>, String> {
        Ok(match nvme::connected_device(stdout) {
            Some(c) => Some(c),
            // nvme-cli 2.11+ with --config prints nothing: the controller is the subsystem's
            // only one (it was not connected before this step).
            None => {
                let subs = self.nvme_subsystems(n)?;
                let ctrls: Vec<String> = subs
                    .iter()
                    .filter(|s| s.nqn.trim() == t.nqn.trim())
                    .flat_map(|s| s.controllers.iter().map(|c| c.name.clone()))
                    .collect();
                if let [one] = ctrls.as_slice() { Some(one.clone()) } else { None }
            }
        })
    }

    /// `nvme list-subsys -o json`. Without any NVMe subsystem in sysfs, nvme-cli fails with
    /// "Failed to scan topology"; that means none is connected.
    pub(super) fn nvme_subsystems(&mut self, n: usize) -> Result<Vec<nvme::NvmeSubsystem>, String> {
        let cmd = CommandLine::new("nvme").args(["list-subsys", "-o", "json"]);
        let shown = cmd.to_string();
        // Recorded (with its time) by the probe recorder; a non-zero exit is judged below.
        let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(60))).map_err(|e| e.to_string())?;
        if out.status != 0 {
            if out.stdout.trim().is_empty() && out.stderr.contains("Failed to scan topology") {
                return Ok(Vec::new());
            }
            return Err(format!("`{shown}` exited with status {}: {}", out.status, out.stderr.trim()));
        }
        nvme::parse_list_subsys(&out.stdout).map_err(|e| e.to_string())
    }
}
