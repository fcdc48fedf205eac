//! NVMe over TCP through `FakeSystem` (this machine has no nvme-tcp driver; the VM tests in
//! xtask/tests/vm.rs run the same paths for real): the nvme-cli version first, the host
//! identity as a pair, connect, find the namespace by subsystem NQN, check, mkfs, mount; the
//! DH-HMAC-CHAP secret reaches nvme-cli through a root-only configuration file and nothing
//! else; teardown disconnects the controller the connect created, after the unmount. Its own
//! test binary: it sets environment variables, once, before any test reads them.

mod common;

use std::sync::Once;

use common::*;
use tiers::safety::Refusal;
use tiers::spec::RealDevice;
use tiers::system::{Canned, FakeSystem};

/// A secret in the DH-HMAC-CHAP key format (`DHHC-1:<hash>:<base64>:`); made up for the test.
const SECRET: &str = "DHHC-1:00:cGd0aWVyLXRlc3Qtc2VjcmV0LW5vdC1hLXJlYWwta2V5IQ==:";
const SECRET_ENV: &str = "PGTIER_TEST_DHCHAP_SECRET";
/// The subsystem of nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json.
const NQN: &str = "nqn.1988-11.com.dell:powerstore:00:42c92aa830b1FF113003";
/// The (mock) subsystem of nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json.
const OTHER_NQN: &str = "nqn.1988-11.com.dell:mock:00:1a1111a1111aAA11111A";
const HOST_NQN: &str = "nqn.2014-08.org.nvmexpress:uuid:a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a";
const HOST_ID: &str = "a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a";
/// Where the plan writes the connect's libnvme configuration (next to the fake work directory).
const CONFIG: &str = "/run/pgtier-fake/work.nvme-remote.json";

fn set_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the first thing every test of this binary does, under a Once, before any
        // thread of this test process reads the environment for this variable.
        unsafe { std::env::set_var(SECRET_ENV, SECRET) };
    });
}

fn canned(name: &str) -> Canned {
    let rc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(format!("{name}.rc")),
    )
    .map(|r| r.trim().parse().unwrap())
    .unwrap_or(0);
    Canned { status: rc, stdout: fixture(name), stderr: String::new() }
}

/// nvme-cli 2.3 (the guest's, vm/nvme-version.txt). Before `nvme connect` nothing is connected
/// (nvme-cli without any subsystem: local/nvme-list-subsys-json.no-nvme-module.txt, its .rc and
/// .stderr); afterwards list-subsys shows another subsystem only, and `nvme list` (2.11
/// detailed shape) names ours. The connect prints its controller as 2.3 does with `-o json`
/// (vm/nvme-connect-o-json.tcp.json: nvme6).
fn tcp_machine() -> FakeSystem {
    tcp_machine_listing("nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json")
}

fn tcp_machine_listing(nvme_list: &str) -> FakeSystem {
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once(
            "nvme list-subsys",
            Canned {
                status: fixture("local/nvme-list-subsys-json.no-nvme-module.txt.rc").trim().parse().unwrap(),
                stdout: fixture("local/nvme-list-subsys-json.no-nvme-module.txt"),
                stderr: fixture("local/nvme-list-subsys-json.no-nvme-module.txt.stderr"),
            },
        )
        .answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")))
        .answer("nvme connect", Canned::ok(fixture("vm/nvme-connect-o-json.tcp.json")))
        .answer("nvme list -o json", Canned::ok(fixture(nvme_list)))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme0n1", 259, 3);
    f
}

fn connect_line(extra: &str) -> String {
    format!(
        "nvme connect --transport tcp --traddr 192.0.2.10 --trsvcid 4420 --nqn {NQN} --hostnqn {HOST_NQN} --hostid {HOST_ID} --ctrl-loss-tmo 60 --reconnect-delay 2{extra} --output-format json"
    )
}

/// Device "remote" on the PowerStore subsystem NQN, namespace 293 (the fixture's): the file
/// names it, so the listing's answer needs no word from the controller.
fn remote_293(secret_env: Option<&str>) -> tiers::DeviceSpec {
    with_target(nvme_tcp("remote", NQN, secret_env), |t| t.nsid = Some(293))
}

fn with_target(mut d: tiers::DeviceSpec, f: impl FnOnce(&mut tiers::spec::NvmeTcpTarget)) -> tiers::DeviceSpec {
    if let RealDevice::NvmeTcp(t) = &mut d.real {
        f(t);
    }
    d
}

#[test]
fn connect_resolve_mkfs_mount_and_the_secret_stays_out_of_every_record() {
    set_env();
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let specs = [remote_293(Some(SECRET_ENV))];
    let o = run_plan(&specs, &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "nvme version".to_string(),
            "nvme list-subsys -o json".into(),
            connect_line(&format!(" --config {CONFIG}")),
            "nvme list-subsys -o json".into(),
            "nvme list -o json".into(),
            "udevadm settle --timeout=60".into(),
            "blkid -p -o export /dev/nvme0n1".into(),
            "wipefs -J --no-act /dev/nvme0n1".into(),
            "udevadm settle --timeout=60".into(),
            "systemctl list-units --all --plain --no-legend --no-pager 'lvm-activate-*'".into(),
            "mkfs.xfs -L remote /dev/nvme0n1".into(),
            format!("mount -t xfs -o noatime /dev/nvme0n1 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    // The secret reached nvme-cli in libnvme's configuration (a host entry with dhchap_key,
    // matching the host NQN and ID on the command line), written mode 0600 and removed again
    // right after the connect; never as an argument.
    assert!(f.delivered_secrets.is_empty(), "no secret on any command line");
    let [(path, json)] = f.private_writes.as_slice() else { panic!("one private file: {:?}", f.private_writes) };
    assert_eq!(path, std::path::Path::new(CONFIG));
    let config: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(config[0]["hostnqn"], HOST_NQN);
    assert_eq!(config[0]["hostid"], HOST_ID);
    assert_eq!(config[0]["dhchap_key"], SECRET);
    assert_eq!(config[0]["subsystems"][0]["nqn"], NQN);
    assert_eq!(config[0]["subsystems"][0]["ports"][0]["traddr"], "192.0.2.10");
    assert!(f.private_files.is_empty(), "the configuration file was removed");
    let connect_at = f.calls.iter().position(|c| c.starts_with("run: nvme connect")).unwrap();
    assert_eq!(f.calls[connect_at + 1], format!("rm: {CONFIG}"), "removed right after the connect");
    // ... and the secret appears nowhere else.
    let everywhere = [
        ("calls", f.calls.join("\n")),
        ("commands", f.commands().join("\n")),
        ("provisioned (incl. ExecutedCommand output)", serde_json::to_string(p).unwrap()),
        ("journal", o.journal_text.clone()),
        ("plan display", o.plan.to_string()),
        ("plan json", serde_json::to_string(&o.plan).unwrap()),
        ("notes", o.notes.join("\n")),
    ];
    for (what, text) in &everywhere {
        assert!(!text.contains(SECRET), "the secret leaked into {what}");
        assert!(!text.contains("cGd0aWVyLXRlc3Qtc2VjcmV0"), "part of the secret leaked into {what}");
    }
    let d = p.device("remote").unwrap();
    assert_eq!(d.description, format!("NVMe/TCP subsystem {NQN} at 192.0.2.10:4420"));
}

/// The connection's settings are recorded per device (issue 26 item 10): what pgtier passed
/// ("kernel default" for the queue count and size, which it leaves alone) and what the
/// controller it created reports in sysfs.
#[test]
fn the_connection_settings_asked_for_and_in_force_are_recorded() {
    set_env();
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    // The kernel's attributes of the controller connect named (vm/nvme-connect-o-json.tcp.json):
    // two I/O queues and the admin queue, 128 entries (sqsize is zero-based).
    f.file("/sys/class/nvme/nvme6/ctrl_loss_tmo", "60\n")
        .file("/sys/class/nvme/nvme6/reconnect_delay", "2\n")
        .file("/sys/class/nvme/nvme6/queue_count", "3\n")
        .file("/sys/class/nvme/nvme6/sqsize", "127\n");
    let o = run_plan(&[remote_293(None)], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let c = p.device("remote").unwrap().nvme_tcp.as_ref().expect("a connection record");
    assert_eq!(c.controller.as_deref(), Some("nvme6"));
    let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(
        c.requested,
        map(&[
            ("ctrl-loss-tmo", "60"),
            ("reconnect-delay", "2"),
            ("nr-io-queues", "kernel default"),
            ("queue-size", "kernel default")
        ])
    );
    assert_eq!(
        c.in_force,
        map(&[("ctrl-loss-tmo", "60"), ("reconnect-delay", "2"), ("nr-io-queues", "2"), ("queue-size", "128")])
    );
    assert!(f.commands().contains(&connect_line("")), "{:?}", f.commands());
    let text = o.plan.to_string();
    assert!(
        text.contains("connection settings: ctrl-loss-tmo 60, reconnect-delay 2, nr-io-queues (not passed: the kernel's default), queue-size (not passed: the kernel's default)"),
        "{text}"
    );
}

/// The journal lines, as (seq, undo kind, controller, holds).
fn records(journal: &str) -> Vec<serde_json::Value> {
    journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["op"] == "record" || v["op"] == "released")
        .collect()
}

#[test]
fn teardown_disconnects_the_controller_it_created_and_only_after_the_unmount() {
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let o = run_plan(&[remote_293(None)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let recs = records(&o.journal_text);
    // Before the connect: disconnect by NQN (nothing else is known yet); after it, the
    // controller connect named replaces that record.
    let by_nqn =
        recs.iter().find(|r| r["undo"]["kind"] == "nvme-disconnect" && r["undo"]["controller"].is_null()).unwrap();
    let by_ctrl = recs.iter().find(|r| r["undo"]["controller"] == "nvme6").expect("the controller connect printed");
    assert_eq!(by_ctrl["undo"]["nqn"], NQN);
    assert!(recs.iter().any(|r| r["op"] == "released" && r["seq"] == by_nqn["seq"]), "the NQN-wide record is released");
    // The mount holds the connection: teardown does not disconnect while the unmount failed.
    let mount = recs.iter().find(|r| r["undo"]["kind"] == "unmount").unwrap();
    assert_eq!(mount["holds"], serde_json::json!([by_ctrl["seq"]]), "{}", o.journal_text);
    let text = o.plan.to_string();
    assert!(text.contains("nvme disconnect -d <the controller this connect created>"), "{text}");
}

#[test]
fn nvme_cli_1_16_with_a_secret_is_refused_before_anything_runs() {
    set_env();
    let mut f = tcp_machine();
    f.answer_once("nvme version", Canned::ok(fixture("nvme/nvme-version.v1.16.txt")));
    let o = run_plan(&[remote_293(Some(SECRET_ENV))], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("nvme-cli 1.16 cannot authenticate with DH-HMAC-CHAP"), "{e}");
    assert!(e.contains("nvme-cli 2.0 or later"), "{e}");
    assert_eq!(f.commands(), vec!["nvme version"], "nothing is connected or written");
    assert!(f.private_writes.is_empty());
}

#[test]
fn nvme_cli_1_16_without_subsystems_prints_an_empty_object_and_connects() {
    // 1.16: `list-subsys -o json` prints `{}` (exit 0) when there is no subsystem, and `connect
    // -o json` prints the controller as a JSON object (issue14.md, sections 2 and 10).
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("nvme/nvme-version.v1.16.txt")))
        .answer_once("nvme list-subsys", canned("nvme/nvme-list-subsys-o-json.v1.16.no-subsystems.builtin-json.txt"))
        .answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")))
        .answer("nvme connect", Canned::ok("{\n  \"device\":\"nvme3\"\n}\n"))
        .answer(
            "nvme list -o json",
            Canned::ok(fixture("nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json")),
        )
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme0n1", 259, 3);
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let o = run_plan(&[remote_293(None)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("`{{}}` means nothing is connected: {e}"));
    assert_eq!(f.commands()[2], connect_line(""));
    assert!(o.journal_text.contains("\"controller\":\"nvme3\""), "{}", o.journal_text);
}

#[test]
fn nvme_cli_1_14_connects_without_output_format() {
    // `--output-format` on connect came in 1.15; 1.14 prints its usage and fails (EINVAL) on
    // it, and prints nothing on success: the controller is the subsystem's one in list-subsys.
    // (The version line as 1.x prints it, nvme/nvme-version.v1.16.txt's format.)
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok("nvme version 1.14\n"))
        .answer_once("nvme list-subsys", canned("nvme/nvme-list-subsys-o-json.v1.16.no-subsystems.builtin-json.txt"))
        .answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")))
        .answer("nvme connect --transport tcp --traddr 192.0.2.10 --trsvcid 4420 --nqn", Canned::ok(""))
        .answer(
            "nvme list -o json",
            Canned::ok(fixture("nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json")),
        )
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme0n1", 259, 3);
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let o = run_plan(&[remote_293(None)], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let connect = connect_line("");
    assert_eq!(f.commands()[2], connect.strip_suffix(" --output-format json").unwrap(), "{:?}", f.commands());
}

#[test]
fn a_host_nqn_without_its_host_id_is_refused_before_connecting() {
    let mut f = tcp_machine();
    let d = with_target(remote_293(None), |t| {
        t.host_nqn = Some("nqn.2014-08.org.example:db-host-1".into());
        t.host_id = None;
    });
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("host_nqn nqn.2014-08.org.example:db-host-1 is given without host_id"), "{e}");
    assert!(e.contains("EINVAL"), "{e}");
    assert_eq!(f.commands(), vec!["nvme version"]);
    let d = with_target(remote_293(None), |t| t.host_nqn = None);
    let o = run_plan(&[d], &fake_ctx(), &mut tcp_machine());
    assert!(step_error(&o).contains("is given without host_nqn"));
}

#[test]
fn a_uuid_host_nqn_implies_its_host_id() {
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let d = with_target(remote_293(None), |t| t.host_id = None);
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.commands()[2], connect_line(""));
}

#[test]
fn without_a_host_identity_the_machines_pair_is_passed_together() {
    let mut f = tcp_machine();
    f.file("/etc/nvme/hostnqn", "nqn.2014-08.org.nvmexpress:uuid:f602dd3c-7dfc-4737-90da-e1f102a647b4\n")
        .file("/etc/nvme/hostid", "67cb4491-0010-4483-ac23-4c8c2f9b80c2\n");
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let d = with_target(remote_293(None), |t| {
        t.host_nqn = None;
        t.host_id = None;
    });
    let plan = tiers::build_plan(std::slice::from_ref(&d), &fake_ctx());
    assert!(
        plan.to_string()
            .contains("--hostnqn <from /etc/nvme/hostnqn> --hostid <from /etc/nvme/hostid> --ctrl-loss-tmo 60 --reconnect-delay 2 --output-format json"),
        "{plan}"
    );
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        f.commands()[2].ends_with(
            "--hostnqn nqn.2014-08.org.nvmexpress:uuid:f602dd3c-7dfc-4737-90da-e1f102a647b4 --hostid 67cb4491-0010-4483-ac23-4c8c2f9b80c2 --ctrl-loss-tmo 60 --reconnect-delay 2 --output-format json"
        ),
        "{:?}",
        f.commands()
    );
}

#[test]
fn two_namespaces_of_one_subsystem_share_one_connection() {
    // The guest's target (vm/*.tcp.json): subsystem pgt-capture with namespaces 1 and 2 on
    // controller nvme6 (nvme6n1, nvme6n2), next to six PCIe drives.
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.pcie.json")))
        .answer("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.tcp.json")))
        .answer("nvme connect", Canned::ok(fixture("vm/nvme-connect-o-json.tcp.json")))
        .answer("nvme list -o json", Canned::ok(fixture("vm/nvme-list-o-json.tcp.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme6n1", 259, 10)
        .block_device("/dev/nvme6n2", 259, 11);
    let (mp_a, mp_b) = (mountpoint("lb-data"), mountpoint("lb-wal"));
    let line_a = mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme6n1", &mp_a);
    let line_b = mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme6n2", &mp_b);
    // Each mount adds its own line (the second device is checked again before its mkfs, after
    // the first is mounted).
    f.on_run("mount -t xfs -o noatime /dev/nvme6n1 ", "/proc/self/mounts", format!("{line_a}\n")).on_run(
        "mount -t xfs -o noatime /dev/nvme6n2 ",
        "/proc/self/mounts",
        format!("{line_a}\n{line_b}\n"),
    );
    let specs = [1, 2].map(|nsid| {
        with_target(nvme_tcp(if nsid == 1 { "lb-data" } else { "lb-wal" }, "pgt-capture", None), |t| {
            t.address = "127.0.0.1".into();
            t.nsid = Some(nsid);
        })
    });
    let o = run_plan(&specs, &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let connects: Vec<String> = f.commands().into_iter().filter(|c| c.starts_with("nvme connect")).collect();
    assert_eq!(connects.len(), 1, "one connect for both namespaces: {connects:?}");
    assert_eq!(p.device("lb-data").unwrap().block_device, std::path::Path::new("/dev/nvme6n1"));
    assert_eq!(p.device("lb-wal").unwrap().block_device, std::path::Path::new("/dev/nvme6n2"));
    let recs = records(&o.journal_text);
    let ctrl = recs.iter().find(|r| r["undo"]["controller"] == "nvme6").unwrap()["seq"].clone();
    let mounts: Vec<&serde_json::Value> = recs.iter().filter(|r| r["undo"]["kind"] == "unmount").collect();
    assert_eq!(mounts.len(), 2);
    assert!(mounts.iter().all(|m| m["holds"] == serde_json::json!([ctrl])), "both mounts hold the one connection");
    let text = o.plan.to_string();
    assert!(text.contains("namespaces (lb-data, lb-wal) can be checked"), "{text}");
    assert!(text.contains("uses the connection to pgt-capture made for device lb-data"), "{text}");
    assert_eq!(text.matches("check nvme list-subsys -o json: subsystem pgt-capture is not connected yet").count(), 1);
}

/// The guest's target with two namespaces (vm/*.tcp.json: pgt-capture, NSIDs 1 and 2 on
/// controller nvme6, `nvme list` showing nvme6n2 first), each namespace's block device there.
fn two_namespace_machine() -> FakeSystem {
    two_namespace_machine_listing(fixture("vm/nvme-list-o-json.tcp.json"))
}

/// The same with `nvme list -o json` answering `listing`.
fn two_namespace_machine_listing(listing: String) -> FakeSystem {
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.pcie.json")))
        .answer("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.tcp.json")))
        .answer("nvme connect", Canned::ok(fixture("vm/nvme-connect-o-json.tcp.json")))
        .answer("nvme list -o json", Canned::ok(listing))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme6n1", 259, 10)
        .block_device("/dev/nvme6n2", 259, 11);
    f
}

/// The guest's `nvme list -o json` without namespace 2 (its block device not made yet).
fn listing_without_ns2() -> String {
    let all: serde_json::Value = serde_json::from_str(&fixture("vm/nvme-list-o-json.tcp.json")).unwrap();
    let kept: Vec<serde_json::Value> =
        all["Devices"].as_array().unwrap().iter().filter(|d| d["DevicePath"] != "/dev/nvme6n2").cloned().collect();
    serde_json::json!({ "Devices": kept }).to_string()
}

/// Nothing was written: no wipefs (but its --no-act probe), parted, mkfs or mount ran.
fn nothing_written(f: &FakeSystem) {
    let commands = f.commands();
    let writes: Vec<&String> = commands
        .iter()
        .filter(|c| {
            (c.starts_with("wipefs") && !c.contains("--no-act"))
                || c.starts_with("parted")
                || c.starts_with("mkfs")
                || c.starts_with("mount")
                || c.starts_with("dd ")
                || c.starts_with("blkdiscard")
        })
        .collect();
    assert!(writes.is_empty(), "nothing may be written: {writes:?}\n{commands:#?}");
}

/// Runs a device of pgt-capture without `nsid` (and with allow_wipe) on `f`: refused as
/// needing an NSID, naming `namespaces`, with nothing written.
fn refused_without_nsid(f: &mut FakeSystem, namespaces: &str) -> Outcome {
    let mut d = with_target(nvme_tcp("remote", "pgt-capture", None), |t| t.address = "127.0.0.1".into());
    d.allow_wipe = true;
    let o = run_plan(&[d], &fake_ctx(), f);
    assert_eq!(refusal(&o), Refusal::NsidNeeded { nqn: "pgt-capture".into(), namespaces: namespaces.into() });
    nothing_written(f);
    o
}

#[test]
fn two_namespaces_without_nsid_are_refused_and_nothing_is_written() {
    // Even with allow_wipe: which namespace is meant, the file does not say.
    let mut f = two_namespace_machine();
    let o = refused_without_nsid(&mut f, "/dev/nvme6n1 (NSID 1), /dev/nvme6n2 (NSID 2)");
    assert!(f.commands().iter().any(|c| c.starts_with("nvme connect")), "refused once connected");
    assert!(o.journal_text.contains("\"controller\":\"nvme6\""), "teardown disconnects what it connected");
}

#[test]
fn a_second_namespace_without_its_block_device_yet_is_seen_by_the_controller() {
    // `nvme list` shows namespace 1 only (the kernel has not made nvme6n2 yet); the
    // controller's active namespace list has both.
    let mut f = two_namespace_machine_listing(listing_without_ns2());
    f.answer("nvme list-ns", Canned::ok(fixture("vm/nvme-list-ns.tcp.txt")));
    refused_without_nsid(&mut f, "NSID 1, NSID 2, by `nvme list-ns /dev/nvme6`");
}

#[test]
fn the_only_namespace_is_used_once_the_controller_confirms_it() {
    let mut f = two_namespace_machine_listing(listing_without_ns2());
    f.answer("nvme list-ns", Canned::ok("[   0]:0x1\n"));
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme6n1", &mp));
    let d = with_target(nvme_tcp("remote", "pgt-capture", None), |t| t.address = "127.0.0.1".into());
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.device("remote").unwrap().block_device, std::path::Path::new("/dev/nvme6n1"));
    let commands = f.commands();
    let at = |prefix: &str| {
        commands.iter().position(|c| c.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {commands:#?}"))
    };
    // The controller asked, then udev settled, before the checks read the device.
    assert!(at("nvme list-ns /dev/nvme6") < at("udevadm settle"), "{commands:#?}");
    assert!(at("udevadm settle") < at("blkid -p"), "{commands:#?}");
}

#[test]
fn a_namespace_named_by_uuid_is_checked_before_anything_is_written() {
    // The kernel's identifiers of namespace 1 in the guest (vm/sysfs-nvme-ns1-ids.tcp.txt).
    let ids = fixture("vm/sysfs-nvme-ns1-ids.tcp.txt");
    let attr = |name: &str| -> String {
        ids.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name}: {ids}"))
            .to_string()
    };
    let wwid = attr("wwid");
    let uuid = wwid.strip_prefix("uuid.").expect("nvmet gives its namespaces a UUID").to_string();
    let machine = || {
        let mut f = two_namespace_machine();
        f.file("/sys/class/block/nvme6n1/wwid", format!("{wwid}\n"))
            .file("/sys/class/block/nvme6n1/uuid", format!("{}\n", attr("uuid")));
        f
    };
    let named = |id: &str| {
        with_target(nvme_tcp("remote", "pgt-capture", None), |t| {
            t.address = "127.0.0.1".into();
            t.nsid = Some(1);
            t.uuid = Some(id.into());
        })
    };
    // The right one, given upper-case and without dashes: used.
    let mut f = machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme6n1", &mp));
    let o = run_plan(&[named(&uuid.replace('-', "").to_uppercase())], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(o.plan.to_string().contains("(the file's uuid)"), "{}", o.plan);
    // Another one: refused, nothing written.
    let mut f = machine();
    let o = run_plan(&[named("6b2c2ac2-0000-4000-8000-000000000001")], &fake_ctx(), &mut f);
    match refusal(&o) {
        Refusal::NamespaceNotNamed { device, expected, actual } => {
            assert_eq!((device.as_str(), expected.as_str()), ("/dev/nvme6n1", "6b2c2ac2-0000-4000-8000-000000000001"));
            assert!(actual.contains(&wwid), "{actual}");
        }
        other => panic!("{other:?}"),
    }
    nothing_written(&f);
}

#[test]
fn a_device_path_without_dev_is_found_at_its_dev_path() {
    // nvme-cli 2.x prints the bare name when /dev has no node yet (nvme_dev_full_path()).
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.pcie.json")))
        .answer("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.tcp.json")))
        .answer("nvme connect", Canned::ok(fixture("vm/nvme-connect-o-json.tcp.json")))
        .answer("nvme list -o json", Canned::ok(fixture("nvme/nvme-list-o-json.v2.3.bare-devicepath.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme6n1", 259, 10);
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme6n1", &mp));
    let d = with_target(nvme_tcp("remote", "pgt-capture", None), |t| t.nsid = Some(1));
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.device("remote").unwrap().block_device, std::path::Path::new("/dev/nvme6n1"));
}

#[test]
fn a_secret_echoed_by_nvme_cli_is_redacted_in_errors_and_records() {
    set_env();
    let mut f = tcp_machine();
    f.answer_once("nvme connect", Canned::fail(1, format!("nvme connect: invalid dhchap secret {SECRET}")));
    let o = run_plan(&[remote_293(Some(SECRET_ENV))], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("invalid dhchap secret <redacted>"), "{e}");
    assert!(!e.contains(SECRET));
    assert!(!format!("{:?}", o.result).contains(SECRET));
    assert!(!o.journal_text.contains(SECRET));
    // The connect is recorded before it runs, so teardown disconnects even after a failure,
    // and the configuration file was removed.
    assert!(o.journal_text.contains("nvme-disconnect"));
    assert!(f.private_files.is_empty());
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")));
}

#[test]
fn a_missing_secret_variable_fails_before_connecting() {
    let mut f = tcp_machine();
    let o = run_plan(&[remote_293(Some("PGTIER_TEST_NO_SUCH_VARIABLE"))], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("environment variable PGTIER_TEST_NO_SUCH_VARIABLE"), "{e}");
    assert_eq!(f.commands(), vec!["nvme version", "nvme list-subsys -o json"]);
}

#[test]
fn a_secret_from_a_file_is_trimmed_and_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dhchap");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let d = with_target(remote_293(None), |t| {
        t.dhchap_secret = Some(tiers::spec::SecretSource::File { path: file.clone() })
    });
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let config: serde_json::Value = serde_json::from_str(&f.private_writes[0].1).unwrap();
    assert_eq!(config[0]["dhchap_key"], SECRET);
    assert!(!f.calls.join("\n").contains(SECRET) && !o.journal_text.contains(SECRET));
}

#[test]
fn nvme_cli_2_11_connects_from_the_configuration_file_itself() {
    // From 2.11, `nvme connect --config FILE` connects what the file names and prints nothing;
    // the controller is then the subsystem's one in list-subsys.
    set_env();
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("nvme/nvme-version.v2.16.txt")))
        .answer_once("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.pcie.json")))
        .answer("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.tcp.json")))
        .answer("nvme connect", Canned::ok(""))
        .answer("nvme list -o json", Canned::ok(fixture("vm/nvme-list-o-json.tcp.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme6n1", 259, 10);
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme6n1", &mp));
    let d = with_target(nvme_tcp("remote", "pgt-capture", Some(SECRET_ENV)), |t| t.nsid = Some(1));
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands()[2],
        format!(
            "nvme connect --hostnqn {HOST_NQN} --hostid {HOST_ID} --ctrl-loss-tmo 60 --reconnect-delay 2 --config {CONFIG} --output-format json"
        )
    );
    assert!(o.journal_text.contains("\"controller\":\"nvme6\""), "learnt from list-subsys");
}

#[test]
fn an_existing_connection_is_refused_and_nothing_is_connected() {
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")));
    let o = run_plan(&[nvme_tcp("remote", OTHER_NQN, None)], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::AlreadyConnected { nqn: OTHER_NQN.into(), controllers: "nvme-subsys0: nvme3, nvme2".into() }
    );
    assert_eq!(f.commands(), vec!["nvme version", "nvme list-subsys -o json"]);
    assert!(!o.journal_text.contains("nvme-disconnect"), "teardown must not disconnect someone else's subsystem");
}

#[test]
fn a_namespace_that_never_appears_says_why() {
    let mut f = tcp_machine_listing("nvme/nvme-list-o-json.v2.11-detailed.pcie.netdata-testdata.json");
    let o = run_plan(&[nvme_tcp("remote", NQN, None)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(
        e.contains(&format!("subsystem {NQN}: no namespace after 30 s (nvme list-subsys does not list it)")),
        "{e}"
    );
}

/// `nvme list -o json` in the flat 2.x shape (nvme/nvme-list-o-json.v2-simple.pcie.int-overflow.issue-2028.json:
/// no subsystem NQN), for devices nvme0n1, nvme2n1 and nvme5n1.
fn flat_list() -> String {
    let dev = |p: &str| {
        format!(
            r#"{{"NameSpace":1,"DevicePath":"{p}","Firmware":"4.1.0.0","ModelNumber":"dellemc-powerstore","SerialNumber":"883YCJ3","UsedBytes":620130304,"MaximumLBA":6291456,"PhysicalSize":3221225472,"SectorSize":512}}"#
        )
    };
    format!(r#"{{"Devices":[{},{},{}]}}"#, dev("/dev/nvme0n1"), dev("/dev/nvme2n1"), dev("/dev/nvme5n1"))
}

#[test]
fn an_ambiguous_listing_is_reported_as_ambiguous_not_as_missing() {
    // nvme-subsys0 (our NQN here) has controllers nvme2 and nvme3; nvme0n1 fits as "subsystem 0"
    // (native multipath), nvme2n1 as "controller 2"; nvme5n1 fits neither, so neither reading
    // can be ruled out.
    let subsys = fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json");
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok("[]"))
        .answer("nvme list-subsys", Canned::ok(subsys))
        .answer("nvme list -o json", Canned::ok(flat_list()));
    let o = run_plan(&[nvme_tcp("remote", OTHER_NQN, None)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("cannot tell which block device"), "{e}");
    assert!(e.contains("/dev/nvme0n1 and /dev/nvme2n1"), "{e}");
    assert!(e.contains("refusing to guess"), "{e}");
    assert!(!e.contains("did not appear"), "{e}");
}

#[test]
fn sysfs_settles_an_ambiguous_listing() {
    let subsys = fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json");
    let mut f = fake_machine();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok("[]"))
        .answer("nvme list-subsys", Canned::ok(subsys))
        .answer("nvme list -o json", Canned::ok(flat_list()))
        .file("/sys/class/block/nvme2n1/device/subsysnqn", format!("{OTHER_NQN}\n"))
        .file("/sys/class/block/nvme0n1/device/subsysnqn", "nqn.2014-08.org.example:someone-else\n")
        .answer("nvme list-ns", Canned::ok("[   0]:0x1\n"))
        .block_device("/dev/nvme2n1", 259, 7)
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")));
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme2n1", &mp));
    let o = run_plan(&[nvme_tcp("remote", OTHER_NQN, None)], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.device("remote").unwrap().block_device, std::path::Path::new("/dev/nvme2n1"));
    // Settled by sysfs, then the same checks as a device found outright: without nsid, the
    // controller confirmed it has one namespace, and udev settled.
    let commands = f.commands();
    let at = |c: &str| commands.iter().position(|x| x.starts_with(c)).unwrap_or_else(|| panic!("{c}: {commands:#?}"));
    assert!(at("nvme list-ns /dev/nvme") < at("udevadm settle") && at("udevadm settle") < at("blkid -p"));
    // A controller that cannot say is a refusal, not a guess.
    let mut f = FakeSystem::new();
    f.answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok("[]"))
        .answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")))
        .answer("nvme list -o json", Canned::ok(flat_list()))
        .file("/sys/class/block/nvme2n1/device/subsysnqn", format!("{OTHER_NQN}\n"))
        .answer("nvme list-ns", Canned::fail(1, "NVMe status: Invalid Field in Command\n"))
        .block_device("/dev/nvme2n1", 259, 7);
    let o = run_plan(&[nvme_tcp("remote", OTHER_NQN, None)], &fake_ctx(), &mut f);
    assert!(matches!(refusal(&o), Refusal::NsidUnconfirmed { .. }), "{:?}", o.result.err());
    nothing_written(&f);
}

#[test]
fn dry_run_of_an_nvme_tcp_file_shows_the_version_check_the_host_pair_and_the_secret_file() {
    set_env();
    let plan = tiers::build_plan(&[nvme_tcp("remote", NQN, Some(SECRET_ENV))], &fake_ctx());
    let text = plan.to_string();
    println!("{text}");
    let order = [
        "require: blkid (util-linux / mount), mkfs.xfs (xfsprogs), mount (util-linux / mount), nvme (nvme-cli)",
        "check nvme version: nvme-cli and libnvme versions (the connect below depends on them; a DH-HMAC-CHAP secret needs nvme-cli 2.0 or later)",
        &format!("check the host NQN and host ID come together (host_nqn {HOST_NQN}, host_id {HOST_ID})"),
        &format!("check nvme list-subsys -o json: subsystem {NQN} is not connected yet"),
        &connect_line(&format!(" --config {CONFIG}")),
        &format!(
            "# {CONFIG} (mode 0600, removed right after) holds the host's DH-HMAC-CHAP key <secret from ${SECRET_ENV}> as libnvme's dhchap_key"
        ),
        &format!("nvme-cli 2.11 and later: nvme connect --config {CONFIG} --output-format json"),
        "teardown disconnects the controller this connect creates",
        &format!(
            "the only namespace of subsystem {NQN} (refused if it has more: the file names none) -> <remote>; udevadm settle"
        ),
        "check <remote> is a block device",
        "check <remote> is not mounted",
        "---- nothing above writes to any device (nvme connect only attaches the remote subsystem",
        "mkfs.xfs -L remote <remote>",
        "mount -t xfs -o noatime <remote>",
        "Teardown",
        "umount /run/pgtier-fake/work/mnt/remote",
        "rm -r /run/pgtier-fake/work",
        &format!(
            "nvme disconnect -d <the controller this connect created> (subsystem {NQN}; only if every filesystem on it was unmounted)"
        ),
    ];
    let mut at = 0;
    for o in order {
        let found = text[at..].find(o).unwrap_or_else(|| panic!("{o:?} missing or out of order in:\n{text}"));
        at += found + o.len();
    }
    assert!(!text.contains(SECRET));
    assert!(!text.contains("--dhchap-secret"), "the secret never goes on the command line");
}
