//! The executor's checks: what must hold before a step changes anything (safety rails, tools,
//! sizes, identities), read-only.

use super::*;

/// The size of a PMD (huge-page) mapping on x86-64: an fsdax namespace's `align` must be a
/// multiple of it for DAX to map 2 MiB pages.
pub(super) const PMD_BYTES: u64 = 2 << 20;

impl Executor<'_> {
    pub(super) fn check(&mut self, n: usize, check: &Check) -> Result<(), StepError> {
        match check {
            Check::IsBlockDevice { device } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_block_device(s, Path::new(&dev))).map_err(StepError::Refused)
            }
            Check::Identity { device, model, serial } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_identity(s, Path::new(&dev), model.as_deref(), serial.as_deref()))
                    .map_err(StepError::Refused)
            }
            Check::NotInUse { device, allow_wipe } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_not_in_use(s, Path::new(&dev), *allow_wipe)).map_err(StepError::Refused)
            }
            Check::PmemFsdax { namespace, allow_reconfigure, dax } => {
                self.check_pmem_fsdax(n, namespace, *allow_reconfigure, *dax)
            }
            Check::PmemNotInUse { namespace, allow_wipe } => self.check_pmem_not_in_use(n, namespace, *allow_wipe),
            Check::NvmeNotConnected { nqn } => {
                let subsystems = self.nvme_subsystems(n)?;
                safety::check_nvme_not_connected(&subsystems, nqn).map_err(StepError::Refused)
            }
            Check::NvmeCli { secret } => {
                let cmd = CommandLine::new("nvme").arg("version");
                let out = self.probe(n, |s| s.run(&cmd, Duration::from_secs(30))).map_err(|e| e.to_string())?;
                let v = nvme::parse_version(&out.stdout)
                    .map_err(|e| format!("`nvme version` exited with status {}: {e}", out.status))?;
                if *secret && !v.has_dhchap() {
                    return Err(format!(
                        "nvme-cli {} cannot authenticate with DH-HMAC-CHAP: nvme connect has no --dhchap-secret (or --config) before nvme-cli 2.0, and this experiment file gives a secret; install nvme-cli 2.0 or later, or connect without a secret",
                        v.text
                    )
                    .into());
                }
                self.nvme_cli = Some(v);
                Ok(())
            }
            Check::NvmeHostIdentity { host_nqn, host_id } => match (host_nqn, host_id) {
                (Some(nqn), None) if crate::build::uuid_of_host_nqn(nqn).is_none() => Err(format!(
                    "host_nqn {nqn} is given without host_id: nvme-cli would pair it with this machine's /etc/nvme/hostid, and Linux 6.5 and later refuse a host ID already known with another host NQN (EINVAL); give host_id as well (a nqn.2014-08.org.nvmexpress:uuid:<uuid> host NQN implies its UUID)"
                )
                .into()),
                (None, Some(id)) => Err(format!(
                    "host_id {id} is given without host_nqn; give both (pgtier passes them as a pair) or neither (then the machine's /etc/nvme/hostnqn and hostid are used)"
                )
                .into()),
                _ => Ok(()),
            },
            Check::NvmeNamespaceUuid { device, uuid } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_namespace_uuid(s, Path::new(&dev), uuid)).map_err(StepError::Refused)
            }
            Check::NvmeNamespaceNamed { device, id } => {
                let dev = self.value(device)?;
                self.probe(n, |s| safety::check_namespace_named(s, Path::new(&dev), id)).map_err(StepError::Refused)
            }
            Check::Room { device, bytes, what } => self.check_room(device, *bytes, what),
            Check::PmemRoom { namespace, bytes, what } => {
                let list = self.ndctl_list(n)?;
                let size = ndctl::find(&list, namespace).and_then(|ns| ns.size_bytes).ok_or_else(|| {
                    format!("ndctl list -N -i gives no size for namespace {namespace}, so pgtier cannot check that it holds {what}")
                })?;
                room(&format!("namespace {namespace}"), size, *bytes, what)
            }
        }
    }

    /// The namespace exists, is enabled and in fsdax mode, unless it may be reconfigured.
    fn check_pmem_fsdax(
        &mut self,
        n: usize,
        namespace: &str,
        allow_reconfigure: bool,
        dax: DaxPolicy,
    ) -> Result<(), StepError> {
        let list = self.ndctl_list(n)?;
        let Some(ns) = ndctl::find(&list, namespace) else {
            return Err(format!(
                "ndctl list -N -i shows no namespace {namespace:?} (found: {})",
                if list.is_empty() {
                    "none: no PMem here".to_string()
                } else {
                    list.iter().map(|n| n.dev.clone()).collect::<Vec<_>>().join(", ")
                }
            )
            .into());
        };
        if !ns.enabled && !allow_reconfigure {
            // ndctl 76 lists a disabled namespace in raw mode, whatever it was made as.
            return Err(format!(
                "namespace {namespace} is disabled (ndctl list -N -i shows it as {} mode, which is what ndctl shows for any disabled namespace); enable it (ndctl enable-namespace {namespace}) or set allow_reconfigure = true to let pgtier run ndctl create-namespace -f -e {namespace} -m fsdax (destroys its data)",
                ns.mode.as_str()
            )
            .into());
        }
        if ns.mode != ndctl::PmemMode::Fsdax && !allow_reconfigure {
            return Err(format!(
                "namespace {namespace} is in {} mode, not fsdax; set allow_reconfigure = true to let pgtier run ndctl create-namespace -f -e {namespace} -m fsdax (destroys its data)",
                ns.mode.as_str()
            )
            .into());
        }
        // A namespace pgtier re-makes is made with --align=2M (and checked then); one kept as it
        // is must already allow huge-page mappings. No align shown is no evidence either way:
        // said, not passed over.
        if let (true, ndctl::PmemMode::Fsdax, None) = (ns.enabled, &ns.mode, ns.align)
            && dax != DaxPolicy::Off
            && !allow_reconfigure
        {
            self.notes.push(format!(
                "namespace {namespace} shows no align in ndctl list -N -i (an ndctl older than the field?), so pgtier cannot tell whether DAX maps its files with the 2 MiB pages (PMD) the PMem guides' layout is for or with 4 KiB ones; `ndctl list -N -v` may show it, and ndctl create-namespace -f -e {namespace} -m fsdax --align=2M makes sure (destroys its data)"
            ));
        }
        if let (true, ndctl::PmemMode::Fsdax, Some(align)) = (ns.enabled, &ns.mode, ns.align)
            && dax != DaxPolicy::Off
            && !align.is_multiple_of(PMD_BYTES)
        {
            let why = format!(
                "namespace {namespace} has align {align} ({}, ndctl list -N -i): DAX can map its files with 4 KiB pages only, not the 2 MiB ones (PMD) the PMem guides' layout is for, so page faults, TLB misses and throughput differ from a 2 MiB-aligned namespace's",
                crate::plan::human_bytes(align)
            );
            let fix = format!(
                "re-create it with ndctl create-namespace -f -e {namespace} -m fsdax --align=2M (destroys its data)"
            );
            if dax == DaxPolicy::Required {
                return Err(format!("{why}; {fix}, or set dax = \"optional\" to measure it with small pages").into());
            }
            self.notes.push(format!("{why} (dax = \"optional\": measured as it is; {fix} for huge pages)"));
        }
        Ok(())
    }

    /// Nothing uses the namespace's block or character device, and a device-DAX or
    /// uninspectable namespace is only touched with allow_wipe.
    fn check_pmem_not_in_use(&mut self, n: usize, namespace: &str, allow_wipe: bool) -> Result<(), StepError> {
        let list = self.ndctl_list(n)?;
        let ns = ndctl::find(&list, namespace)
            .ok_or_else(|| format!("ndctl list -N -i shows no namespace {namespace:?}"))?
            .clone();
        if let Some(b) = &ns.blockdev {
            let dev = PathBuf::from("/dev").join(b.trim_start_matches("/dev/"));
            self.probe(n, |s| safety::check_block_device(s, &dev)).map_err(StepError::Refused)?;
            self.probe(n, |s| safety::check_not_in_use(s, &dev, allow_wipe)).map_err(StepError::Refused)?;
        }
        if let Some(c) = &ns.chardev {
            let dev = PathBuf::from("/dev").join(c.trim_start_matches("/dev/"));
            self.probe(n, |s| safety::check_not_open(s, &dev)).map_err(StepError::Refused)?;
            if !allow_wipe {
                // A device-DAX namespace holds whatever an application wrote through its
                // mapping; no tool can tell whether that matters.
                return Err(format!(
                    "namespace {namespace} is a device-DAX namespace ({}); reconfiguring it destroys whatever an application stored in it. Set allow_wipe = true as well if it may be wiped",
                    dev.display()
                )
                .into());
            }
        }
        if ns.blockdev.is_none() && ns.chardev.is_none() && !allow_wipe {
            // Disabled or raw: there is no device node to look for signatures or users.
            return Err(format!(
                "namespace {namespace} has no block or character device to inspect (it is disabled or raw), so pgtier cannot tell whether it holds data; set allow_wipe = true if it may be wiped"
            )
            .into());
        }
        Ok(())
    }

    /// The device has room for `bytes` after XFS's own use.
    fn check_room(&mut self, device: &Value, bytes: u64, what: &str) -> Result<(), StepError> {
        let dev = self.value(device)?;
        let size_file = Path::new("/sys/class/block").join(safety::kernel_name(Path::new(&dev))).join("size");
        let sectors: u64 = self
            .sys
            .read_to_string(&size_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| format!("cannot read the size of {dev} ({})", size_file.display()))?;
        room(&dev, sectors * 512, bytes, what)
    }
}

/// A device of `size` bytes holds `bytes` once XFS has taken a few percent for its log and
/// metadata.
fn room(dev: &str, size: u64, bytes: u64, what: &str) -> Result<(), StepError> {
    let usable = size / 100 * 97;
    if usable < bytes {
        return Err(format!(
            "{dev} has room for about {} after XFS's own use, and {what} needs {}",
            crate::plan::human_bytes(usable),
            crate::plan::human_bytes(bytes)
        )
        .into());
    }
    Ok(())
}
