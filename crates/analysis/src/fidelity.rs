//! Emulation fidelity: an emulated tier is a mechanism (zram, a loop device over a file, nbdkit +
//! nbdfuse + loop), not the class it stands for. The fio probe measures each emulated device's
//! QD1 latencies; here they are set against a documented range per class, and a comparison of
//! two placements whose emulated latency ratio lies outside the ratio of the real classes gets a
//! note next to its delta and claim verdict.

use results::Manifest;
use results::manifest::{DeviceProbeRecord, DeviceRecord};
use serde::Serialize;

/// What a class of real device does at queue depth 1, µs, with where the figures come from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ClassRange {
    pub class: &'static str,
    /// 4 KiB random read, direct I/O, queue depth 1.
    pub read_us: (f64, f64),
    /// One 8 KiB write followed by fdatasync on XFS, queue depth 1.
    pub write_sync_us: (f64, f64),
    pub source: &'static str,
}

/// The classes pgtier stands in for, as docs/results.md ("Emulation fidelity") documents them.
pub const CLASSES: [ClassRange; 3] = [
    ClassRange {
        class: "nvme",
        read_us: (50.0, 120.0),
        write_sync_us: (20.0, 100.0),
        source: "datacenter NVMe SSDs with power-loss protection, as the studies used: Intel P4500 product guide (Lenovo Press): random 4 KB read latency 85-115 µs, random write 20 µs, sequential write 13 µs; the fdatasync of an appending 8 KiB write adds an XFS log write, and the flush is cheap with power-loss protection",
    },
    ClassRange {
        class: "pmem",
        read_us: (1.5, 10.0),
        write_sync_us: (3.0, 20.0),
        source: "Intel Optane DC PMem in App Direct mode, fsdax with DAX: media load latency 305-346 ns (Izraelevitz et al., Basic Performance Measurements of the Intel Optane DC Persistent Memory Module, arXiv:1903.05714); through the file system's read/write and fdatasync path a few microseconds",
    },
    ClassRange {
        class: "nvme-tcp",
        read_us: (60.0, 160.0),
        write_sync_us: (40.0, 200.0),
        source: "a local NVMe SSD plus the NVMe/TCP link: about 10-40 µs per I/O on a local 25-100 GbE network (nvme-storage.com glossary, Latency: NVMe-oF over TCP adds about 20 µs; a TCP round trip on a LAN 5-20 µs), a replicated write one more round trip",
    },
];

/// A low..high range of a ratio.
type Range = (f64, f64);

/// The ratio of real classes' QD1 latencies (contender / baseline): reads, then write+fdatasync;
/// where it is known better than the two ranges' extremes give it.
const RATIOS: [(&str, &str, Range, Range); 2] = [
    // PMem against NVMe: read 1.5-10 µs vs 50-120 µs; write+fdatasync 3-20 µs vs 20-100 µs.
    ("pmem", "nvme", (0.0125, 0.2), (0.03, 1.0)),
    // NVMe/TCP is a local NVMe SSD plus 10-40 µs per I/O (reads), plus a replica round trip
    // for writes.
    ("nvme-tcp", "nvme", (1.08, 1.8), (1.2, 3.0)),
];

pub fn class_range(class: &str) -> Option<&'static ClassRange> {
    CLASSES.iter().find(|c| c.class == class)
}

/// The real classes' ratio (contender / baseline) for reads and for write+fdatasync.
pub fn class_ratio(contender: &str, baseline: &str) -> Option<((f64, f64), (f64, f64))> {
    if contender == baseline {
        // Two devices of one class: alike within a factor 1.5.
        return Some(((1.0 / 1.5, 1.5), (1.0 / 1.5, 1.5)));
    }
    if let Some((_, _, r, w)) = RATIOS.iter().find(|(c, b, _, _)| *c == contender && *b == baseline) {
        return Some((*r, *w));
    }
    if let Some((_, _, r, w)) = RATIOS.iter().find(|(c, b, _, _)| *c == baseline && *b == contender) {
        return Some(((1.0 / r.1, 1.0 / r.0), (1.0 / w.1, 1.0 / w.0)));
    }
    let (c, b) = (class_range(contender)?, class_range(baseline)?);
    Some((
        (c.read_us.0 / b.read_us.1, c.read_us.1 / b.read_us.0),
        (c.write_sync_us.0 / b.write_sync_us.1, c.write_sync_us.1 / b.write_sync_us.0),
    ))
}

/// An emulated device's measured QD1 latencies against its class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceLatency {
    pub device: String,
    pub class: String,
    pub description: String,
    pub read_us: f64,
    pub write_sync_us: f64,
    pub class_range: Option<ClassRange>,
}

impl DeviceLatency {
    /// `within`, `above` or `below` the class's range.
    pub fn place(v: f64, range: (f64, f64)) -> &'static str {
        if v < range.0 {
            "below"
        } else if v > range.1 {
            "above"
        } else {
            "within"
        }
    }
}

fn probe_of<'a>(m: &'a Manifest, device: &str) -> Option<&'a DeviceProbeRecord> {
    m.device_probes.iter().find(|p| p.device == device && p.read_qd1_mean_us > 0.0 && p.write_sync_qd1_mean_us > 0.0)
}

fn record_of<'a>(m: &'a Manifest, device: &str) -> Option<&'a DeviceRecord> {
    m.devices.iter().find(|d| d.name == device)
}

/// Every probed device with QD1 latencies, in the manifest's order.
pub fn devices(m: &Manifest) -> Vec<DeviceLatency> {
    m.devices
        .iter()
        .filter_map(|d| {
            let p = probe_of(m, &d.name)?;
            Some(DeviceLatency {
                device: d.name.clone(),
                class: d.class.clone(),
                description: d.description.clone(),
                read_us: p.read_qd1_mean_us,
                write_sync_us: p.write_sync_qd1_mean_us,
                class_range: class_range(&d.class).copied(),
            })
        })
        .collect()
}

/// One role whose emulated latency ratio is outside the real classes' ratio.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Distortion {
    pub role: &'static str,
    pub what: &'static str,
    pub contender: String,
    pub baseline: String,
    pub contender_us: f64,
    pub baseline_us: f64,
    pub ratio: f64,
    pub real: (f64, f64),
    pub contender_class: String,
    pub baseline_class: String,
}

impl Distortion {
    pub fn text(&self) -> String {
        format!(
            "{} {} on {} (emulated {}) take {:.0} µs against {:.0} µs on {} (emulated {}), {}; real {} against {} is {}",
            self.role,
            self.what,
            self.contender,
            self.contender_class,
            self.contender_us,
            self.baseline_us,
            self.baseline,
            self.baseline_class,
            ratio_text(self.ratio),
            self.contender_class,
            self.baseline_class,
            range_text(self.real)
        )
    }

    /// How the emulation could be brought into the classes' ratio.
    pub fn calibration(&self) -> String {
        let mid = (self.real.0 * self.real.1).sqrt();
        if self.ratio > self.real.1 {
            // The contender's stand-in is too slow against the baseline's.
            let add = self.contender_us / mid - self.baseline_us;
            if self.contender_class == "nvme-tcp" && self.baseline_class == "nvme" {
                format!(
                    "the NBD stack's own cost dominates: give {} the same stack (backing = \"nbd\", latency = \"0ms\") so both pay it, then a latency of about 10-40 µs on the NVMe/TCP devices",
                    self.baseline
                )
            } else {
                format!(
                    "add about {:.0} µs per I/O to {} (backing = \"nbd\" with latency, or a [device.emulate.throttle])",
                    add.max(1.0),
                    self.baseline
                )
            }
        } else {
            let add = self.baseline_us * mid - self.contender_us;
            format!("add about {:.0} µs per I/O to {} (backing = \"nbd\" with latency)", add.max(1.0), self.contender)
        }
    }
}

fn ratio_text(r: f64) -> String {
    if r >= 1.0 { format!("{r:.1}x as long") } else { format!("{:.2}x as long", r) }
}

fn range_text((lo, hi): (f64, f64)) -> String {
    let f = |v: f64| if v >= 1.0 { format!("{v:.1}x") } else { format!("{v:.2}x") };
    format!("{}-{}", f(lo), f(hi))
}

/// The roles of two placements whose emulated QD1 latency ratio is outside the real classes'
/// ratio: data reads for the data device, write+fdatasync for the WAL device. Empty for real
/// tiers, for placements on the same devices, and without QD1 probes.
pub fn distortions(m: &Manifest, contender: &str, baseline: &str) -> Vec<Distortion> {
    if !m.emulated {
        return Vec::new();
    }
    let (Some(c), Some(b)) =
        (m.placements.iter().find(|p| p.name == contender), m.placements.iter().find(|p| p.name == baseline))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (role, what, cd, bd, read) in [
        ("data", "reads (4 KiB, QD1)", &c.data_device, &b.data_device, true),
        ("WAL", "writes+fdatasync (8 KiB, QD1)", &c.wal_device, &b.wal_device, false),
    ] {
        if cd == bd {
            continue;
        }
        let (Some(cp), Some(bp), Some(cr), Some(br)) =
            (probe_of(m, cd), probe_of(m, bd), record_of(m, cd), record_of(m, bd))
        else {
            continue;
        };
        let Some((rr, wr)) = class_ratio(&cr.class, &br.class) else { continue };
        let (cu, bu, real) = if read {
            (cp.read_qd1_mean_us, bp.read_qd1_mean_us, rr)
        } else {
            (cp.write_sync_qd1_mean_us, bp.write_sync_qd1_mean_us, wr)
        };
        let ratio = cu / bu;
        if ratio < real.0 || ratio > real.1 {
            out.push(Distortion {
                role,
                what,
                contender: cd.clone(),
                baseline: bd.clone(),
                contender_us: cu,
                baseline_us: bu,
                ratio,
                real,
                contender_class: cr.class.clone(),
                baseline_class: br.class.clone(),
            });
        }
    }
    out
}

/// How far the two placements' emulated devices are from the classes they stand for, for the
/// roles whose device differs: each device's QD1 latency against its class's range, and their
/// ratio against the real classes' ratio. None for real tiers or without QD1 probes.
pub fn how_far(m: &Manifest, contender: &str, baseline: &str) -> Option<String> {
    if !m.emulated {
        return None;
    }
    let (c, b) =
        (m.placements.iter().find(|p| p.name == contender)?, m.placements.iter().find(|p| p.name == baseline)?);
    let mut parts = Vec::new();
    for (role, what, cd, bd, read) in [
        ("data", "reads", &c.data_device, &b.data_device, true),
        ("WAL", "write+fdatasync", &c.wal_device, &b.wal_device, false),
    ] {
        if cd == bd {
            continue;
        }
        let (Some(cp), Some(bp), Some(cr), Some(br)) =
            (probe_of(m, cd), probe_of(m, bd), record_of(m, cd), record_of(m, bd))
        else {
            continue;
        };
        let lat = |p: &DeviceProbeRecord| if read { p.read_qd1_mean_us } else { p.write_sync_qd1_mean_us };
        let against = |v: f64, class: &str| match class_range(class) {
            Some(r) => {
                let (lo, hi) = if read { r.read_us } else { r.write_sync_us };
                if v > hi {
                    format!("{:.1}x above the class's {}-{} µs", v / hi, trim(lo), trim(hi))
                } else if v < lo {
                    format!("{:.1}x below the class's {}-{} µs", lo / v, trim(lo), trim(hi))
                } else {
                    format!("within the class's {}-{} µs", trim(lo), trim(hi))
                }
            }
            None => "no documented range".into(),
        };
        let real = class_ratio(&cr.class, &br.class).map(|(r, w)| if read { r } else { w });
        parts.push(format!(
            "{role} {what} (QD1) {:.0} µs on {cd} ({}) and {:.0} µs on {bd} ({}), ratio {:.2}x{}",
            lat(cp),
            against(lat(cp), &cr.class),
            lat(bp),
            against(lat(bp), &br.class),
            lat(cp) / lat(bp),
            real.map(|r| format!(" against {} for real {} / {}", range_text(r), cr.class, br.class))
                .unwrap_or_default()
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v}") }
}

/// The note next to a delta or claim verdict: "emulation cannot reproduce this: ...".
pub fn note(m: &Manifest, contender: &str, baseline: &str) -> Option<String> {
    let d = distortions(m, contender, baseline);
    if d.is_empty() {
        return None;
    }
    let texts: Vec<String> = d.iter().map(Distortion::text).collect();
    Some(format!("emulation cannot reproduce this: {}", texts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::manifest::PlacementRecord;

    fn manifest(lb_read: f64) -> Manifest {
        let dev = |name: &str, class: &str| DeviceRecord {
            name: name.into(),
            class: class.into(),
            emulated: true,
            ..Default::default()
        };
        let probe = |name: &str, read: f64, write: f64| DeviceProbeRecord {
            device: name.into(),
            read_qd1_mean_us: read,
            write_sync_qd1_mean_us: write,
            ..Default::default()
        };
        let placement = |name: &str, data: &str, wal: &str| PlacementRecord {
            name: name.into(),
            data_device: data.into(),
            wal_device: wal.into(),
            ..Default::default()
        };
        Manifest {
            emulated: true,
            devices: vec![
                dev("das-data", "nvme"),
                dev("das-wal", "nvme"),
                dev("lb-data", "nvme-tcp"),
                dev("lb-wal", "nvme-tcp"),
            ],
            device_probes: vec![
                probe("das-data", 60.0, 700.0),
                probe("das-wal", 58.0, 720.0),
                probe("lb-data", lb_read, 1500.0),
                probe("lb-wal", lb_read, 1450.0),
            ],
            placements: vec![placement("das", "das-data", "das-wal"), placement("lb", "lb-data", "lb-wal")],
            ..Default::default()
        }
    }

    #[test]
    fn ratios_of_real_classes() {
        let (r, w) = class_ratio("nvme-tcp", "nvme").unwrap();
        assert_eq!((r, w), ((1.08, 1.8), (1.2, 3.0)));
        let (r, _) = class_ratio("nvme", "nvme-tcp").unwrap();
        assert!((r.0 - 1.0 / 1.8).abs() < 1e-12 && (r.1 - 1.0 / 1.08).abs() < 1e-12, "the inverse");
        assert_eq!(class_ratio("nvme", "nvme").unwrap().0, (1.0 / 1.5, 1.5));
        assert!(class_ratio("pmem", "hdd").is_none());
    }

    #[test]
    fn the_emulated_nvme_tcp_stack_is_far_from_the_class() {
        // Emulated NVMe/TCP reads take 4x as long as the emulated NVMe's: outside 1.08-1.8x.
        let m = manifest(240.0);
        let d = distortions(&m, "lb", "das");
        assert_eq!(d.len(), 1, "write+fdatasync 2.1x is inside 1.2-3.0x: {d:?}");
        assert_eq!((d[0].role, d[0].ratio), ("data", 4.0));
        let n = note(&m, "lb", "das").unwrap();
        assert!(n.starts_with("emulation cannot reproduce this: data reads (4 KiB, QD1) on lb-data (emulated nvme-tcp) take 240 µs against 60 µs on das-data (emulated nvme), 4.0x as long; real nvme-tcp against nvme is 1.1x-1.8x"), "{n}");
        assert!(d[0].calibration().contains("backing = \"nbd\""), "{}", d[0].calibration());
        // Near the class: no note.
        assert!(note(&manifest(80.0), "lb", "das").is_none());
        // Real tiers measure the classes themselves.
        let mut real = manifest(240.0);
        real.emulated = false;
        assert!(note(&real, "lb", "das").is_none());
        // How far, whether inside the ratio or not.
        let far = how_far(&manifest(80.0), "lb", "das").unwrap();
        assert_eq!(
            far,
            "data reads (QD1) 80 µs on lb-data (within the class's 60-160 µs) and 60 µs on das-data (within the class's 50-120 µs), ratio 1.33x against 1.1x-1.8x for real nvme-tcp / nvme; WAL write+fdatasync (QD1) 1450 µs on lb-wal (7.2x above the class's 40-200 µs) and 720 µs on das-wal (7.2x above the class's 20-100 µs), ratio 2.01x against 1.2x-3.0x for real nvme-tcp / nvme"
        );
        assert!(how_far(&real, "lb", "das").is_none());
    }
}
