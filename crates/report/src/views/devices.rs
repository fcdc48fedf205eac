//! Device charts: I/O per device, and I/O against the device's fio ceiling.

use plotters::style::RGBColor;

use super::{Ctx, describe_group, file_stem, footnote, groups};
use crate::charts::{self, Bar, BarChart, BarGroup};
use stats::Estimate;

/// Read and write IOPS and bandwidth per device of each placement (mean over the runs).
pub(super) fn device_io(cx: &mut Ctx) {
    let set = cx.set;
    let read = RGBColor(0x4C, 0x72, 0xB0);
    let write = RGBColor(0xC4, 0x4E, 0x52);
    for g in groups(cx.summary) {
        let c0 = g[0];
        let mut iops_groups = Vec::new();
        let mut mbs_groups = Vec::new();
        for c in &g {
            let runs = set.device_runs(&c.key);
            let Some(first) = runs.first() else { continue };
            for d in &first.devices {
                let pick = |f: fn(&results::record::DeviceIo) -> f64| {
                    let v: Vec<f64> = runs
                        .iter()
                        .filter_map(|r| r.devices.iter().find(|x| x.kernel_name == d.kernel_name))
                        .map(f)
                        .collect();
                    Estimate::of(&v)
                };
                let label = device_label(&c.key.placement, d);
                let bars = |r: Option<Estimate>, w: Option<Estimate>| {
                    [(r, "read", read), (w, "write", write)]
                        .into_iter()
                        .filter_map(|(e, name, color)| {
                            let e = e?;
                            Some(Bar {
                                legend: name.to_string(),
                                value: e.mean,
                                error: e.ci95.is_finite().then_some(e.ci95),
                                range: None,
                                color,
                                annotation: String::new(),
                                within_noise: false,
                            })
                        })
                        .collect::<Vec<_>>()
                };
                iops_groups
                    .push(BarGroup { label: label.clone(), bars: bars(pick(|x| x.read_iops), pick(|x| x.write_iops)) });
                mbs_groups.push(BarGroup { label, bars: bars(pick(|x| x.read_mb_s), pick(|x| x.write_mb_s)) });
            }
        }
        if iops_groups.is_empty() {
            continue;
        }
        for (kind, groups, y, decimals) in [
            ("iops", iops_groups, "I/O operations per second (mean over the run)", 0),
            ("bandwidth", mbs_groups, "MB/s (mean over the run)", 1),
        ] {
            let chart = BarChart {
                title: format!(
                    "{}: device {} per placement",
                    set.manifest.experiment_name,
                    if kind == "iops" { "IOPS" } else { "bandwidth" }
                ),
                subtitle: format!("{}; from /proc/diskstats, each device of the placement", describe_group(c0)),
                x_label: "placement: device (role)".into(),
                y_label: y.into(),
                groups,
                footnote: footnote(set, &g, true),
                value_decimals: decimals,
                value_suffix: "",
                reference: None,
            };
            cx.bar(chart, file_stem(kind, c0), &describe_group(c0));
        }
    }
}

/// Peak device IOPS during the runs as a share of what fio measured on that device: writes
/// against the 8 KiB write+fdatasync ceiling, reads against the 4 KiB QD32 random-read ceiling.
pub(super) fn ceilings(cx: &mut Ctx) {
    let set = cx.set;
    if set.manifest.device_probes.is_empty() {
        return;
    }
    let read = RGBColor(0x4C, 0x72, 0xB0);
    let write = RGBColor(0xC4, 0x4E, 0x52);
    for g in groups(cx.summary) {
        let c0 = g[0];
        let mut groups = Vec::new();
        for c in &g {
            let runs = set.device_runs(&c.key);
            let Some(first) = runs.first() else { continue };
            for d in &first.devices {
                let Some(probe) = set.manifest.device_probes.iter().find(|p| p.device == d.device) else { continue };
                let peak = |f: fn(&results::record::DeviceIo) -> f64| {
                    runs.iter()
                        .filter_map(|r| r.devices.iter().find(|x| x.kernel_name == d.kernel_name))
                        .map(f)
                        .fold(0.0, f64::max)
                };
                let mut bars = Vec::new();
                // WAL writes are small synchronous writes: their ceiling is fio's write+fdatasync
                // rate. Data, table and index reads are random reads: their ceiling is fio's QD32
                // random-read rate. (Buffered data writeback has no probe of its own.)
                let holds_wal = d.role.contains("wal");
                let holds_data = d.role.split('+').any(|r| r != "wal");
                for (relevant, value, ceiling, name, color) in [
                    (
                        holds_wal,
                        peak(|x| x.peak_write_iops),
                        probe.wal_write_iops,
                        "WAL device: peak write IOPS / fio 8k write+fdatasync IOPS",
                        write,
                    ),
                    (
                        holds_data,
                        peak(|x| x.peak_read_iops),
                        probe.randread_iops,
                        "data device: peak read IOPS / fio 4k random-read QD32 IOPS",
                        read,
                    ),
                ] {
                    if relevant && ceiling > 0.0 {
                        bars.push(Bar {
                            legend: name.to_string(),
                            value: value / ceiling * 100.0,
                            error: None,
                            range: None,
                            color,
                            annotation: format!(
                                "{} / {}",
                                charts::group_digits(value, 0),
                                charts::group_digits(ceiling, 0)
                            ),
                            within_noise: false,
                        });
                    }
                }
                groups.push(BarGroup { label: device_label(&c.key.placement, d), bars });
            }
        }
        if groups.is_empty() {
            continue;
        }
        let chart = BarChart {
            title: format!("{}: device I/O against its fio ceiling", set.manifest.experiment_name),
            subtitle: format!("{}; peak 1-second IOPS as % of fio's figure for the same device", describe_group(c0)),
            x_label: "placement: device (role)".into(),
            y_label: "% of the device's fio ceiling".into(),
            groups,
            footnote: footnote(set, &g, false),
            value_decimals: 0,
            value_suffix: "%",
            reference: Some((100.0, "fio ceiling = 100%".into())),
        };
        cx.bar(chart, file_stem("ceiling", c0), &describe_group(c0));
    }
}

/// `placement: device`, with the roles when the device holds several.
fn device_label(placement: &str, d: &results::record::DeviceIo) -> String {
    if d.role.contains('+') {
        format!("{placement}: {} ({})", d.device, d.role)
    } else {
        format!("{placement}: {}", d.device)
    }
}
