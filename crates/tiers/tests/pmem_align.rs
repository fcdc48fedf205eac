//! A PMem namespace's alignment (issue 26 item 12): DAX maps a file with 2 MiB pages (PMD
//! faults) only when the fsdax namespace is aligned to 2 MiB; ndctl's `align` says what it is.
//! Run through `FakeSystem` with the guest's `ndctl list -N` (vm/ndctl-list-N.two-fsdax.json,
//! ndctl 76, align 2 MiB) and the same listing with the namespace made `--align=4k`.

mod common;

use common::*;
use tiers::DaxPolicy;
use tiers::system::{Canned, FakeSystem};

/// The guest's two fsdax namespaces, namespace0.0 (pmem0) aligned to `align` bytes.
fn listing(align: u64) -> String {
    let text = fixture("vm/ndctl-list-N.two-fsdax.json");
    let at = text.find("\"dev\":\"namespace0.0\"").unwrap();
    let (head, tail) = text.split_at(at);
    format!("{head}{}", tail.replacen("\"align\":2097152", &format!("\"align\":{align}"), 1))
}

fn machine(align: u64) -> FakeSystem {
    let mut f = fake_machine();
    f.answer("ndctl list -N", Canned::ok(listing(align)))
        .answer("mkfs.xfs", Canned::ok(fixture("vm/mkfs.xfs.pmem-su2m.txt")))
        .block_device("/dev/pmem0", 259, 0);
    f
}

#[test]
fn a_namespace_not_aligned_to_2_mib_is_refused_when_dax_is_required() {
    let mut f = machine(4096);
    let o = run_plan(&[pmem("pmem-data", "namespace0.0", false)], &fake_ctx(), &mut f);
    let e = step_error(&o);
    assert!(e.contains("namespace namespace0.0 has align 4096 (4.0 KiB") && e.contains("4 KiB pages only"), "{e}");
    assert!(e.contains("--align=2M") && e.contains("dax = \"optional\""), "{e}");
    assert_eq!(f.commands(), ["ndctl list -N -i"], "refused before anything else");
    assert!(o.plan.to_string().contains("its align a multiple of 2 MiB (huge-page DAX mappings)"), "{}", o.plan);
}

#[test]
fn with_dax_optional_it_is_measured_as_it_is_and_said_so() {
    let mut f = machine(4096);
    let mp = mountpoint("pmem-data");
    let line =
        format!("/dev/pmem0 {} xfs rw,relatime,dax=always,inode64,logbufs=8,logbsize=32k,noquota 0 0", mp.display());
    mount_adds(&mut f, &line);
    f.dax_files.push(mp.clone());
    let mut d = pmem("pmem-data", "namespace0.0", false);
    d.dax = DaxPolicy::Optional;
    let o = run_plan(&[d], &fake_ctx(), &mut f);
    o.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.notes.iter().any(|n| n.contains("has align 4096 (4.0 KiB") && n.contains("measured as it is")),
        "{:?}",
        o.notes
    );
}

#[test]
fn two_mib_and_one_gib_alignments_pass() {
    for align in [2 << 20, 1 << 30] {
        let mut f = machine(align);
        let mp = mountpoint("pmem-data");
        let line = format!(
            "/dev/pmem0 {} xfs rw,relatime,dax=always,inode64,logbufs=8,logbsize=32k,noquota 0 0",
            mp.display()
        );
        mount_adds(&mut f, &line);
        f.dax_files.push(mp.clone());
        let o = run_plan(&[pmem("pmem-data", "namespace0.0", false)], &fake_ctx(), &mut f);
        o.result.as_ref().unwrap_or_else(|e| panic!("{align}: {e}"));
        assert!(!o.notes.iter().any(|n| n.contains("align")), "{:?}", o.notes);
    }
}
