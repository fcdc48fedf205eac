//! NVMe over TCP through `FakeSystem` (this machine has no nvme-tcp driver): connect, find the
//! namespace by subsystem NQN, check, mkfs, mount; the DH-HMAC-CHAP secret reaches nvme-cli and
//! nothing else. Its own test binary: it sets environment variables, once, before any test reads
//! them.

mod common;

use std::sync::Once;

use common::*;
use tiers::safety::Refusal;
use tiers::system::{Canned, FakeSystem};

/// A secret in the DH-HMAC-CHAP key format (`DHHC-1:<hash>:<base64>:`); made up for the test.
const SECRET: &str = "DHHC-1:00:cGd0aWVyLXRlc3Qtc2VjcmV0LW5vdC1hLXJlYWwta2V5IQ==:";
const SECRET_ENV: &str = "PGTIER_TEST_DHCHAP_SECRET";
/// The subsystem of nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json.
const NQN: &str = "nqn.1988-11.com.dell:powerstore:00:42c92aa830b1FF113003";
/// The (mock) subsystem of nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json.
const OTHER_NQN: &str = "nqn.1988-11.com.dell:mock:00:1a1111a1111aAA11111A";

fn set_env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the first thing every test of this binary does, under a Once, before any
        // thread of this test process reads the environment for this variable.
        unsafe { std::env::set_var(SECRET_ENV, SECRET) };
    });
}

/// Before `nvme connect` nothing is connected (nvme-cli without any subsystem:
/// local/nvme-list-subsys-json.no-nvme-module.txt, its .rc and .stderr); afterwards
/// list-subsys shows another subsystem only, and `nvme list` (2.11 detailed shape) names ours.
fn tcp_machine() -> FakeSystem {
    tcp_machine_listing("nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json")
}

fn tcp_machine_listing(nvme_list: &str) -> FakeSystem {
    let mut f = fake_machine();
    f.answer_once(
        "nvme list-subsys",
        Canned {
            status: fixture("local/nvme-list-subsys-json.no-nvme-module.txt.rc").trim().parse().unwrap(),
            stdout: fixture("local/nvme-list-subsys-json.no-nvme-module.txt"),
            stderr: fixture("local/nvme-list-subsys-json.no-nvme-module.txt.stderr"),
        },
    )
    .answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")))
    .answer("nvme connect", Canned::ok(fixture("nvme/nvme-connect-t-tcp.v2.7plus.oracle-blog.txt")))
    .answer("nvme list -o json", Canned::ok(fixture(nvme_list)))
    .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
    .block_device("/dev/nvme0n1", 259, 3);
    f
}

fn connect_line() -> String {
    format!(
        "nvme connect --transport tcp --traddr 192.0.2.10 --trsvcid 4420 --nqn {NQN} --hostnqn nqn.2014-08.org.nvmexpress:uuid:a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a --dhchap-secret '<secret from ${SECRET_ENV}>'"
    )
}

#[test]
fn connect_resolve_mkfs_mount_and_the_secret_stays_out_of_every_record() {
    set_env();
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let specs = [nvme_tcp("remote", NQN, Some(SECRET_ENV))];
    let o = run_plan(&specs, &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        f.commands(),
        vec![
            "nvme list-subsys -o json".to_string(),
            connect_line(),
            "nvme list-subsys -o json".into(),
            "nvme list -o json".into(),
            "blkid -p -o export /dev/nvme0n1".into(),
            "wipefs -J --no-act /dev/nvme0n1".into(),
            "mkfs.xfs -L remote /dev/nvme0n1".into(),
            format!("mount -t xfs -o noatime /dev/nvme0n1 {}", mp.display()),
            format!("xfs_info {}", mp.display()),
        ]
    );
    // The secret was handed to nvme connect ...
    assert_eq!(f.delivered_secrets, vec![SECRET.to_string()]);
    // ... and appears nowhere else.
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
    // Teardown disconnects what was connected.
    assert!(
        o.journal_text.contains(&format!("{{\"kind\":\"nvme-disconnect\",\"nqn\":\"{NQN}\",\"boot_id\":")),
        "{}",
        o.journal_text
    );
    let text = o.plan.to_string();
    assert!(text.contains(&format!("  - nvme disconnect -n {NQN}")), "{text}");
    let d = p.device("remote").unwrap();
    assert_eq!(d.description, format!("NVMe/TCP subsystem {NQN} at 192.0.2.10:4420"));
}

#[test]
fn a_secret_echoed_by_nvme_cli_is_redacted_in_errors_and_records() {
    set_env();
    let mut f = tcp_machine();
    f.answer_once("nvme connect", Canned::fail(1, format!("nvme connect: invalid dhchap secret {SECRET}")));
    let o = run_plan(&[nvme_tcp("remote", NQN, Some(SECRET_ENV))], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("invalid dhchap secret <redacted>"), "{e}");
    assert!(!e.contains(SECRET));
    assert!(!format!("{:?}", o.result).contains(SECRET));
    assert!(!o.journal_text.contains(SECRET));
    // The connect is recorded before it runs, so teardown disconnects even after a failure.
    assert!(o.journal_text.contains("nvme-disconnect"));
    assert!(!f.commands().iter().any(|c| c.starts_with("mkfs")));
}

#[test]
fn a_missing_secret_variable_fails_before_connecting() {
    let mut f = tcp_machine();
    let o = run_plan(&[nvme_tcp("remote", NQN, Some("PGTIER_TEST_NO_SUCH_VARIABLE"))], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("environment variable PGTIER_TEST_NO_SUCH_VARIABLE"), "{e}");
    assert_eq!(f.commands(), vec!["nvme list-subsys -o json"]);
}

#[test]
fn a_secret_from_a_file_is_trimmed_and_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dhchap");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let mut f = tcp_machine();
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme0n1", &mp));
    let mut d = nvme_tcp("remote", NQN, None);
    if let tiers::spec::RealDevice::NvmeTcp(t) = &mut d.real {
        t.dhchap_secret = Some(tiers::spec::SecretSource::File { path: file.clone() });
    }
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.delivered_secrets, vec![SECRET.to_string()]);
    assert!(f.commands()[1].ends_with(&format!("--dhchap-secret '<secret from {}>'", file.display())));
    assert!(!f.calls.join("\n").contains(SECRET) && !o.journal_text.contains(SECRET));
}

#[test]
fn an_existing_connection_is_refused_and_nothing_is_connected() {
    let mut f = fake_machine();
    f.answer("nvme list-subsys", Canned::ok(fixture("nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json")));
    let o = run_plan(&[nvme_tcp("remote", OTHER_NQN, None)], &fake_ctx(), &mut f);
    assert_eq!(
        refusal(&o),
        Refusal::AlreadyConnected { nqn: OTHER_NQN.into(), controllers: "nvme-subsys0: nvme3, nvme2".into() }
    );
    assert_eq!(f.commands(), vec!["nvme list-subsys -o json"]);
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
    f.answer_once("nvme list-subsys", Canned::ok("[]"))
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
    f.answer_once("nvme list-subsys", Canned::ok("[]"))
        .answer("nvme list-subsys", Canned::ok(subsys))
        .answer("nvme list -o json", Canned::ok(flat_list()))
        .file("/sys/class/block/nvme2n1/device/subsysnqn", format!("{OTHER_NQN}\n"))
        .file("/sys/class/block/nvme0n1/device/subsysnqn", "nqn.2014-08.org.example:someone-else\n")
        .block_device("/dev/nvme2n1", 259, 7)
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")));
    let mp = mountpoint("remote");
    mount_adds(&mut f, &mounts_line_from("local/proc-mounts.xfs-default.txt", "/dev/nvme2n1", &mp));
    let o = run_plan(&[nvme_tcp("remote", OTHER_NQN, None)], &fake_ctx(), &mut f);
    let p = o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.device("remote").unwrap().block_device, std::path::Path::new("/dev/nvme2n1"));
}

#[test]
fn dry_run_of_an_nvme_tcp_file_connects_checks_and_says_teardown_disconnects() {
    set_env();
    let plan = tiers::build_plan(&[nvme_tcp("remote", NQN, Some(SECRET_ENV))], &fake_ctx());
    let text = plan.to_string();
    println!("{text}");
    let order = [
        "require: blkid (util-linux / mount), mkfs.xfs (xfsprogs), mount (util-linux / mount), nvme (nvme-cli)",
        &format!("check nvme list-subsys -o json: subsystem {NQN} is not connected yet"),
        &connect_line(),
        &format!("teardown runs nvme disconnect -n {NQN}"),
        &format!("namespace of subsystem {NQN} -> <remote>"),
        "check <remote> is a block device",
        "check <remote> is not mounted",
        "---- nothing above writes to any device (nvme connect only attaches the remote subsystem",
        "mkfs.xfs -L remote <remote>",
        "mount -t xfs -o noatime <remote>",
        "Teardown",
        "umount /run/pgtier-fake/work/mnt/remote",
        "rm -r /run/pgtier-fake/work",
        &format!("nvme disconnect -n {NQN}"),
    ];
    let mut at = 0;
    for o in order {
        let found = text[at..].find(o).unwrap_or_else(|| panic!("{o:?} missing or out of order in:\n{text}"));
        at += found + o.len();
    }
    assert!(!text.contains(SECRET));
}
