//! `[kernel]`: sysctls, transparent huge pages and the CPU governor the study changed.

use std::collections::BTreeMap;

use toml::Spanned;

use super::Validator;
use super::emulate::Overrides;
use crate::LoadOptions;
use crate::keyword::Keyword;
use crate::model::KernelSettings;
use crate::raw::RawKernel;
use crate::spans::span;

impl Validator<'_> {
    pub(super) fn kernel(
        &mut self,
        k: Option<&Spanned<RawKernel>>,
        ov: &Overrides,
        opts: &LoadOptions,
    ) -> KernelSettings {
        let Some(k) = k.map(|k| k.get_ref()) else { return KernelSettings::default() };
        let mut out = KernelSettings {
            sysctls: BTreeMap::new(),
            transparent_hugepages: None,
            cpu_governor: k.cpu_governor.clone(),
            apply: !opts.emulate || ov.apply_kernel_settings,
        };
        for (key, v) in self.sysctls(&k.sysctls, "kernel.sysctls") {
            if !key.contains('.') || key.contains("..") || key.contains('/') {
                self.err(None, format!("kernel.sysctls.{key}"), "a sysctl name looks like vm.swappiness");
                continue;
            }
            out.sysctls.insert(key, v);
        }
        out.transparent_hugepages = k
            .transparent_hugepages
            .as_ref()
            .and_then(|t| self.keyword(t, "kernel.transparent_hugepages"))
            .map(|t| t.word().to_string());
        if !out.is_empty() && !out.apply {
            self.warnings.push("the [kernel] settings are recorded but not applied when emulating (set [emulate] apply_kernel_settings = true to apply them)".into());
        }
        out
    }

    /// Kernel settings as strings (sysctl names have dots, unlike PostgreSQL settings).
    fn sysctls(&mut self, map: &BTreeMap<String, Spanned<toml::Value>>, key: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, v) in map {
            match v.get_ref() {
                toml::Value::String(s) => out.push((k.clone(), s.clone())),
                toml::Value::Integer(i) => out.push((k.clone(), i.to_string())),
                _ => self.err(span(v), format!("{key}.{k}"), "a kernel setting is a string or an integer"),
            }
        }
        out
    }
}
