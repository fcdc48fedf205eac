//! `[[placement]]`: where PGDATA, pg_wal and tablespaces live, and the baseline among them.

use std::collections::BTreeSet;

use tiers::spec::DeviceSpec;
use toml::Spanned;

use super::Validator;
use crate::LoadOptions;
use crate::model::{Build, Placement, ProfileInfo};
use crate::raw::{RawFile, RawPlacement};
use crate::spans::span;

/// Every profile a server runs: the matrix's, then the placements' own (`[[placement]]
/// profile`) that the matrix does not run, each once.
pub(crate) fn run_profiles<'a>(matrix: &'a [ProfileInfo], placements: &'a [Placement]) -> Vec<&'a ProfileInfo> {
    let mut out: Vec<&ProfileInfo> = Vec::new();
    for p in matrix.iter().chain(placements.iter().filter_map(|p| p.profile.as_ref())) {
        if !out.iter().any(|o| o.profile.name == p.profile.name) {
            out.push(p);
        }
    }
    out
}

impl Validator<'_> {
    pub(super) fn placements(&mut self, raw: &RawFile, devices: &[DeviceSpec]) -> Vec<Placement> {
        let device_names: Vec<String> = raw.device.iter().map(|d| d.get_ref().name.get_ref().clone()).collect();
        let mut placements = Vec::new();
        let mut seen = BTreeSet::new();
        for p in &raw.placement {
            placements.push(self.placement(p, &device_names, &mut seen));
        }
        if raw.placement.is_empty() {
            self.err(span(&raw.experiment), "placement", "the experiment defines no [[placement]]");
        }
        let baseline = &raw.experiment.get_ref().baseline;
        let placement_names: Vec<&str> = placements.iter().map(|p| p.name.as_str()).collect();
        if !placement_names.contains(&baseline.get_ref().as_str()) {
            self.err(
                span(baseline),
                "experiment.baseline",
                format!(
                    "no placement named {:?}; defined placements: {}",
                    baseline.get_ref(),
                    placement_names.join(", ")
                ),
            );
        }
        for d in devices {
            if !placements.iter().any(|p| p.devices().contains(&d.name.as_str())) {
                self.warnings.push(format!("device {:?} is used by no placement and will not be provisioned", d.name));
            }
        }
        placements
    }

    fn placement(
        &mut self,
        p: &Spanned<RawPlacement>,
        device_names: &[String],
        seen: &mut BTreeSet<String>,
    ) -> Placement {
        let r = p.get_ref();
        let n = r.name.get_ref().clone();
        self.name(&r.name, &format!("placement[{n}].name"));
        self.unique(seen, "placement", &r.name);
        let mut refs: Vec<(String, &Spanned<String>)> = vec![("data".into(), &r.data), ("wal".into(), &r.wal)];
        for (role, dev) in &r.tablespaces {
            if !runner::matrix::TABLESPACE_ROLES.contains(&role.as_str()) {
                self.err(
                    span(dev),
                    format!("placement[{n}].tablespaces.{role}"),
                    format!("unknown tablespace role {role:?}; use tables, indexes or temp"),
                );
            }
            refs.push((format!("tablespaces.{role}"), dev));
        }
        for (field, value) in refs {
            if !device_names.contains(value.get_ref()) {
                self.err(
                    span(value),
                    format!("placement[{n}].{field}"),
                    format!("no device named {:?}; defined devices: {}", value.get_ref(), device_names.join(", ")),
                );
            }
        }
        Placement {
            name: n,
            description: r.description.clone().unwrap_or_default(),
            data: r.data.get_ref().clone(),
            wal: r.wal.get_ref().clone(),
            tablespaces: r.tablespaces.iter().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect(),
            profile: None,
            build: None,
        }
    }

    /// Each placement's own build (`[[placement]] build`), one of `[postgres] builds`. Once one
    /// placement names a build, every placement runs one (the others the first listed), and the
    /// builds stop being a matrix dimension.
    pub(super) fn placement_builds(&mut self, raw: &RawFile, placements: &mut [Placement], builds: &[Build]) {
        let named: Vec<(usize, &Spanned<String>)> =
            raw.placement.iter().enumerate().filter_map(|(i, r)| r.get_ref().build.as_ref().map(|b| (i, b))).collect();
        if named.is_empty() {
            return;
        }
        let listed = raw.postgres.as_ref().is_some_and(|p| p.get_ref().builds.is_some());
        let names: Vec<&str> = builds.iter().map(|b| b.name.as_str()).collect();
        for &(i, b) in &named {
            let key = format!("placement[{}].build", placements[i].name);
            if !listed {
                self.err(
                    span(b),
                    key,
                    format!(
                        "no build {:?}: name the builds in [postgres] builds, in place of bin_dir (builds = [{{ name = \"pg15\", bin_dir = \"auto\" }}, {{ name = \"pg17\", bin_dir = \"/usr/lib/postgresql/17/bin\" }}]), then pick one here",
                        b.get_ref()
                    ),
                );
            } else if !names.contains(&b.get_ref().as_str()) {
                self.err(
                    span(b),
                    key,
                    format!(
                        "no build named {:?} in [postgres] builds; known builds: {}",
                        b.get_ref(),
                        names.join(", ")
                    ),
                );
            }
        }
        let Some(first) = builds.first() else { return };
        for (i, p) in placements.iter_mut().enumerate() {
            let own = named.iter().find(|(j, _)| *j == i).map(|(_, b)| b.get_ref().clone());
            p.build = Some(own.unwrap_or_else(|| first.name.clone()));
        }
        for b in builds {
            if !placements.iter().any(|p| p.build.as_deref() == Some(b.name.as_str())) {
                self.warnings.push(format!(
                    "build {:?} of [postgres] builds is run by no placement (placements name their builds, so builds are not a matrix dimension)",
                    b.name
                ));
            }
        }
    }

    /// Each placement's own profile (`[[placement]] profile`), loaded as the matrix's are. It
    /// replaces the matrix's profile, so the matrix may run only one.
    pub(super) fn placement_profiles(
        &mut self,
        raw: &RawFile,
        placements: &mut [Placement],
        pg: &super::postgres::PostgresSection,
        opts: &LoadOptions,
    ) {
        let matrix = &pg.profiles;
        for (r, p) in raw.placement.iter().zip(placements.iter_mut()) {
            let Some(name) = &r.get_ref().profile else { continue };
            let key = format!("placement[{}].profile", p.name);
            if matrix.len() > 1 {
                let names: Vec<&str> = matrix.iter().map(|m| m.profile.name.as_str()).collect();
                self.err(
                    span(name),
                    key,
                    format!(
                        "a placement's profile replaces the matrix's, and [postgres] profiles runs {} ({}): list one profile there, or leave this key out",
                        names.len(),
                        names.join(", ")
                    ),
                );
                continue;
            }
            p.profile = self.layered_profile(name, &key, &pg.layers, opts);
        }
    }
}
