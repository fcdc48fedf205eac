//! `[[host]]` with the `target` role and the `nvme-tcp` devices it serves (`target`, `export`),
//! and the errors that name file, line and key.

mod common;

use std::path::Path;

use common::*;
use experiment::{ConfigErrors, HostRole, parse};
use tiers::spec::RealDevice;

const FILE: &str = r#"
[experiment]
name = "t"
baseline = "remote"

[postgres]
profiles = ["default"]
memory_limits = ["unlimited"]

[[device]]
name = "local"
class = "nvme"
path = "/dev/disk/by-id/nvme-A"

[[device]]
name = "remote"
class = "nvme-tcp"
target = "storage"
export = "/dev/disk/by-id/nvme-B"
[device.emulate]
size = "1GiB"
latency = "1ms"

[[placement]]
name = "remote"
data = "remote"
wal = "local"

[[workload]]
name = "rw"
kind = "pgbench"
builtin = "tpcb-like"
scale = 1
clients = [1]
duration = "5s"

[[host]]
name = "storage"
address = "169.254.200.6"
roles = ["target"]
"#;

fn errors(text: &str, emulate: bool) -> ConfigErrors {
    parse(Path::new("/exp/t.toml"), text, &opts(emulate)).expect_err("should be rejected")
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
}

#[test]
fn a_device_served_by_a_target_host_takes_its_address_and_a_pgtier_nqn() {
    for emulate in [false, true] {
        let e = parse(Path::new("/exp/t.toml"), FILE, &opts(emulate)).unwrap();
        let h = &e.hosts[0];
        assert_eq!(h.roles, vec![HostRole::Target]);
        assert!(e.client_host().is_none());
        assert_eq!(e.target_hosts().iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["storage"]);
        let d = e.device("remote").unwrap();
        let t = d.target_host.as_ref().expect("served by the host");
        assert_eq!((t.name.as_str(), t.address.as_str()), ("storage", "169.254.200.6"));
        assert_eq!(t.export, Path::new("/dev/disk/by-id/nvme-B"));
        let RealDevice::NvmeTcp(nt) = &d.real else { panic!("{:?}", d.real) };
        assert_eq!((nt.address.as_str(), nt.port), ("169.254.200.6", 4420));
        assert_eq!(nt.nqn, "nqn.2026-12.io.pgtier:storage:remote");
        assert!(e.device("local").unwrap().target_host.is_none());
        let json = serde_json::to_string(&e.devices).unwrap();
        assert!(json.contains("\"target_host\":{\"name\":\"storage\""), "{json}");
        assert!(!json.contains("\"shell\""), "the run's ssh connection is no part of the configuration: {json}");
    }
}

#[test]
fn a_target_must_be_a_known_target_host_of_an_nvme_tcp_device() {
    let cases = [
        (
            FILE.replace("target = \"storage\"", "target = \"nas\""),
            "target = \"nas\"",
            "device[remote].target",
            "no [[host]] named \"nas\": the target hosts are storage",
        ),
        (
            FILE.replace("roles = [\"target\"]", "roles = [\"client\"]"),
            "target = \"storage\"",
            "device[remote].target",
            "host \"storage\" has no \"target\" role",
        ),
        (
            FILE.replace(
                "path = \"/dev/disk/by-id/nvme-A\"",
                "path = \"/dev/disk/by-id/nvme-A\"\ntarget = \"storage\"",
            ),
            "path = \"/dev/disk/by-id/nvme-A\"",
            "device[local].target",
            "only an nvme-tcp device is served by a target host",
        ),
        (
            FILE.replace("export = \"/dev/disk/by-id/nvme-B\"", "export = \"nvme-B\""),
            "export = \"nvme-B\"",
            "device[remote].export",
            "a path under /dev",
        ),
    ];
    for (text, at, key, msg) in cases {
        let errs = errors(&text, false);
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(key)).unwrap_or_else(|| panic!("{key}: {errs}"));
        assert!(e.message.contains(msg), "{key}: {errs}");
        let line = if key == "device[local].target" { line_of(&text, at) + 1 } else { line_of(&text, at) };
        assert_eq!(e.line, Some(line), "{key}: {errs}");
        assert_eq!(e.file, Path::new("/exp/t.toml"));
    }
    let errs = errors(&FILE.replace("export = \"/dev/disk/by-id/nvme-B\"\n", ""), false);
    assert!(
        errs.0
            .iter()
            .any(|e| e.key.as_deref() == Some("device[remote].export") && e.message.contains("needs `export`")),
        "{errs}"
    );
}

#[test]
fn what_the_stand_in_on_a_target_host_does_not_do_is_refused_with_emulate() {
    let text = FILE.replace("latency = \"1ms\"", "latency = \"200us\"");
    let errs = errors(&text, true);
    assert!(errs.0.iter().any(|e| e.key.as_deref() == Some("device[remote].emulate.latency")), "{errs}");
    assert!(parse(Path::new("/exp/t.toml"), &text, &opts(false)).is_ok(), "real hardware adds no latency");
    let text = format!("{FILE}\n[[fault]]\nrun = 1\nafter = \"1s\"\nkind = \"stop-target\"\ndevice = \"remote\"\n");
    let errs = errors(&text, true);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("fault[0].kind")).unwrap_or_else(|| panic!("{errs}"));
    assert!(e.message.contains("not built for a device served by a target host"), "{errs}");
}

#[test]
fn any_host_is_admitted_only_when_asked_for_by_name_with_a_warning() {
    let e = parse(Path::new("/exp/t.toml"), FILE, &opts(false)).unwrap();
    assert!(!e.device("remote").unwrap().target_host.as_ref().unwrap().allow_any_host, "this machine's NQN alone");
    assert!(!e.warnings.iter().any(|w| w.contains("allow_any_host")), "{:?}", e.warnings);
    let open = FILE
        .replace("export = \"/dev/disk/by-id/nvme-B\"", "export = \"/dev/disk/by-id/nvme-B\"\nallow_any_host = true");
    let e = parse(Path::new("/exp/t.toml"), &open, &opts(false)).unwrap();
    assert!(e.device("remote").unwrap().target_host.as_ref().unwrap().allow_any_host);
    let w: Vec<&String> = e.warnings.iter().filter(|w| w.contains("allow_any_host = true")).collect();
    assert!(w.len() == 1 && w[0].contains("any host that reaches 169.254.200.6:4420"), "{:?}", e.warnings);
    // Only on a device a target host serves.
    let text =
        FILE.replace("path = \"/dev/disk/by-id/nvme-A\"", "path = \"/dev/disk/by-id/nvme-A\"\nallow_any_host = true");
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("device[local].allow_any_host")).expect("refused");
    assert_eq!(e.line, Some(line_of(&text, "allow_any_host")));
    assert!(e.message.contains("only with `target"), "{errs}");
}

#[test]
fn a_dhchap_secret_on_a_target_host_device_is_written_there_unless_any_host_may_connect() {
    // The target asks for the key in hosts/<host NQN>/dhchap_key: accepted, kept as its source.
    for k in ["dhchap_secret_env = \"KEY\"", "dhchap_secret_file = \"/etc/pgtier/key\""] {
        let text =
            FILE.replace("export = \"/dev/disk/by-id/nvme-B\"", &format!("export = \"/dev/disk/by-id/nvme-B\"\n{k}"));
        let e = parse(Path::new("/exp/t.toml"), &text, &opts(false)).unwrap_or_else(|e| panic!("{e}"));
        let tiers::spec::RealDevice::NvmeTcp(nt) = &e.device("remote").unwrap().real else { panic!() };
        assert!(nt.dhchap_secret.is_some());
        // With allow_any_host, nvmet would ask no host for a key: refused.
        let open = text.replace(
            "export = \"/dev/disk/by-id/nvme-B\"",
            "export = \"/dev/disk/by-id/nvme-B\"\nallow_any_host = true",
        );
        let errs = errors(&open, false);
        let name = k.split(' ').next().unwrap();
        let e = errs.0.iter().find(|e| e.key.as_deref() == Some(&format!("device[remote].{name}"))).expect("refused");
        assert!(e.message.contains("allow_any_host") && e.message.contains("dhchap_key"), "{errs}");
        assert!(e.line.is_some(), "{errs}");
    }
}

#[test]
fn two_devices_of_one_target_host_need_their_own_subsystems() {
    let second = "\n[[device]]\nname = \"remote2\"\nclass = \"nvme-tcp\"\ntarget = \"storage\"\nexport = \"/dev/disk/by-id/nvme-C\"\nNQN\n[device.emulate]\nsize = \"1GiB\"\nlatency = \"1ms\"\n";
    let base = FILE.replace("[[placement]]", &format!("{}[[placement]]", second.replace("NQN\n", "")));
    // pgtier's own NQNs differ by device name.
    let e = parse(Path::new("/exp/t.toml"), &base, &opts(false)).unwrap();
    assert_eq!(e.device("remote2").unwrap().target_host.as_ref().unwrap().name, "storage");
    let text = FILE
        .replace(
            "export = \"/dev/disk/by-id/nvme-B\"",
            "export = \"/dev/disk/by-id/nvme-B\"\nnqn = \"nqn.2026-12.org.example:one\"",
        )
        .replace(
            "[[placement]]",
            &format!("{}[[placement]]", second.replace("NQN", "nqn = \"nqn.2026-12.org.example:one\"")),
        );
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("device[remote2].nqn")).expect("refused");
    assert!(e.message.contains("\"remote\" and \"remote2\" are both served by host \"storage\""), "{errs}");
    assert_eq!(e.line, Some(text.lines().collect::<Vec<_>>().iter().rposition(|l| l.contains("nqn = ")).unwrap() + 1));
}

#[test]
fn a_target_host_device_may_name_a_storage_network_address() {
    // The data path on its own network: the port listens there and this machine connects there;
    // ssh still goes to the host's address.
    let text = FILE.replace("target = \"storage\"", "target = \"storage\"\naddress = \"192.0.2.1\"");
    let e = parse(Path::new("/exp/t.toml"), &text, &opts(false)).unwrap();
    let d = e.device("remote").unwrap();
    let RealDevice::NvmeTcp(nt) = &d.real else { panic!() };
    assert_eq!(nt.address, "192.0.2.1");
    assert_eq!(d.target_host.as_ref().unwrap().address, "169.254.200.6");
    let plan = tiers::build_plan(
        std::slice::from_ref(d),
        &tiers::PlanContext {
            short_id: "t1".into(),
            work_dir: "/run/t".into(),
            log_dir: "/run/t/logs".into(),
            owner_uid: 1,
            owner_gid: 1,
            emulate: false,
        },
    );
    let text_plan = plan.to_string();
    assert!(text_plan.contains("addr_traddr 192.0.2.1") && text_plan.contains("--traddr 192.0.2.1"), "{text_plan}");
    // The stand-in listens on the host's address only.
    let errs = errors(&text, true);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("device[remote].address")).expect("refused");
    assert!(
        e.message.contains("leave `address` out") && e.line == Some(line_of(&text, "address = \"192.0.2.1\"")),
        "{errs}"
    );
}

#[test]
fn a_local_device_named_by_its_kernel_name_is_warned_about() {
    // Kernel names follow probe order; /dev/disk/by-id names do not.
    for (path, warned) in [
        ("/dev/nvme0n1", true),
        ("/dev/nvme1n1p2", true),
        ("/dev/sdb", true),
        ("/dev/vdc1", true),
        ("/dev/disk/by-id/nvme-A", false),
        ("/dev/mapper/vg-lv", false),
        ("/dev/md0", false),
    ] {
        let text = FILE.replace("path = \"/dev/disk/by-id/nvme-A\"", &format!("path = \"{path}\""));
        let e = parse(Path::new("/exp/t.toml"), &text, &opts(false)).unwrap();
        let w = e.warnings.iter().any(|w| w.contains(&format!("path {path} is a kernel name")));
        assert_eq!(w, warned, "{path}: {:?}", e.warnings);
        let e = parse(Path::new("/exp/t.toml"), &text, &opts(true)).unwrap();
        assert!(!e.warnings.iter().any(|w| w.contains("kernel name")), "--emulate does not use the path");
    }
}

#[test]
fn an_export_named_by_its_kernel_name_is_warned_about_and_its_identity_kept() {
    let text = FILE.replace(
        "export = \"/dev/disk/by-id/nvme-B\"",
        "export = \"/dev/nvme0n1\"\nmodel = \"INTEL SSDPF2KX038TZ\"\nserial = \"PHAC1234\"",
    );
    let e = parse(Path::new("/exp/t.toml"), &text, &opts(false)).unwrap();
    assert!(
        e.warnings.iter().any(|w| w.contains("export /dev/nvme0n1 is a kernel name on host \"storage\"")
            && w.contains("/dev/disk/by-id/")),
        "{:?}",
        e.warnings
    );
    let t = e.device("remote").unwrap().target_host.clone().unwrap();
    assert_eq!(
        (t.export_model.as_deref(), t.export_serial.as_deref()),
        (Some("INTEL SSDPF2KX038TZ"), Some("PHAC1234"))
    );
    let e = parse(Path::new("/exp/t.toml"), FILE, &opts(false)).unwrap();
    assert!(!e.warnings.iter().any(|w| w.contains("kernel name")), "{:?}", e.warnings);
}

#[test]
fn a_model_or_serial_that_would_go_unused_is_refused() {
    // A remote subsystem's namespace is found by its NQN, a PMem namespace by its name: a
    // model or serial there identifies nothing.
    let text = FILE.replace(
        "target = \"storage\"\nexport = \"/dev/disk/by-id/nvme-B\"",
        "address = \"192.0.2.20\"\nnqn = \"nqn.2016-01.com.example:vol\"\nserial = \"PHAC1234\"",
    );
    let errs = errors(&text, false);
    let e = errs.0.iter().find(|e| e.key.as_deref() == Some("device[remote].serial")).expect("refused");
    assert!(e.message.contains("without `target`") && e.message.contains("leave it out"), "{errs}");
}

/// An NQN longer than the NVMe base specification's 223 bytes is refused at its key and line.
#[test]
fn an_nqn_longer_than_223_bytes_is_refused() {
    let long = format!("nqn.2014-08.org.example:{}", "x".repeat(200));
    let text = FILE.replace("[[workload]]", &format!("[[device]]\nname = \"far\"\nclass = \"nvme-tcp\"\naddress = \"192.0.2.9\"\nnqn = \"{long}\"\nmount_options = [\"noatime\"]\n\n[[workload]]"));
    let e = errors(&text, false);
    let shown = e.to_string();
    assert!(shown.contains("nqn is 224 bytes long; an NQN has at most 223"), "{shown}");
    assert!(shown.contains(&format!(":{}:", line_of(&text, "nqn = \"nqn.2014-08.org.example:xx"))), "{shown}");
}
