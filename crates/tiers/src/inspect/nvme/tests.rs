//! Tests of the nvme-cli parsers against captured outputs of nvme-cli 1.16 to 2.x.

use super::*;

const FLAT_POWERSTORE: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.pre-2.11-flat.tcp-powerstore.gonvme-test.json");
const FLAT_NETDATA: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v1-flat.pcie.netdata-testdata-labelled-v2.3.json");
const FLAT_CRUSOE: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v1-flat.redacted.crusoe-test.json");
const FLAT_NVMET: &str = include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v1.fabrics-linux-nvmet.json");
const FLAT_OVERFLOW: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2-simple.pcie.int-overflow.issue-2028.json");
const VERBOSE_MICRON: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2-verbose.pcie-micron.redacted.crusoe-test.json");
const VERBOSE_SUBSYS_NS: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2-verbose.subsys-level-ns.redacted.crusoe-test.json");
const VERBOSE_LIGHTBITS: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2-verbose.tcp-lightbits+pcie.crusoe-test.json");
const DETAILED_NETDATA: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2.11-detailed.pcie.netdata-testdata.json");
const DETAILED_POWERMAX: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2.11-detailed.tcp-powermax.gonvme-test.json");
const DETAILED_POWERSTORE: &str = include_str!(
    "../../../tests/fixtures/nvme/nvme-list-o-json.v2.11-detailed.tcp-powerstore-multipath.gonvme-test.json"
);
const SUBSYS_V1_DOC: &str = include_str!("../../../tests/fixtures/nvme/nvme-list-subsys-o-json.v1-doc.rdma.json");
const SUBSYS_V2: &str = include_str!("../../../tests/fixtures/nvme/nvme-list-subsys-o-json.v2.tcp.gonvme-test.json");
const SUBSYS_V2_DELETING: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-subsys-o-json.v2.tcp.state-deleting.gonvme-testdata.json");
const VM_SUBSYS_TCP: &str = include_str!("../../../tests/fixtures/vm/nvme-list-subsys-o-json.tcp.json");
const VM_LIST_TCP: &str = include_str!("../../../tests/fixtures/vm/nvme-list-o-json.tcp.json");
const VM_LIST_V_TCP: &str = include_str!("../../../tests/fixtures/vm/nvme-list-v-o-json.tcp.json");
const VM_SUBSYS_PCIE: &str = include_str!("../../../tests/fixtures/vm/nvme-list-subsys-o-json.pcie.json");
const VM_LIST_PCIE: &str = include_str!("../../../tests/fixtures/vm/nvme-list-o-json.pcie.json");
const ID_CTRL_WDC: &str = include_str!("../../../tests/fixtures/nvme/nvme-id-ctrl-o-json.v1.wdc-sn730.ironic.json");
const CONNECT_27: &str = include_str!("../../../tests/fixtures/nvme/nvme-connect-t-tcp.v2.7plus.oracle-blog.txt");
const DISCONNECT_V1: &str = include_str!("../../../tests/fixtures/nvme/nvme-disconnect-n.v1.commit-f4806f68.txt");
const DISCOVER_JSON: &str = include_str!("../../../tests/fixtures/nvme/nvme-discover-o-json.tcp.nvme-cli-pr940.json");
const LOCAL_LIST_EMPTY: &str = include_str!("../../../tests/fixtures/local/nvme-list-json.no-nvme-module.txt");
const LOCAL_SUBSYS_EMPTY: &str = include_str!("../../../tests/fixtures/local/nvme-list-subsys-json.no-nvme-module.txt");
const LOCAL_ID_CTRL_EMPTY: &str = include_str!("../../../tests/fixtures/local/nvme-id-ctrl-json.no-device.txt");
const LOCAL_CONNECT_EMPTY: &str = include_str!("../../../tests/fixtures/local/nvme-connect-tcp.no-nvme-module.txt");
const LOCAL_DISCONNECT_EMPTY: &str = include_str!("../../../tests/fixtures/local/nvme-disconnect-n.no-nvme-module.txt");

const VERSION_1_16: &str = include_str!("../../../tests/fixtures/nvme/nvme-version.v1.16.txt");
const VERSION_2_16: &str = include_str!("../../../tests/fixtures/nvme/nvme-version.v2.16.txt");
const VERSION_VM: &str = include_str!("../../../tests/fixtures/vm/nvme-version.txt");
const SUBSYS_1_16_EMPTY_JSONC: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-subsys-o-json.v1.16.no-subsystems.json-c.txt");
const SUBSYS_1_16_EMPTY_BUILTIN: &str =
    include_str!("../../../tests/fixtures/nvme/nvme-list-subsys-o-json.v1.16.no-subsystems.builtin-json.txt");
const LIST_BARE_NAME: &str = include_str!("../../../tests/fixtures/nvme/nvme-list-o-json.v2.3.bare-devicepath.json");

#[test]
fn versions_of_1_16_2_3_and_2_16() {
    let v = parse_version(VERSION_1_16).unwrap();
    assert_eq!((v.major, v.minor, v.text.as_str(), v.libnvme.as_deref()), (1, 16, "1.16", None));
    assert!(!v.has_dhchap() && !v.connect_config_connects_itself());
    let v = parse_version(VERSION_VM).unwrap();
    assert_eq!((v.major, v.minor, v.libnvme.as_deref()), (2, 3, Some("1.3")));
    assert!(v.has_dhchap() && !v.connect_config_connects_itself());
    let v = parse_version(VERSION_2_16).unwrap();
    assert_eq!((v.major, v.minor, v.libnvme.as_deref()), (2, 16, Some("1.16")));
    assert!(v.has_dhchap() && v.connect_config_connects_itself());
    assert_eq!(parse_version("nvme version 2.11-dirty (git v2.11-4-g1)\n").unwrap().minor, 11);
    assert_eq!(parse_version("").unwrap_err(), InspectError::Empty { tool: "nvme version" });
    assert!(parse_version("libnvme version 1.3 (git 1.3)\n").is_err());
    assert!(parse_version("nvme version git\n").is_err());
}

#[test]
fn list_subsys_of_1_16_without_subsystems_is_empty() {
    // Both builds of 1.16 (json-c and its own JSON writer) print an empty object and exit 0.
    assert_eq!(parse_list_subsys(SUBSYS_1_16_EMPTY_JSONC).unwrap(), vec![]);
    assert_eq!(parse_list_subsys(SUBSYS_1_16_EMPTY_BUILTIN).unwrap(), vec![]);
}

#[test]
fn list_bare_device_names_get_their_dev_path() {
    let list = parse_list(LIST_BARE_NAME).unwrap();
    assert_eq!(&devices(&list)[..3], ["/dev/nvme6n2", "/dev/nvme6n1", "/dev/nvme5n1"]);
    assert_eq!(list[0].nsid, Some(2));
}

fn devices(list: &[NvmeNamespace]) -> Vec<&str> {
    list.iter().map(|n| n.device.as_str()).collect()
}

// ---- nvme list, flat shapes ----

#[test]
fn list_flat_powerstore_tcp_pre_2_11() {
    let list = parse_list(FLAT_POWERSTORE).unwrap();
    assert_eq!(devices(&list), ["/dev/nvme0n1", "/dev/nvme0n2"]);
    assert_eq!(
        list[0],
        NvmeNamespace {
            device: "/dev/nvme0n1".into(),
            nsid: Some(9217),
            subsystem_nqn: None,
            model: Some("dellemc".into()),
            serial: Some("FP08RZ2".into()),
            firmware: Some("2.1.0.0".into()),
            size_bytes: Some(5_368_709_120),
            transport: None,
            address: None,
        }
    );
    assert_eq!(list[1].nsid, Some(9222));
}

#[test]
fn list_flat_1x_pcie_with_product_name() {
    let list = parse_list(FLAT_NETDATA).unwrap();
    assert_eq!(devices(&list), ["/dev/nvme0n1", "/dev/nvme1n1"]);
    assert_eq!(list[1].model.as_deref(), Some("Seagate FireCuda 530 ZP4000GM30023"));
    assert_eq!(list[1].serial.as_deref(), Some("XXX01YYY"));
    assert_eq!(list[1].firmware.as_deref(), Some("SU6SM001"));
    assert_eq!(list[1].size_bytes, Some(4_000_787_030_016));
    assert_eq!(list[1].nsid, Some(1));
}

#[test]
fn list_flat_fabrics_nvmet() {
    let list = parse_list(FLAT_NVMET).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].device, "/dev/nvme1n1");
    assert_eq!(list[0].model.as_deref(), Some("Linux"));
    assert_eq!(list[0].firmware.as_deref(), Some("4.18.0-1"));
    assert_eq!(list[0].serial.as_deref(), Some("eb4695bf0da275a3"));
    assert_eq!(list[0].size_bytes, Some(268_435_456_000));
}

#[test]
fn list_flat_negative_sizes_are_none() {
    let list = parse_list(FLAT_CRUSOE).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].device, "/dev/nvme0n1");
    assert_eq!(list[0].size_bytes, None);
    assert_eq!(list[0].model.as_deref(), Some("XXXXXXX"));

    let list = parse_list(FLAT_OVERFLOW).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].model.as_deref(), Some("INTEL SSDPE2KX080T8"));
    assert_eq!(list[0].firmware.as_deref(), Some("VDV10182"));
    assert_eq!(list[0].size_bytes, None);
    assert_eq!(list[0].nsid, Some(1));
}

// ---- nvme list, detailed shapes ----

#[test]
fn list_verbose_namespace_under_controller() {
    let list = parse_list(VERBOSE_MICRON).unwrap();
    assert_eq!(
        list,
        vec![NvmeNamespace {
            device: "/dev/nvme2n1".into(),
            nsid: Some(1),
            subsystem_nqn: Some("nqn.2016-08.com.micron:nvme:nvm-subsystem-sn-XXXXX".into()),
            model: Some("XXXXX".into()),
            serial: Some("XXXXXX".into()),
            firmware: Some("XXXXX".into()),
            size_bytes: Some(12_802_494_652_416),
            transport: Some("pcie".into()),
            address: Some("0000:02:00.0".into()),
        }]
    );
}

#[test]
fn list_verbose_subsystem_without_controllers_key() {
    let list = parse_list(VERBOSE_SUBSYS_NS).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].device, "/dev/nvme4n1");
    assert_eq!(list[0].nsid, Some(1));
    assert_eq!(list[0].size_bytes, Some(12_802_494_652_416));
    assert_eq!(list[0].subsystem_nqn.as_deref(), Some("nqn.2016-08.com.micron:nvme:nvm-subsystem-sn-XXXXX"));
    assert_eq!(list[0].model, None);
    assert_eq!(list[0].transport, None);
    assert_eq!(list[0].address, None);
}

#[test]
fn list_verbose_lightbits_multipath_and_local_pcie() {
    let list = parse_list(VERBOSE_LIGHTBITS).unwrap();
    assert_eq!(devices(&list), ["/dev/nvme9n1", "/dev/nvme3n1"]);
    let tcp = &list[0];
    assert_eq!(tcp.nsid, Some(29017));
    assert_eq!(tcp.subsystem_nqn.as_deref(), Some("nqn.2016-01.com.lightbitslabs:uuid:696-aa11-4912-acf9-eb2cfcd"));
    assert_eq!(tcp.model.as_deref(), Some("Lightbits LightOS"));
    assert_eq!(tcp.firmware.as_deref(), Some("3.6"));
    assert_eq!(tcp.transport.as_deref(), Some("tcp"));
    // nvme11 reaches the namespace through path nvme9c11n1 "optimized"
    assert_eq!(tcp.address.as_deref(), Some("traddr=10.50.4.13,trsvcid=4420"));
    assert_eq!(tcp.serial.as_deref(), Some("69a8c48ac"));
    assert_eq!(tcp.size_bytes, Some(137_438_953_472));

    let pcie = &list[1];
    assert_eq!(pcie.nsid, Some(1));
    assert_eq!(pcie.model.as_deref(), Some("Micron_7450_MTF960TFR"));
    assert_eq!(pcie.transport.as_deref(), Some("pcie"));
    assert_eq!(pcie.address.as_deref(), Some("0000:4f:00.0"));
    assert_eq!(pcie.size_bytes, Some(960_197_124_096));
}

#[test]
fn list_2_11_detailed_pcie_three_subsystems() {
    let list = parse_list(DETAILED_NETDATA).unwrap();
    assert_eq!(devices(&list), ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1"]);
    assert_eq!(list[0].firmware.as_deref(), Some("SU6SM005"));
    assert_eq!(list[2].serial.as_deref(), Some("7VS00KNX"));
    assert_eq!(list[2].address.as_deref(), Some("0000:61:00.0"));
    // padded NQN: ends trimmed, inner padding kept as printed
    assert_eq!(
        list[1].subsystem_nqn.as_deref(),
        Some("nqn.2014.08.org.nvmexpress:1bb11bb1XXX00YYY            Seagate FireCuda 530 ZP4000GM30023")
    );
}

#[test]
fn list_2_11_detailed_powermax_tcp() {
    let list = parse_list(DETAILED_POWERMAX).unwrap();
    assert_eq!(list.len(), 1);
    let ns = &list[0];
    assert_eq!(ns.device, "/dev/nvme0n1");
    assert_eq!(ns.nsid, Some(1874));
    assert_eq!(ns.size_bytes, Some(3_222_405_120));
    assert_eq!(ns.model.as_deref(), Some("EMC PowerMax_2500"));
    assert_eq!(ns.transport.as_deref(), Some("tcp"));
    assert_eq!(ns.address.as_deref(), Some("traddr=10.11.12.13,trsvcid=4420,src_addr=10.10.10.21"));
    assert_eq!(ns.subsystem_nqn.as_deref(), Some("nqn.1988-11.com.dell:PowerMax_2500:00:000120001647"));
}

#[test]
fn list_2_11_detailed_powerstore_picks_optimized_path() {
    let list = parse_list(DETAILED_POWERSTORE).unwrap();
    assert_eq!(list.len(), 1);
    let ns = &list[0];
    assert_eq!(ns.device, "/dev/nvme0n1");
    assert_eq!(ns.nsid, Some(293));
    assert_eq!(ns.size_bytes, Some(3_221_225_472));
    assert_eq!(ns.model.as_deref(), Some("dellemc-powerstore"));
    assert_eq!(ns.serial.as_deref(), Some("883YCJ3"));
    assert_eq!(ns.firmware.as_deref(), Some("4.1.0.0"));
    assert_eq!(ns.address.as_deref(), Some("traddr=10.11.12.13,trsvcid=4420,src_addr=10.10.10.21"));
}

/// Shape of `nvme list -v --output-format-version=2` (nvme-cli 2.16+),
/// written by hand after `json_detail_list_v2` in nvme-cli's
/// src/nvme-print-json.c: no captured sample exists.
#[test]
fn list_output_format_version_2_paths_carry_controllers() {
    let json = r#"{"Devices":[{"HostNQN":"nqn.h","Subsystems":[{
        "Subsystem":"nvme-subsys1","SubsystemNQN":"nqn.t",
        "Namespaces":[{"NameSpace":"nvme1n1","Generic":"ng1n1","NSID":5,
          "UsedBytes":0,"MaximumLBA":2048,"PhysicalSize":1048576,"SectorSize":512,
          "Paths":[
            {"Path":"nvme1c2n1","ANAState":"non-optimized","Controller":"nvme2","Cntlid":"1",
             "SerialNumber":"S ","ModelNumber":"M ","Firmware":"F ","Transport":"tcp",
             "Address":"traddr=127.0.0.1,trsvcid=4420","Slot":""},
            {"Path":"nvme1c3n1","ANAState":"optimized","Controller":"nvme3","Cntlid":"2",
             "SerialNumber":"S ","ModelNumber":"M ","Firmware":"F ","Transport":"tcp",
             "Address":"traddr=127.0.0.2,trsvcid=4420","Slot":""}]}]}]}]}"#;
    let list = parse_list(json).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].device, "/dev/nvme1n1");
    assert_eq!(list[0].nsid, Some(5));
    assert_eq!(list[0].model.as_deref(), Some("M"));
    assert_eq!(list[0].address.as_deref(), Some("traddr=127.0.0.2,trsvcid=4420"));
}

#[test]
fn list_empty_and_malformed() {
    assert_eq!(parse_list(LOCAL_LIST_EMPTY).unwrap(), vec![]);
    assert_eq!(parse_list("  \n").unwrap(), vec![]);
    assert_eq!(parse_list(r#"{"Devices":[]}"#).unwrap(), vec![]);

    let err = parse_list("{\"Devices\":[").unwrap_err();
    assert!(matches!(err, InspectError::InvalidJson { tool: "nvme list", .. }));
    assert!(err.to_string().starts_with("nvme list:"));
    assert!(parse_list("[]").unwrap_err().to_string().contains("Devices"));
    assert!(parse_list(r#"{"Devices":{}}"#).is_err());
    assert!(parse_list(r#"{"Devices":[{"NameSpace":1}]}"#).is_err());
    // `nvme discover -o json` is not a listing of namespaces
    assert!(parse_list(DISCOVER_JSON).is_err());
}

#[test]
fn path_names_map_to_namespaces() {
    assert_eq!(path_namespace_name("nvme9c11n1").as_deref(), Some("nvme9n1"));
    assert_eq!(path_namespace_name("nvme0c0n12").as_deref(), Some("nvme0n12"));
    assert_eq!(path_namespace_name("nvme0n1"), None);
    assert_eq!(path_namespace_name("nvmec1n1"), None);
}

// ---- nvme list-subsys ----

#[test]
fn list_subsys_1x_doc_shape() {
    let subs = parse_list_subsys(SUBSYS_V1_DOC).unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[0].name, "nvme-subsys0");
    assert_eq!(subs[0].nqn, "nvmf-test");
    assert_eq!(
        subs[0].controllers,
        vec![
            NvmePath {
                name: "nvme0".into(),
                transport: "rdma".into(),
                address: "traddr=1.1.1.3,trsvcid=4420,host_traddr=1.1.1.1".into(),
                state: None,
            },
            NvmePath {
                name: "nvme1".into(),
                transport: "rdma".into(),
                address: "traddr=1.1.1.3,trsvcid=4420,host_traddr=1.1.1.2".into(),
                state: None,
            },
        ]
    );
    assert_eq!(subs[1].nqn, "nvmf-test2");
    let names: Vec<&str> = subs[1].controllers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["nvme2", "nvme3"]);
}

#[test]
fn list_subsys_2x_array_of_hosts() {
    let subs = parse_list_subsys(SUBSYS_V2).unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].name, "nvme-subsys0");
    assert_eq!(subs[0].nqn, "nqn.1988-11.com.dell:mock:00:1a1111a1111aAA11111A");
    assert_eq!(subs[0].controllers.len(), 2);
    assert_eq!(
        subs[0].controllers[0],
        NvmePath {
            name: "nvme3".into(),
            transport: "tcp".into(),
            address: "traddr=10.1.1.1,trsvcid=4420,src_addr=10.1.1.2".into(),
            state: Some("live".into()),
        }
    );
    assert_eq!(subs[0].controllers[1].name, "nvme2");
}

#[test]
fn list_subsys_single_host_object_with_deleting_path() {
    let subs = parse_list_subsys(SUBSYS_V2_DELETING).unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].nqn, "nqn.1988-11.com.dell.mock:00:e6e2d5b871f1403E169D");
    assert_eq!(subs[0].controllers[0].state.as_deref(), Some("live"));
    assert_eq!(subs[0].controllers[1].name, "nvme1");
    assert_eq!(subs[0].controllers[1].state.as_deref(), Some("deleting"));
    assert_eq!(subs[0].controllers[1].address, "traddr=10.230.1.2,trsvcid=4420,src_addr=10.230.1.4");
}

#[test]
fn list_subsys_1x_combined_entries_and_errors() {
    let json = r#"{"Subsystems":[{"Name":"nvme-subsys4","NQN":"nqn.x","Paths":[{"Name":"nvme4","Transport":"tcp","Address":"traddr=127.0.0.1,trsvcid=4420"}]}]}"#;
    let subs = parse_list_subsys(json).unwrap();
    assert_eq!(subs[0].controllers[0].name, "nvme4");

    assert_eq!(parse_list_subsys(LOCAL_SUBSYS_EMPTY).unwrap(), vec![]);
    assert_eq!(parse_list_subsys("[]").unwrap(), vec![]);
    let err = parse_list_subsys("[{").unwrap_err();
    assert_eq!(err.tool(), "nvme list-subsys");
    assert!(parse_list_subsys(r#"{"Subsystems":[{"Paths":[]}]}"#).is_err());
    assert!(parse_list_subsys(r#"{"Subsystems":[{"Name":"nvme-subsys0"}]}"#).is_err());
    assert!(parse_list_subsys(r#"{"HostNQN":"x"}"#).is_err());
    assert!(parse_list_subsys("42").is_err());
}

// ---- find_namespace_for_nqn ----

#[test]
fn find_by_subsystem_nqn_in_detailed_lists() {
    let list = parse_list(DETAILED_POWERSTORE).unwrap();
    let nqn = "nqn.1988-11.com.dell:powerstore:00:42c92aa830b1FF113003";
    assert_eq!(find_namespace_for_nqn(&list, &[], nqn, None).as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(find_namespace_for_nqn(&list, &[], nqn, Some(293)).as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(find_namespace_for_nqn(&list, &[], nqn, Some(1)), None);
    assert_eq!(find_namespace_for_nqn(&list, &[], "nqn.other", None), None);

    let list = parse_list(VERBOSE_LIGHTBITS).unwrap();
    let lightbits = "nqn.2016-01.com.lightbitslabs:uuid:696-aa11-4912-acf9-eb2cfcd";
    assert_eq!(find_namespace_for_nqn(&list, &[], lightbits, Some(29017)).as_deref(), Some("/dev/nvme9n1"));
    let micron = "nqn.2016-08.com.micron:nvme:nvm-subsystem-sn-2402473F6E8C";
    assert_eq!(find_namespace_for_nqn(&list, &[], micron, None).as_deref(), Some("/dev/nvme3n1"));
}

#[test]
fn find_detailed_list_is_authoritative() {
    // The Lightbits subsystem is nvme-subsys9 with controllers nvme0/9/10/11;
    // a list-subsys claiming the NQN must not redirect to a listed device
    // whose NQN is known to be different.
    let list = parse_list(VERBOSE_LIGHTBITS).unwrap();
    let subs = vec![NvmeSubsystem { name: "nvme-subsys3".into(), nqn: "nqn.absent".into(), controllers: vec![] }];
    assert_eq!(find_namespace_for_nqn(&list, &subs, "nqn.absent", None), None);
}

#[test]
fn find_flat_powerstore_by_subsystem_instance_and_nsid() {
    // Flat list: /dev/nvme0n1 (nsid 9217) and /dev/nvme0n2 (nsid 9222);
    // list-subsys: nvme-subsys0 with controllers nvme3 and nvme2 (native
    // multipath: the block devices are named after the subsystem).
    let list = parse_list(FLAT_POWERSTORE).unwrap();
    let subs = parse_list_subsys(SUBSYS_V2).unwrap();
    let nqn = "nqn.1988-11.com.dell:mock:00:1a1111a1111aAA11111A";
    // Two namespaces and no NSID asked for: no answer, never the first listed.
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, None), None);
    assert_eq!(
        match_namespace_for_nqn(&list, &subs, nqn, None),
        NqnMatch::NeedsNsid(vec![
            SubsystemNamespace { device: "/dev/nvme0n1".into(), nsid: Some(9217) },
            SubsystemNamespace { device: "/dev/nvme0n2".into(), nsid: Some(9222) },
        ])
    );
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, Some(9222)).as_deref(), Some("/dev/nvme0n2"));
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, Some(9217)).as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, Some(1)), None);
    assert_eq!(find_namespace_for_nqn(&list, &subs, "nqn.unknown", None), None);
}

fn flat(device: &str, nsid: u32) -> NvmeNamespace {
    NvmeNamespace {
        device: device.into(),
        nsid: Some(nsid),
        subsystem_nqn: None,
        model: None,
        serial: None,
        firmware: None,
        size_bytes: None,
        transport: None,
        address: None,
    }
}

#[test]
fn find_flat_by_controller_skips_deleting_paths() {
    // nvme-subsys0: nvme0 live, nvme1 deleting. Non-multipath naming.
    let subs = parse_list_subsys(SUBSYS_V2_DELETING).unwrap();
    let nqn = "nqn.1988-11.com.dell.mock:00:e6e2d5b871f1403E169D";
    let list = vec![flat("/dev/nvme1n1", 7), flat("/dev/nvme0n1", 7)];
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, Some(7)).as_deref(), Some("/dev/nvme0n1"));
    // only the deleting controller's namespace is listed
    let list = vec![flat("/dev/nvme1n1", 7)];
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, None), None);
    // all controllers going away: no device, even by subsystem instance
    let mut gone = subs.clone();
    gone[0].controllers[0].state = Some("connecting".into());
    let list = vec![flat("/dev/nvme0n1", 7)];
    assert_eq!(find_namespace_for_nqn(&list, &subs, nqn, None).as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(find_namespace_for_nqn(&list, &gone, nqn, None), None);
}

#[test]
fn find_flat_mixed_tcp_and_local_pcie() {
    // Lightbits (nvme-subsys9: controllers nvme0, nvme10, nvme11, nvme9)
    // next to a local Micron (nvme-subsys3: controller nvme3), flat list
    // with native multipath names: nvme9n1 (tcp) and nvme3n1 (pcie).
    let subs = vec![
        NvmeSubsystem {
            name: "nvme-subsys9".into(),
            nqn: "nqn.lightbits".into(),
            controllers: ["nvme0", "nvme10", "nvme11", "nvme9"]
                .iter()
                .map(|n| NvmePath {
                    name: (*n).into(),
                    transport: "tcp".into(),
                    address: String::new(),
                    state: Some("live".into()),
                })
                .collect(),
        },
        NvmeSubsystem {
            name: "nvme-subsys3".into(),
            nqn: "nqn.micron".into(),
            controllers: vec![NvmePath {
                name: "nvme3".into(),
                transport: "pcie".into(),
                address: "0000:4f:00.0".into(),
                state: Some("live".into()),
            }],
        },
    ];
    let list = vec![flat("/dev/nvme3n1", 1), flat("/dev/nvme9n1", 29017)];
    assert_eq!(find_namespace_for_nqn(&list, &subs, "nqn.lightbits", None).as_deref(), Some("/dev/nvme9n1"));
    assert_eq!(find_namespace_for_nqn(&list, &subs, "nqn.micron", None).as_deref(), Some("/dev/nvme3n1"));
}

#[test]
fn find_flat_conflicting_readings() {
    // Target nvme-subsys0 with controller nvme2; a local disk is
    // nvme-subsys2 with controller nvme5. Listed: nvme0n1, nvme2n1.
    let subs = vec![
        NvmeSubsystem {
            name: "nvme-subsys0".into(),
            nqn: "nqn.target".into(),
            controllers: vec![NvmePath {
                name: "nvme2".into(),
                transport: "tcp".into(),
                address: String::new(),
                state: Some("live".into()),
            }],
        },
        NvmeSubsystem {
            name: "nvme-subsys2".into(),
            nqn: "nqn.local".into(),
            controllers: vec![NvmePath {
                name: "nvme5".into(),
                transport: "pcie".into(),
                address: String::new(),
                state: Some("live".into()),
            }],
        },
    ];
    // nvme0n1 cannot be a controller-named device (no controller nvme0):
    // the listing is multipath-named, so the answer is nvme0n1, not the
    // local disk nvme2n1.
    let list = vec![flat("/dev/nvme0n1", 1), flat("/dev/nvme2n1", 1)];
    assert_eq!(find_namespace_for_nqn(&list, &subs, "nqn.target", None).as_deref(), Some("/dev/nvme0n1"));
    // If both readings fit the listing and disagree: no guess.
    let mut subs2 = subs.clone();
    subs2[1].controllers[0].name = "nvme0".into();
    assert_eq!(find_namespace_for_nqn(&list, &subs2, "nqn.target", None), None);
}

#[test]
fn without_nsid_several_namespaces_are_refused_in_any_list_order() {
    // The guest's capture: pgt-capture exports namespaces 1 and 2; `nvme list` shows nvme6n2
    // first. Neither order gives an answer without an NSID.
    let subs = parse_list_subsys(VM_SUBSYS_TCP).unwrap();
    let mut list = parse_list(VM_LIST_TCP).unwrap();
    for _ in 0..2 {
        match match_namespace_for_nqn(&list, &subs, "pgt-capture", None) {
            NqnMatch::NeedsNsid(several) => assert_eq!(
                several.iter().map(ToString::to_string).collect::<Vec<_>>(),
                ["/dev/nvme6n1 (NSID 1)", "/dev/nvme6n2 (NSID 2)"]
            ),
            other => panic!("{other:?}"),
        }
        list.reverse();
    }
    // The detailed shape (nvme list -v) names the subsystem: the same refusal.
    let detailed = parse_list(VM_LIST_V_TCP).unwrap();
    assert!(matches!(match_namespace_for_nqn(&detailed, &subs, "pgt-capture", None), NqnMatch::NeedsNsid(_)));
    assert_eq!(find_namespace_for_nqn(&detailed, &subs, "pgt-capture", Some(2)).as_deref(), Some("/dev/nvme6n2"));
    // The other local drives (one namespace each) still resolve without an NSID.
    let pcie = parse_list_subsys(VM_SUBSYS_PCIE).unwrap();
    let one = pcie.iter().find(|s| s.nqn.contains("PGT-DATA")).unwrap();
    let local = parse_list(VM_LIST_PCIE).unwrap();
    assert!(find_namespace_for_nqn(&local, &pcie, &one.nqn, None).is_some());
}

#[test]
fn one_namespace_seen_through_two_controllers_is_one_namespace() {
    // No native multipath: NSID 7 appears as nvme0n1 and nvme2n1 (controllers nvme0, nvme2).
    let subs = vec![NvmeSubsystem {
        name: "nvme-subsys4".into(),
        nqn: "nqn.two-paths".into(),
        controllers: ["nvme0", "nvme2"]
            .iter()
            .map(|n| NvmePath {
                name: (*n).into(),
                transport: "tcp".into(),
                address: String::new(),
                state: Some("live".into()),
            })
            .collect(),
    }];
    let list = vec![flat("/dev/nvme0n1", 7), flat("/dev/nvme2n1", 7)];
    assert_eq!(find_namespace_for_nqn(&list, &subs, "nqn.two-paths", None).as_deref(), Some("/dev/nvme0n1"));
    // A second NSID on either path makes it two namespaces.
    let list = vec![flat("/dev/nvme0n1", 7), flat("/dev/nvme2n1", 7), flat("/dev/nvme2n2", 8)];
    assert!(
        matches!(match_namespace_for_nqn(&list, &subs, "nqn.two-paths", None), NqnMatch::NeedsNsid(v) if v.len() == 2)
    );
}

#[test]
fn list_ns_plain_and_json() {
    assert_eq!(parse_list_ns("[   0]:0x1\n[   1]:0x2\n").unwrap(), vec![1, 2]);
    assert_eq!(parse_list_ns("[   0]:0x2b").unwrap(), vec![43]);
    assert_eq!(parse_list_ns("{\"nsid_list\":[{\"nsid\":1},{\"nsid\":2}]}").unwrap(), vec![1, 2]);
    assert_eq!(parse_list_ns("{\"nsid_list\":[]}").unwrap(), Vec::<u32>::new());
    assert_eq!(parse_list_ns("").unwrap(), Vec::<u32>::new());
    assert!(parse_list_ns("NVMe status: INVALID_NS").is_err());
    assert!(parse_list_ns("{\"nsid_list\":[{\"id\":1}]}").is_err());
    assert_eq!(parse_list_ns("[   0]:0xzz").unwrap_err().tool(), "nvme list-ns");
}

// ---- id-ctrl, connect, disconnect ----

#[test]
fn id_ctrl_trims_padding() {
    let ctrl = parse_id_ctrl(ID_CTRL_WDC).unwrap();
    assert_eq!(
        ctrl,
        NvmeController {
            model: "WDC PC SN730 SDBQNTY-256G-1001".into(),
            serial: "1951B3444502".into(),
            firmware: "11170101".into(),
        }
    );
}

#[test]
fn id_ctrl_errors() {
    assert_eq!(parse_id_ctrl(LOCAL_ID_CTRL_EMPTY).unwrap_err(), InspectError::Empty { tool: "nvme id-ctrl" });
    assert_eq!(parse_id_ctrl("{\"mn\":").unwrap_err().tool(), "nvme id-ctrl");
    let err = parse_id_ctrl(r#"{"mn":"M","sn":"S"}"#).unwrap_err();
    assert!(err.to_string().contains("\"fr\""));
    assert!(parse_id_ctrl("[]").is_err());
}

#[test]
fn connect_stdout_variants() {
    assert_eq!(connected_device(CONNECT_27).as_deref(), Some("nvme1"));
    assert_eq!(connected_device("device: nvme12\n").as_deref(), Some("nvme12"));
    assert_eq!(connected_device("{\n  \"device\" : \"nvme3\"\n}\n").as_deref(), Some("nvme3"));
    assert_eq!(connected_device(r#"{"device":"nvme1"}"#).as_deref(), Some("nvme1"));
    assert_eq!(connected_device(LOCAL_CONNECT_EMPTY), None);
    assert_eq!(connected_device(""), None);
    assert_eq!(connected_device("already connected\n"), None);
    assert_eq!(connected_device("device: /dev/sda\n"), None);
    assert_eq!(connected_device("{broken"), None);
}

#[test]
fn disconnect_counts() {
    assert_eq!(disconnected_count(DISCONNECT_V1), Some(1));
    assert_eq!(disconnected_count("NQN:nqn.2014-08.org.nvmexpress:uuid:1 disconnected 2 controller(s)\n"), Some(2));
    assert_eq!(disconnected_count("NQN:a disconnected 0 controller(s)\n"), Some(0));
    assert_eq!(disconnected_count("disconnected 3 controller(s)\n"), Some(3));
    assert_eq!(disconnected_count("NQN:a disconnected 1 controller(s)\nNQN:b disconnected 2 controller(s)\n"), Some(3));
    assert_eq!(disconnected_count(LOCAL_DISCONNECT_EMPTY), None);
    assert_eq!(disconnected_count("something else\n"), None);
}
