//! Devices served by a storage target host: the nvmet export's configfs steps against the
//! kernel's layout (drivers/nvme/target/configfs.c: a subsystem's `attr_allow_any_host`,
//! `allowed_hosts/` and `namespaces/<nsid>/{device_path,enable}`; a port's `addr_trtype`,
//! `addr_adrfam`, `addr_traddr`, `addr_trsvcid` and `subsystems/` links), the nbdkit stand-in
//! started there, and the exported device's checks made there over ssh by a local device's rules.

mod common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use common::*;
use journal::remote::RemoteOp;
use tiers::plan::{Action, Check, HostStep, Plan, Step};
use tiers::spec::{DeviceClass, NvmeTcpTarget, RealDevice, RemoteShell, TargetHost};
use tiers::system::{Canned, FakeSystem};
use tiers::{DeviceSpec, ProvisionError, build_plan, execute};

const NQN: &str = "nqn.2026-12.io.pgtier:storage:remote";
/// The `device_uuid` of device "remote"'s namespace in run "fake01" (`namespace_uuid`).
const UUID: &str = "37383918-ebca-4264-b595-3ce7f4a7e15f";
/// This machine's host NQN in /etc/nvme/hostnqn (the fake's).
const MACHINE_NQN: &str = "nqn.2014-08.org.nvmexpress:uuid:f602dd3c-7dfc-4737-90da-e1f102a647b4";

fn shell() -> RemoteShell {
    RemoteShell {
        host: "storage".into(),
        options: vec!["-F".into(), "none".into()],
        destination: "root@192.0.2.7".into(),
        work_dir: "/tmp/pgtier-fake01-t".into(),
    }
}

/// The mark of configfs item `path` for the run on the host: under /run/pgtier, where only root
/// can write, never beside the run's directory in /tmp.
fn mark(path: &str) -> String {
    format!("/run/pgtier/pgtier-fake01-t.marks/made{}", path.replace('/', "%"))
}

/// The words of the export step that makes directory `path` (and its mark).
fn mkdir_words(path: &str) -> Vec<String> {
    ["sh", "-c", tiers::build::target::MKDIR_MARKED, "sh", path, &mark(path)].map(String::from).to_vec()
}

/// The words of the export step that links `to` at `at` (and its mark).
fn link_words(to: &str, at: &str) -> Vec<String> {
    ["sh", "-c", tiers::build::target::LINK_MARKED, "sh", to, at, &mark(at)].map(String::from).to_vec()
}

fn served(host_nqn: Option<&str>) -> DeviceSpec {
    let target = NvmeTcpTarget {
        address: "192.0.2.7".into(),
        port: 4420,
        nqn: NQN.into(),
        host_nqn: host_nqn.map(str::to_string),
        host_id: host_nqn.map(|_| "4c4c4544-0031-3910-8034-b4c04f4a3332".to_string()),
        dhchap_secret: None,
        nsid: None,
        uuid: None,
    };
    let mut d = DeviceSpec::new("remote", DeviceClass::NvmeTcp, RealDevice::NvmeTcp(target));
    d.target_host = Some(TargetHost {
        name: "storage".into(),
        address: "192.0.2.7".into(),
        export: "/dev/disk/by-id/nvme-target-ssd".into(),
        allow_any_host: false,
        export_model: None,
        export_serial: None,
        shell: Some(shell()),
    });
    d
}

/// The steps on the host: (kind, words, undo).
fn host_steps(plan: &Plan) -> Vec<(HostStep, Vec<String>, Option<RemoteOp>)> {
    plan.steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::OnHost { words, undo, kind, .. } => Some((*kind, words.clone(), undo.clone())),
            _ => None,
        })
        .collect()
}

/// A configfs write as (path, value), from `sh -c 'printf %s "$2" > "$1"' sh PATH VALUE`.
fn write_of(words: &[String]) -> Option<(String, String)> {
    (words.len() == 6 && words[0] == "sh" && words[2].contains("printf %s"))
        .then(|| (words[4].clone(), words[5].clone()))
}

#[test]
fn nvmet_exports_the_device_as_the_kernels_configfs_lays_it_out() {
    let plan = build_plan(&[served(None)], &fake_ctx());
    let all = host_steps(&plan);
    // Read first there: the modules, and what nvmet already has in the way.
    let checks: Vec<&Vec<String>> = all.iter().filter(|(k, _, _)| *k == HostStep::Check).map(|(_, w, _)| w).collect();
    assert_eq!(checks[0], &["modprobe", "-n", "-a", "nvmet", "nvmet-tcp"]);
    assert_eq!(checks[1][2], tiers::build::target::NVMET_CONFLICTS);
    assert_eq!(
        &checks[1][3..],
        ["sh", "/sys/kernel/config/nvmet", "192.0.2.7", "4420", tiers::build::target::THIS_HOST_NQN]
    );
    let steps: Vec<_> = all.into_iter().filter(|(k, _, _)| *k != HostStep::Check).collect();
    assert!(steps.iter().all(|(k, _, _)| *k == HostStep::Export), "exporting writes no device");
    let sub = format!("/sys/kernel/config/nvmet/subsystems/{NQN}");
    let port = format!("/sys/kernel/config/nvmet/ports/{}", tiers::build::target::nvmet_port_id("fake01", 0));
    // Without host_nqn, this machine's own host NQN (from /etc/nvme/hostnqn when the step runs)
    // is the one host admitted.
    let host = format!("/sys/kernel/config/nvmet/hosts/{}", tiers::build::target::THIS_HOST_NQN);
    let mkdirs: Vec<&str> = steps
        .iter()
        .filter_map(|(_, w, _)| {
            tiers::build::target::made_item(w).filter(|_| w[2] == tiers::build::target::MKDIR_MARKED)
        })
        .collect();
    assert_eq!(mkdirs, [sub.clone(), host.clone(), format!("{sub}/namespaces/1"), port.clone()]);
    let writes: Vec<(String, String)> = steps.iter().filter_map(|(_, w, _)| write_of(w)).collect();
    let want: Vec<(String, String)> = [
        (format!("{sub}/attr_allow_any_host"), "0"),
        (format!("{sub}/namespaces/1/device_uuid"), UUID),
        (format!("{sub}/namespaces/1/device_path"), "/dev/disk/by-id/nvme-target-ssd"),
        (format!("{sub}/namespaces/1/enable"), "1"),
        (format!("{port}/addr_trtype"), "tcp"),
        (format!("{port}/addr_adrfam"), "ipv4"),
        (format!("{port}/addr_traddr"), "192.0.2.7"),
        (format!("{port}/addr_trsvcid"), "4420"),
    ]
    .into_iter()
    .map(|(p, v)| (p, v.to_string()))
    .collect();
    assert_eq!(writes, want);
    let (_, link, undo) = steps.last().unwrap();
    let at = format!("{port}/subsystems/{NQN}");
    assert_eq!(link, &link_words(&sub, &at));
    assert_eq!(undo, &Some(RemoteOp::Unlink { path: at.clone(), mark: Some(mark(&at)) }));
    // Teardown in reverse: the link, the port, the namespace, the subsystem.
    let undos: Vec<String> = steps.iter().rev().filter_map(|(_, _, u)| u.as_ref().map(|u| u.describe())).collect();
    assert_eq!(
        undos,
        [
            format!("rm {port}/subsystems/{NQN} (if this run made it)"),
            format!("rmdir {port} (if this run made it)"),
            format!("rmdir {sub}/namespaces/1 (if this run made it)"),
            format!("rm {sub}/allowed_hosts/{} (if this run made it)", tiers::build::target::THIS_HOST_NQN),
            format!("rmdir {host} (if this run made it)"),
            format!("rmdir {sub} (if this run made it)"),
        ]
    );
    // The export's checks on the host come first; this machine then connects to the host's
    // address as to any NVMe/TCP subsystem, and checks the namespace before anything writes.
    let pos = |f: &dyn Fn(&Action) -> bool| plan.steps.iter().position(|s| f(&s.action)).unwrap();
    let check = pos(&|a| matches!(a, Action::HostDeviceCheck { .. }));
    let first_export = pos(&|a| matches!(a, Action::OnHost { .. }));
    let connect =
        pos(&|a| matches!(a, Action::NvmeConnect { target, .. } if target.address == "192.0.2.7" && target.nqn == NQN));
    assert!(check < first_export && first_export < connect, "{plan}");
    assert!(plan.first_destructive_step().unwrap() > connect, "{plan}");
    // End to end: the namespace found after the connect must carry the export's UUID, checked
    // before anything writes to it.
    let uuid_check = pos(&|a| matches!(a, Action::Check(Check::NvmeNamespaceUuid { uuid, .. }) if uuid == UUID));
    assert!(connect < uuid_check && uuid_check < plan.first_destructive_step().unwrap(), "{plan}");
    assert!(plan.to_string().contains(&format!("check /sys/block/<remote>/wwid is uuid.{UUID}")), "{plan}");
}

#[test]
fn the_namespace_uuid_is_a_version_4_uuid_of_its_run_device_and_subsystem() {
    use tiers::build::target::namespace_uuid;
    let u = namespace_uuid("fake01", "remote", NQN);
    assert_eq!(u, UUID);
    let parts: Vec<&str> = u.split('-').collect();
    assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{u}");
    assert!(u.chars().all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{u}");
    assert!(parts[2].starts_with('4') && "89ab".contains(&parts[3][..1]), "version 4, variant 10xx: {u}");
    for other in [
        namespace_uuid("fake02", "remote", NQN),
        namespace_uuid("fake01", "wal", NQN),
        namespace_uuid("fake01", "remote", "nqn.x"),
    ] {
        assert_ne!(other, u);
    }
}

#[test]
fn a_host_nqn_admits_that_host_alone() {
    let host_nqn = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3910-8034-b4c04f4a3332";
    let plan = build_plan(&[served(Some(host_nqn))], &fake_ctx());
    let steps = host_steps(&plan);
    let sub = format!("/sys/kernel/config/nvmet/subsystems/{NQN}");
    let host = format!("/sys/kernel/config/nvmet/hosts/{host_nqn}");
    let writes: Vec<(String, String)> = steps.iter().filter_map(|(_, w, _)| write_of(w)).collect();
    assert_eq!(writes[0], (format!("{sub}/attr_allow_any_host"), "0".to_string()));
    assert!(steps.iter().any(|(_, w, u)| *w == mkdir_words(&host)
        && u == &Some(RemoteOp::Rmdir { path: host.clone(), mark: Some(mark(&host)) })));
    let link = link_words(&host, &format!("{sub}/allowed_hosts/{host_nqn}"));
    assert!(steps.iter().any(|(_, w, _)| *w == link), "{plan}");
}

#[test]
fn the_stand_in_runs_nbdkit_on_the_host_with_its_undo_first() {
    let mut ctx = fake_ctx();
    ctx.emulate = true;
    let plan = build_plan(&[served(None)], &ctx);
    assert!(!plan.steps.iter().any(|s| matches!(s.action, Action::CreateNetns { .. } | Action::StartDaemon { .. })));
    let steps = host_steps(&plan);
    assert_eq!((steps[0].0, steps[0].1.join(" ")), (HostStep::Check, "nbdkit --version".to_string()));
    assert_eq!(steps[1].1, ["truncate", "-s", "536870912", "--", "/tmp/pgtier-fake01-t/remote.img"]);
    let (kind, nbdkit, undo) = &steps[2];
    assert_eq!(*kind, HostStep::Change);
    let at = nbdkit.iter().position(|w| w == "nbdkit").unwrap();
    assert_eq!(
        nbdkit[at..].join(" "),
        "nbdkit --pidfile /tmp/pgtier-fake01-t/nbdkit-remote.pid --ipaddr 192.0.2.7 --port 10809 file /tmp/pgtier-fake01-t/remote.img"
    );
    assert_eq!(
        undo,
        &Some(RemoteOp::StopProcess {
            program: "nbdkit".into(),
            pidfile: "/tmp/pgtier-fake01-t/nbdkit-remote.pid".into()
        })
    );
    let fuse = plan.steps.iter().find_map(|s| match &s.action {
        Action::StartFuse { command, .. } => Some(command.to_string()),
        _ => None,
    });
    assert!(fuse.unwrap().ends_with(" nbd://192.0.2.7:10809"));
}

/// `ssh <options> <destination> -- <words>` as the fake machine sees the line (stat prints
/// major and minor in hex: `8 10` is 8:16).
fn on_host<S: AsRef<str>>(words: &[S]) -> String {
    let w: Vec<String> = words.iter().map(|s| s.as_ref().to_string()).collect();
    journal::command::ssh_command(&shell().options, &shell().destination, &w).to_string()
}

#[test]
fn a_mounted_export_is_refused_on_the_host() {
    let d = served(None);
    let mut f = FakeSystem::new();
    f.answer(&on_host(&["readlink", "-e", "--", "/dev/disk/by-id/nvme-target-ssd"]), Canned::ok("/dev/sdb\n"))
        .answer(&on_host(&["readlink", "-e", "--", "/dev/sdb"]), Canned::ok("/dev/sdb\n"))
        .answer(&on_host(&["stat", "-L", "-c", "%F %t %T", "--", "/dev/sdb"]), Canned::ok("block special file 8 10\n"))
        .answer(
            &on_host(&["cat", "--", "/proc/self/mountinfo"]),
            Canned::ok("29 1 8:16 / /srv/data rw,relatime shared:1 - xfs /dev/sdb rw,attr2\n"),
        );
    let step = Step {
        device: Some("remote".into()),
        action: Action::HostDeviceCheck {
            host: "storage".into(),
            device: PathBuf::from("/dev/disk/by-id/nvme-target-ssd"),
            allow_wipe: false,
        },
        reason: "test".into(),
    };
    let plan = Plan { steps: vec![step], ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "fake", "test").unwrap();
    let r = execute(&plan, &[d], &mut f, &journal, &AtomicBool::new(false), &mut |_| {});
    let Err(ProvisionError::Refused { what, refusal, .. }) = r else { panic!("refused: {r:?}") };
    assert!(what.starts_with("[on host storage] check /dev/disk/by-id/nvme-target-ssd"), "{what}");
    assert!(refusal.to_string().contains("/srv/data"), "{refusal}");
    assert!(f.commands().iter().all(|c| c.starts_with("ssh -F none root@192.0.2.7 -- ")), "{:?}", f.commands());
}

/// Only the plan's steps on the host (no check, no connect), executed on `f`; the journal's
/// text and the outcome.
fn run_host_steps(d: &DeviceSpec, f: &mut FakeSystem) -> (Result<tiers::Provisioned, ProvisionError>, String) {
    let mut plan = build_plan(std::slice::from_ref(d), &fake_ctx());
    plan.steps.retain(|s| matches!(s.action, Action::OnHost { .. }));
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "fake", "test").unwrap();
    let r = execute(&plan, std::slice::from_ref(d), f, &journal, &AtomicBool::new(false), &mut |_| {});
    let text = std::fs::read_to_string(journal.path()).unwrap();
    (r, text)
}

/// The configfs paths teardown would remove (pending `rmdir`/`rm` undos), newest first.
fn pending_removals(journal_text: &str) -> Vec<String> {
    let lines: Vec<serde_json::Value> = journal_text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let released: Vec<&serde_json::Value> = lines.iter().filter(|l| l["op"] == "released").map(|l| &l["seq"]).collect();
    lines
        .iter()
        .rev()
        .filter(|l| l["op"] == "record" && !released.contains(&&l["seq"]))
        .filter_map(|l| l["undo"]["op"]["path"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_configfs_item_of_another_owner_in_the_way_is_never_removed() {
    // mkdir(2) on an existing configfs item fails with EEXIST (coreutils' message), and made
    // nothing: its undo must not stay in the run record, or teardown removes the other
    // owner's subsystem, hosts/ entry (its DH-HMAC-CHAP keys with it) or port.
    let host_nqn = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3910-8034-b4c04f4a3332";
    let d = served(Some(host_nqn));
    let nvmet = "/sys/kernel/config/nvmet";
    let sub = format!("{nvmet}/subsystems/{NQN}");
    let port = format!("{nvmet}/ports/{}", tiers::build::target::nvmet_port_id("fake01", 0));
    let host = format!("{nvmet}/hosts/{host_nqn}");
    for (taken, ours_before) in [
        (sub.clone(), vec![]),
        (host.clone(), vec![sub.clone()]),
        (
            port.clone(),
            vec![format!("{sub}/namespaces/1"), format!("{sub}/allowed_hosts/{host_nqn}"), host.clone(), sub.clone()],
        ),
    ] {
        let mut f = FakeSystem::new();
        let stderr = format!("mkdir: cannot create directory '{taken}': File exists\n");
        f.answer(&on_host(&mkdir_words(&taken)), Canned::fail(1, stderr));
        let (r, journal) = run_host_steps(&d, &mut f);
        let Err(ProvisionError::Step { cause, .. }) = r else { panic!("{taken}: the mkdir fails the run: {r:?}") };
        assert_eq!(pending_removals(&journal), ours_before, "{taken}: teardown removes only what the run made");
        assert!(cause.contains("File exists") && cause.contains("never takes over another's"), "{cause}");
    }
    // When ssh itself failed (255), the mkdir may have run there: its undo stays.
    let mut f = FakeSystem::new();
    f.answer(&on_host(&mkdir_words(&sub)), Canned::fail(255, "ssh: connect to host 192.0.2.7: Connection reset\n"));
    let (r, journal) = run_host_steps(&d, &mut f);
    assert!(r.is_err());
    assert_eq!(pending_removals(&journal), [sub]);
}

/// An item made whose mark could not be written there (`/run` full, say: the script's status 3)
/// is this run's: its undo stays, as one that removes it without looking for a mark; and a
/// mark's name never passes 255 bytes, however long the NQNs in the item's path.
#[test]
fn an_item_made_but_not_marked_keeps_its_undo_and_long_marks_are_hashed() {
    let d = served(Some("nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3910-8034-b4c04f4a3332"));
    let sub = format!("/sys/kernel/config/nvmet/subsystems/{NQN}");
    let mut f = FakeSystem::new();
    f.answer(&on_host(&mkdir_words(&sub)), Canned::fail(3, ": > '/run/pgtier/...': No space left on device\n"));
    let (r, journal) = run_host_steps(&d, &mut f);
    let Err(ProvisionError::Step { cause, .. }) = r else { panic!("the run stops: {r:?}") };
    assert!(cause.contains("its mark could not be written"), "{cause}");
    assert_eq!(pending_removals(&journal), std::slice::from_ref(&sub), "teardown removes what the run made");
    let lines: Vec<serde_json::Value> = journal.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let released: Vec<&serde_json::Value> = lines.iter().filter(|l| l["op"] == "released").map(|l| &l["seq"]).collect();
    let pending: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["op"] == "record" && !released.contains(&&l["seq"])).collect();
    assert!(
        pending.iter().any(|l| l["undo"]["op"]["path"] == sub.as_str() && l["undo"]["op"]["mark"].is_null()),
        "{journal}"
    );
    // A 223-byte subsystem NQN (the longest the specification allows) and an allowed host's link.
    let long = format!("nqn.2014-08.org.example:{}", "x".repeat(223 - 24));
    let mut d = served(Some("nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3910-8034-b4c04f4a3332"));
    if let RealDevice::NvmeTcp(t) = &mut d.real {
        t.nqn = long.clone();
    }
    let plan = build_plan(&[d], &fake_ctx());
    let marks: Vec<String> = host_steps(&plan)
        .iter()
        .filter_map(|(_, w, _)| tiers::build::target::made_item(w).map(|_| w.last().unwrap().clone()))
        .collect();
    assert!(marks.len() >= 4, "{marks:?}");
    for m in &marks {
        let name = m.rsplit('/').next().unwrap();
        assert!(name.len() <= 255, "{} bytes: {name}", name.len());
    }
    let mut unique = marks.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), marks.len(), "one mark per item: {marks:?}");
}

/// The journal records `seq` holds, and those they hold, and so on.
fn held_by(recs: &[serde_json::Value], seq: &serde_json::Value) -> Vec<u64> {
    let mut out = Vec::new();
    let mut todo = vec![seq.as_u64().unwrap()];
    while let Some(s) = todo.pop() {
        let r = recs.iter().find(|r| r["op"] == "record" && r["seq"] == s).unwrap();
        for h in r["holds"].as_array().cloned().unwrap_or_default() {
            let h = h.as_u64().unwrap();
            if !out.contains(&h) {
                out.push(h);
                todo.push(h);
            }
        }
    }
    out
}

#[test]
fn the_mount_holds_the_targets_export_under_it() {
    // The guest's target (vm/*.tcp.json: subsystem pgt-capture, namespace 1 on nvme6). A
    // filesystem that cannot be unmounted keeps its connection, and the connection keeps the
    // port link, the namespace and the subsystem on the target host: teardown unexports
    // nothing under a mounted filesystem (journal::Journal::teardown skips what a failed undo
    // holds).
    let mut d = served(None);
    if let RealDevice::NvmeTcp(t) = &mut d.real {
        t.nqn = "pgt-capture".into();
    }
    let mut f = common::fake_machine();
    f.answer(&on_host(&["readlink", "-e", "--", "/dev/disk/by-id/nvme-target-ssd"]), Canned::ok("/dev/sdb\n"))
        .answer(&on_host(&["stat", "-L", "-c", "%F %t %T", "--", "/dev/sdb"]), Canned::ok("block special file 8 10\n"))
        .answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.pcie.json")))
        .answer("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.tcp.json")))
        .answer("nvme connect", Canned::ok(fixture("vm/nvme-connect-o-json.tcp.json")))
        .answer("nvme list -o json", Canned::ok(fixture("vm/nvme-list-o-json.tcp.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme6n1", 259, 10)
        .block_device("/dev/nvme6n2", 259, 11)
        // The namespace pgtier made there (NSID 1) carries the export's UUID.
        .file(
            "/sys/class/block/nvme6n1/wwid",
            format!("uuid.{}\n", tiers::build::target::namespace_uuid("fake01", "remote", "pgt-capture")),
        )
        .file("/etc/nvme/hostnqn", format!("{MACHINE_NQN}\n"));
    let mp = mountpoint("remote");
    let line = |dev| mounts_line_from("local/proc-mounts.xfs-default.txt", dev, &mp);
    mount_adds(&mut f, &format!("{}\n{}", line("/dev/nvme6n1"), line("/dev/nvme6n2")));
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}\n{:?}", f.commands()));
    let recs: Vec<serde_json::Value> = o.journal_text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let remote: Vec<u64> =
        recs.iter().filter(|r| r["undo"]["kind"] == "remote").map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(remote.len(), 6, "subsystem, allowed host, namespace, port, links: {}", o.journal_text);
    let mount = recs.iter().find(|r| r["undo"]["kind"] == "unmount").unwrap();
    let under_mount = held_by(&recs, &mount["seq"]);
    assert!(
        remote.iter().all(|s| under_mount.contains(s)),
        "the mount holds {under_mount:?}, the export is {remote:?}"
    );
    let ctrl = recs.iter().find(|r| r["undo"]["controller"] == "nvme6").unwrap();
    let under_ctrl = held_by(&recs, &ctrl["seq"]);
    assert!(remote.iter().all(|s| under_ctrl.contains(s)), "the connection holds the export too: {under_ctrl:?}");
}

#[test]
fn the_export_admits_this_machines_host_nqn_unless_any_host_is_asked_for() {
    // Executed: the hosts/ entry and the allowed_hosts link carry /etc/nvme/hostnqn's NQN, in
    // the commands and in their undos.
    let mut f = FakeSystem::new();
    f.file("/etc/nvme/hostnqn", format!("{MACHINE_NQN}\n"));
    let (r, journal) = run_host_steps(&served(None), &mut f);
    r.unwrap_or_else(|e| panic!("{e}"));
    let sub = format!("/sys/kernel/config/nvmet/subsystems/{NQN}");
    let host = format!("/sys/kernel/config/nvmet/hosts/{MACHINE_NQN}");
    assert!(f.commands().contains(&on_host(&mkdir_words(&host))), "{:?}", f.commands());
    let link = format!("{sub}/allowed_hosts/{MACHINE_NQN}");
    assert!(f.commands().contains(&on_host(&link_words(&host, &link))), "{:?}", f.commands());
    let removals = pending_removals(&journal);
    assert!(removals.contains(&host) && removals.contains(&link), "{removals:?}");
    assert!(!journal.contains("<host NQN of"), "{journal}");
    // Without /etc/nvme/hostnqn the step says what to give.
    let (r, _) = run_host_steps(&served(None), &mut FakeSystem::new());
    let Err(ProvisionError::Step { cause, .. }) = r else { panic!("{r:?}") };
    assert!(cause.contains("/etc/nvme/hostnqn") && cause.contains("host_nqn"), "{cause}");
    // allow_any_host, asked for by name: any host, no hosts/ entry.
    let mut d = served(None);
    d.target_host.as_mut().unwrap().allow_any_host = true;
    let plan = build_plan(&[d], &fake_ctx());
    let steps = host_steps(&plan);
    let writes: Vec<(String, String)> = steps.iter().filter_map(|(_, w, _)| write_of(w)).collect();
    assert_eq!(writes[0], (format!("{sub}/attr_allow_any_host"), "1".to_string()));
    assert!(!steps.iter().any(|(k, w, _)| *k == HostStep::Export && w.iter().any(|w| w.contains("/hosts/"))), "{plan}");
    let conflicts =
        steps.iter().find(|(_, w, _)| w.get(2).map(String::as_str) == Some(tiers::build::target::NVMET_CONFLICTS));
    assert_eq!(conflicts.unwrap().1.len(), 7, "no host NQN to look for when any host is admitted");
    assert!(plan.to_string().contains("allow_any_host = true in the experiment file"), "{plan}");
}

/// The beginning of the ssh line that runs `sh -c '<script starting with start>...'` there.
fn script_prefix(start: &str) -> String {
    let full = on_host(&["sh", "-c", &format!("{start}\u{1}")]);
    full[..full.find('\u{1}').unwrap()].to_string()
}

#[test]
fn a_busy_or_already_exported_device_is_refused_on_the_host() {
    // The O_EXCL open is made there (perl's sysopen; 3 = EBUSY: a ZFS pool member, a device
    // mounted in another mount namespace); nvmet opens its device without claiming it, so its
    // namespaces' device_path are read too.
    let check_with = |answers: &[(&str, Canned)]| {
        let mut f = FakeSystem::new();
        f.answer(&on_host(&["readlink", "-e", "--", "/dev/disk/by-id/nvme-target-ssd"]), Canned::ok("/dev/sdb\n"))
            .answer(&on_host(&["readlink", "-e", "--", "/dev/sdb"]), Canned::ok("/dev/sdb\n"))
            .answer(
                &on_host(&["stat", "-L", "-c", "%F %t %T", "--", "/dev/sdb"]),
                Canned::ok("block special file 8 10\n"),
            );
        for (prefix, answer) in answers {
            f.answer(prefix, answer.clone());
        }
        let step = Step {
            device: Some("remote".into()),
            action: Action::HostDeviceCheck {
                host: "storage".into(),
                device: PathBuf::from("/dev/disk/by-id/nvme-target-ssd"),
                allow_wipe: false,
            },
            reason: "test".into(),
        };
        let plan = Plan { steps: vec![step], ..Default::default() };
        let dir = tempfile::tempdir().unwrap();
        let journal = journal::Journal::begin(dir.path(), "fake", "test").unwrap();
        let r = execute(&plan, &[served(None)], &mut f, &journal, &AtomicBool::new(false), &mut |_| {});
        (r.map(|_| ()), f.commands())
    };
    // Answers to `sh -c '<script>'` there, by the script's start.
    let check = |answers: &[(&str, Canned)]| {
        let prefixes: Vec<(String, Canned)> = answers.iter().map(|(s, a)| (script_prefix(s), a.clone())).collect();
        let refs: Vec<(&str, Canned)> = prefixes.iter().map(|(p, a)| (p.as_str(), a.clone())).collect();
        check_with(&refs)
    };
    let (r, commands) = check(&[("command -v perl", Canned::fail(3, "Device or resource busy\n"))]);
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("busy is refused: {r:?} {commands:?}") };
    assert!(refusal.to_string().contains("/dev/sdb is busy"), "{refusal}");
    let exported = "/sys/kernel/config/nvmet/subsystems/nqn.2014-08.org.example:other/namespaces/1/device_path";
    let (r, commands) = check(&[("dev=$1; nvmet=", Canned::ok(format!("{exported}\n")))]);
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("exported is refused: {r:?} {commands:?}") };
    assert!(refusal.to_string().contains(&format!("/dev/sdb is served by the kernel ({exported})")), "{refusal}");
    // A process there that has the disk open: found by the scan of /proc run there (perl).
    let scan = on_host(&["perl", "-e", tiers::users::OPENERS, "--", "8:16"]);
    let (r, commands) = check(&[]);
    assert!(commands.contains(&scan), "the scan runs there: {commands:?}");
    assert!(r.is_ok(), "{r:?}");
    let opened = "3100\ttgtd\t8:16\topen read-write (fd 12, /dev/sdb)\n";
    let (r, _) = check_with(&[(&scan, Canned::ok(opened))]);
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("open is refused: {r:?}") };
    assert!(
        refusal.to_string().contains("/dev/sdb is in use by another program: PID 3100 (tgtd) has it open read-write"),
        "{refusal}"
    );
    // A lock there (flock(1) exits 3 once its wait is over).
    let flock = on_host(&["flock", "--exclusive", "--wait", "3", "--conflict-exit-code", "3", "/dev/sdb", "true"]);
    let (r, _) = check_with(&[(&flock, Canned::fail(3, ""))]);
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("locked is refused: {r:?}") };
    assert!(refusal.to_string().contains("/dev/sdb is locked"), "{refusal}");
    // Without perl there, the check fails rather than passes.
    let (r, _) = check(&[("command -v perl", Canned::fail(4, "perl is not installed (it makes the O_EXCL open)\n"))]);
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("{r:?}") };
    assert!(refusal.to_string().contains("could not be checked") && refusal.to_string().contains("perl"), "{refusal}");
    let (r, commands) = check(&[]);
    assert!(r.is_ok(), "{r:?} {commands:?}");
}

#[test]
fn two_devices_on_one_target_host_share_its_port_as_nvmetcli_lays_it_out() {
    // A second port on the same address and trsvcid could not listen (EADDRINUSE): one port,
    // both subsystems linked into it; one hosts/ entry admits this machine to both.
    let a = served(None);
    let mut b = served(None);
    b.name = "remote-wal".into();
    if let RealDevice::NvmeTcp(t) = &mut b.real {
        t.nqn = format!("{NQN}-wal");
    }
    b.target_host.as_mut().unwrap().export = "/dev/disk/by-id/nvme-target-ssd-2".into();
    let specs = [a, b];
    let plan = build_plan(&specs, &fake_ctx());
    let steps = host_steps(&plan);
    let ports: Vec<&String> = steps
        .iter()
        .filter(|(_, w, _)| {
            w.get(2).map(String::as_str) == Some(tiers::build::target::MKDIR_MARKED) && w[4].contains("/ports/")
        })
        .map(|(_, w, _)| &w[4])
        .collect();
    assert_eq!(ports.len(), 1, "one port: {plan}");
    let links: Vec<String> = steps
        .iter()
        .filter(|(_, w, _)| {
            w.get(2).map(String::as_str) == Some(tiers::build::target::LINK_MARKED)
                && w[5].starts_with(ports[0].as_str())
        })
        .map(|(_, w, _)| w[5].clone())
        .collect();
    assert_eq!(links, [format!("{}/subsystems/{NQN}", ports[0]), format!("{}/subsystems/{NQN}-wal", ports[0])]);
    let hosts = steps
        .iter()
        .filter(|(_, w, _)| {
            w.get(2).map(String::as_str) == Some(tiers::build::target::MKDIR_MARKED) && w[4].contains("/hosts/")
        })
        .count();
    assert_eq!(hosts, 1, "{plan}");
}

/// Data and WAL on two ports (two NICs) of one target host, each admitting its own host NQN:
/// every check there comes before the first item the run makes there, so the second device's
/// check never meets the first device's port or hosts/ entry and names it another
/// configuration's; two ports and two hosts/ entries are made.
#[test]
fn two_devices_on_two_ports_of_one_target_host_are_checked_before_anything_is_made() {
    let a = served(Some("nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555"));
    let mut b = served(Some("nqn.2014-08.org.nvmexpress:uuid:66666666-7777-4888-9999-aaaaaaaaaaaa"));
    b.name = "remote-wal".into();
    if let RealDevice::NvmeTcp(t) = &mut b.real {
        t.nqn = format!("{NQN}-wal");
        t.address = "198.51.100.7".into();
        t.port = 4421;
        t.host_id = Some("66666666-7777-4888-9999-aaaaaaaaaaaa".into());
    }
    b.target_host.as_mut().unwrap().export = "/dev/disk/by-id/nvme-target-ssd-2".into();
    let plan = build_plan(&[a, b], &fake_ctx());
    let steps = host_steps(&plan);
    let first_export = steps.iter().position(|(k, _, _)| *k == HostStep::Export).expect("exports");
    let last_check = steps.iter().rposition(|(k, _, _)| *k == HostStep::Check).expect("checks");
    assert!(last_check < first_export, "every check on the host before the first export:\n{plan}");
    let conflicts: Vec<&Vec<String>> = steps
        .iter()
        .filter(|(_, w, _)| w.get(2).map(String::as_str) == Some(tiers::build::target::NVMET_CONFLICTS))
        .map(|(_, w, _)| w)
        .collect();
    assert_eq!(conflicts.len(), 2, "one check per address, port and host NQN: {plan}");
    assert_eq!(conflicts[1][5..7], ["198.51.100.7".to_string(), "4421".to_string()]);
    let made = |what: &str| {
        steps
            .iter()
            .filter(|(_, w, _)| {
                w.get(2).map(String::as_str) == Some(tiers::build::target::MKDIR_MARKED) && w[4].contains(what)
            })
            .count()
    };
    assert_eq!((made("/ports/"), made("/hosts/")), (2, 2), "{plan}");
    // The device checks there (HostDeviceCheck) come first too.
    let device_checks: Vec<usize> = (plan.steps.iter().enumerate())
        .filter(|(_, s)| matches!(s.action, Action::HostDeviceCheck { .. }))
        .map(|(i, _)| i)
        .collect();
    let first_made =
        plan.steps.iter().position(|s| matches!(s.action, Action::OnHost { kind: HostStep::Export, .. })).unwrap();
    assert!(device_checks.len() == 2 && device_checks.iter().all(|&i| i < first_made), "{plan}");
}

/// Two devices exporting one disk of the host (by two names): nvmet holds neither, so no other
/// check sees it; the devices' exports are compared there by device number before anything is
/// made, and the second is refused.
#[test]
fn two_devices_exporting_one_disk_of_the_host_are_refused_before_anything_is_made() {
    let a = served(None);
    let mut b = served(None);
    b.name = "remote-wal".into();
    if let RealDevice::NvmeTcp(t) = &mut b.real {
        t.nqn = format!("{NQN}-wal");
    }
    b.target_host.as_mut().unwrap().export = "/dev/sdb".into();
    let plan = build_plan(&[a, b], &fake_ctx());
    let at = plan.steps.iter().position(|s| matches!(s.action, Action::HostDevicesDistinct { .. })).expect("planned");
    let first_made =
        plan.steps.iter().position(|s| matches!(s.action, Action::OnHost { kind: HostStep::Export, .. })).unwrap();
    assert!(at < first_made, "{plan}");
    let step = plan.steps[at].clone();
    let mut f = FakeSystem::new();
    for (path, real) in [("/dev/disk/by-id/nvme-target-ssd", "/dev/sdb"), ("/dev/sdb", "/dev/sdb")] {
        f.answer(&on_host(&["readlink", "-e", "--", path]), Canned::ok(format!("{real}\n")));
    }
    f.answer(&on_host(&["stat", "-L", "-c", "%F %t %T", "--", "/dev/sdb"]), Canned::ok("block special file 8 10\n"));
    let plan = Plan { steps: vec![step], ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "fake", "test").unwrap();
    let r = execute(&plan, &[served(None)], &mut f, &journal, &AtomicBool::new(false), &mut |_| {});
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("one disk twice is refused: {r:?}") };
    assert!(
        refusal.to_string().contains("devices remote and remote-wal name the same block device (/dev/sdb)"),
        "{refusal}"
    );
}

#[test]
fn an_unreadable_holders_directory_fails_the_check() {
    // `ls` of the holders directory failing there (here: permission denied) is no proof that
    // nothing holds the device.
    let mut f = FakeSystem::new();
    f.answer(&on_host(&["readlink", "-e", "--", "/dev/disk/by-id/nvme-target-ssd"]), Canned::ok("/dev/sdb\n"))
        .answer(&on_host(&["readlink", "-e", "--", "/dev/sdb"]), Canned::ok("/dev/sdb\n"))
        .answer(&on_host(&["stat", "-L", "-c", "%F %t %T", "--", "/dev/sdb"]), Canned::ok("block special file 8 10\n"))
        .answer(
            &on_host(&["ls", "-A", "-1", "--", "/sys/class/block/sdb/holders"]),
            Canned::fail(2, "ls: cannot open directory '/sys/class/block/sdb/holders': Permission denied\n"),
        );
    let step = Step {
        device: Some("remote".into()),
        action: Action::HostDeviceCheck {
            host: "storage".into(),
            device: PathBuf::from("/dev/disk/by-id/nvme-target-ssd"),
            allow_wipe: false,
        },
        reason: "test".into(),
    };
    let plan = Plan { steps: vec![step], ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "fake", "test").unwrap();
    let r = execute(&plan, &[served(None)], &mut f, &journal, &AtomicBool::new(false), &mut |_| {});
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("refused: {r:?}") };
    assert!(refusal.to_string().contains("holders") && refusal.to_string().contains("Permission denied"), "{refusal}");
}

/// The guest's target connected (as in the test above), with `wwid` as the namespace's.
fn connected_machine(wwid: Option<&str>) -> FakeSystem {
    let mut f = common::fake_machine();
    f.answer(&on_host(&["readlink", "-e", "--", "/dev/disk/by-id/nvme-target-ssd"]), Canned::ok("/dev/sdb\n"))
        .answer(&on_host(&["stat", "-L", "-c", "%F %t %T", "--", "/dev/sdb"]), Canned::ok("block special file 8 10\n"))
        .answer("nvme version", Canned::ok(fixture("vm/nvme-version.txt")))
        .answer_once("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.pcie.json")))
        .answer("nvme list-subsys", Canned::ok(fixture("vm/nvme-list-subsys-o-json.tcp.json")))
        .answer("nvme connect", Canned::ok(fixture("vm/nvme-connect-o-json.tcp.json")))
        .answer("nvme list -o json", Canned::ok(fixture("vm/nvme-list-o-json.tcp.json")))
        .answer("mkfs.xfs", Canned::ok(fixture("local/mkfs.xfs.default.txt")))
        .block_device("/dev/nvme6n1", 259, 10)
        .block_device("/dev/nvme6n2", 259, 11)
        .file("/etc/nvme/hostnqn", format!("{MACHINE_NQN}\n"));
    if let Some(w) = wwid {
        f.file("/sys/class/block/nvme6n2/wwid", format!("{w}\n"));
    }
    f
}

#[test]
fn another_namespace_at_the_address_is_refused_before_anything_is_written() {
    // What the kernel shows for a namespace without our UUID (vm/nvme-list-o-json.tcp.json's
    // nvme6n1 as another target would present it): its NGUID, or the nvme.<vid>-<sn>-<mn>-<nsid>
    // fallback; or no wwid at all.
    let mut d = served(None);
    if let RealDevice::NvmeTcp(t) = &mut d.real {
        t.nqn = "pgt-capture".into();
    }
    for wwid in [Some("eui.6e76c9a9ff5c4e8ea5f6ef8a2c5e0c1b"), Some("uuid.00000000-0000-4000-8000-000000000000"), None]
    {
        let mut f = connected_machine(wwid);
        let o = run_plan(std::slice::from_ref(&d), &fake_ctx(), &mut f);
        let refusal = refusal(&o);
        let text = refusal.to_string();
        assert!(matches!(refusal, tiers::safety::Refusal::WrongNamespace { .. }), "{wwid:?}: {text}");
        assert!(
            text.contains("is not the namespace pgtier exported") && text.contains("nothing was written"),
            "{text}"
        );
        assert!(!f.commands().iter().any(|c| c.starts_with("mkfs") || c.starts_with("blkid")), "{:?}", f.commands());
    }
}

#[test]
fn the_exports_model_and_serial_are_checked_on_the_host_first() {
    let mut d = served(None);
    let t = d.target_host.as_mut().unwrap();
    t.export_model = Some("SAMSUNG MZPLL1T6HAJQ-00005".into());
    t.export_serial = Some("S3HBNX0K900001".into());
    let plan = build_plan(std::slice::from_ref(&d), &fake_ctx());
    let identity = plan.steps.iter().position(|s| matches!(s.action, Action::HostDeviceIdentity { .. })).unwrap();
    let check = plan.steps.iter().position(|s| matches!(s.action, Action::HostDeviceCheck { .. })).unwrap();
    assert!(identity < check, "{plan}");
    assert!(
        plan.to_string().contains("[on host storage] check /dev/disk/by-id/nvme-target-ssd identity: model SAMSUNG MZPLL1T6HAJQ-00005, serial S3HBNX0K900001"),
        "{plan}"
    );
    // Another drive there: refused, nothing exported.
    let mut f = FakeSystem::new();
    f.answer(&on_host(&["readlink", "-e", "--", "/dev/disk/by-id/nvme-target-ssd"]), Canned::ok("/dev/nvme0n1\n"))
        .answer(
            &on_host(&["cat", "--", "/sys/class/block/nvme0n1/partition"]),
            Canned::fail(1, "cat: /sys/class/block/nvme0n1/partition: No such file or directory\n"),
        )
        .answer(&on_host(&["cat", "--", "/sys/class/block/nvme0n1/device/model"]), Canned::ok("INTEL SSDPF2KX038TZ\n"));
    let mut only = plan.clone();
    only.steps.retain(|s| matches!(s.action, Action::HostDeviceIdentity { .. } | Action::OnHost { .. }));
    let dir = tempfile::tempdir().unwrap();
    let journal = journal::Journal::begin(dir.path(), "fake", "test").unwrap();
    let r = execute(&only, std::slice::from_ref(&d), &mut f, &journal, &AtomicBool::new(false), &mut |_| {});
    let Err(ProvisionError::Refused { refusal, .. }) = r else { panic!("refused: {r:?}") };
    assert!(
        refusal.to_string().contains("model mismatch") && refusal.to_string().contains("INTEL SSDPF2KX038TZ"),
        "{refusal}"
    );
    assert!(!f.commands().iter().any(|c| c.contains("mkdir")), "nothing exported: {:?}", f.commands());
}

/// The conflicts script, run by `sh` on a tree laid out as nvmet's configfs is.
#[test]
fn nvmet_configuration_in_the_way_is_found_before_anything_is_made() {
    let root = tempfile::tempdir().unwrap();
    let c = root.path();
    let port = |id: &str, addr: &str, svc: &str| {
        let p = c.join("ports").join(id);
        std::fs::create_dir_all(&p).unwrap();
        for (f, v) in [("addr_trtype", "tcp"), ("addr_traddr", addr), ("addr_trsvcid", svc)] {
            std::fs::write(p.join(f), format!("{v}\n")).unwrap();
        }
    };
    let run = |nqn: Option<&str>| {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", tiers::build::target::NVMET_CONFLICTS, "sh"]).arg(c).args(["192.0.2.7", "4420"]);
        cmd.args(nqn);
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    const NQN_HERE: &str = "nqn.2014-08.org.nvmexpress:uuid:a66f1c42-4bce-a619-9c59-9ae6ac2ccb8a";
    // Nothing there, or nothing in the way.
    assert_eq!(run(Some(NQN_HERE)), (Some(0), String::new()));
    port("1", "192.0.2.7", "4421");
    port("2", "192.0.2.8", "4420");
    assert_eq!(run(Some(NQN_HERE)), (Some(0), String::new()));
    // A port on the same address and TCP port, and one on the wildcard address.
    port("7", "192.0.2.7", "4420");
    port("8", "0.0.0.0", "4420");
    let (code, why) = run(None);
    assert_eq!(code, Some(1), "{why}");
    assert!(
        why.contains("nvmet port 7 already listens on 192.0.2.7 port 4420") && why.contains("another `port`"),
        "{why}"
    );
    assert!(why.contains("nvmet port 8 already listens on 0.0.0.0 port 4420"), "{why}");
    std::fs::remove_dir_all(c.join("ports")).unwrap();
    // A hosts/ entry for the host NQN this run admits.
    std::fs::create_dir_all(c.join("hosts").join(NQN_HERE)).unwrap();
    let (code, why) = run(Some(NQN_HERE));
    assert_eq!(code, Some(1), "{why}");
    assert!(why.contains(&format!("nvmet already has hosts/{NQN_HERE}")) && why.contains("another host_nqn"), "{why}");
    assert_eq!(run(None).0, Some(0), "allow_any_host: no entry of its own to make");
}

#[test]
fn a_dhchap_key_reaches_nvmets_hosts_entry_from_the_run_directory_never_a_command_line() {
    let host_nqn = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3910-8034-b4c04f4a3332";
    let mut d = served(Some(host_nqn));
    if let RealDevice::NvmeTcp(t) = &mut d.real {
        t.dhchap_secret = Some(tiers::spec::SecretSource::File { path: "/etc/pgtier/key".into() });
    }
    let plan = build_plan(std::slice::from_ref(&d), &fake_ctx());
    let steps = host_steps(&plan);
    let host = format!("/sys/kernel/config/nvmet/hosts/{host_nqn}");
    // Checked first there: a kernel whose nvmet asks for keys.
    let auth =
        steps.iter().position(|(k, w, _)| *k == HostStep::Check && w[2] == tiers::build::target::NVMET_AUTH_KERNEL);
    let made = steps.iter().position(|(_, w, _)| *w == mkdir_words(&host)).expect("the hosts/ entry");
    let copy = steps
        .iter()
        .position(|(_, w, _)| {
            w.get(2).map(String::as_str) == Some(tiers::build::target::COPY_KEY)
                && w[4..] == [format!("{host}/dhchap_key"), "/tmp/pgtier-fake01-t/dhchap-key".to_string()]
        })
        .unwrap_or_else(|| panic!("the key copied into the hosts/ entry: {plan}"));
    assert!(auth.is_some_and(|a| a < made) && made < copy, "{plan}");
    // Only the paths are on the command line.
    assert!(!plan.to_string().contains("DHHC-1"), "{plan}");
    // Without a secret, no check and no copy.
    let plain = build_plan(&[served(Some(host_nqn))], &fake_ctx());
    assert!(!host_steps(&plain).iter().any(|(_, w, _)| w.iter().any(|w| w.contains("dhchap"))), "{plain}");
    // The kernel check, run here as on a host: it passes, or says why not and what to do.
    let out =
        std::process::Command::new("sh").args(["-c", tiers::build::target::NVMET_AUTH_KERNEL, "sh"]).output().unwrap();
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success()
            || ((why.contains("built without") || why.contains("cannot tell"))
                && why.contains("leave the device's dhchap_secret out")),
        "{why}"
    );
}
