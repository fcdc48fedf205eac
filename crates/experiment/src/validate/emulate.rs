//! `[emulate]`: the overrides that make a study fit a small machine. One resolver picks, for every
//! overridable key, the value that applies together with the key and span it was written at, so
//! an error about the value names the line and key it came from: `emulate.<key>` when the
//! override applies, the file's own key otherwise.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use crate::raw::{RawEmulate, RawMemoryLimit};

/// The value that applies and the key it was written under.
pub(crate) struct Chosen<'a, T> {
    pub value: &'a Spanned<T>,
    pub key: String,
}

impl<'a, T> Chosen<'a, T> {
    pub fn get(&self) -> &'a T {
        self.value.get_ref()
    }

    pub fn span(&self) -> Option<Range<usize>> {
        Some(self.value.span())
    }
}

/// One `[emulate]` key, with its value when it applies.
pub(crate) struct Override<'a, T> {
    value: Option<&'a Spanned<T>>,
    key: &'static str,
}

impl<'a, T> Override<'a, T> {
    /// The override, when it applies.
    pub fn get(&self) -> Option<Chosen<'a, T>> {
        self.value.map(|value| Chosen { value, key: self.key.to_string() })
    }

    /// The override when it applies, else the file's own value (written under `own_key`).
    pub fn or(&self, own: Option<&'a Spanned<T>>, own_key: impl Into<String>) -> Option<Chosen<'a, T>> {
        self.get().or_else(|| own.map(|value| Chosen { value, key: own_key.into() }))
    }
}

type Clients = Vec<Spanned<toml::Value>>;
type Settings = BTreeMap<String, Spanned<toml::Value>>;

/// Every `[emulate]` key that replaces or adds to a value of the file.
pub(crate) struct Overrides<'a> {
    /// The file has an `[emulate]` section.
    pub present: bool,
    pub scale: Override<'a, u32>,
    pub warehouses: Override<'a, u32>,
    pub duration: Override<'a, String>,
    pub ramp_up: Override<'a, String>,
    pub clients: Override<'a, Clients>,
    pub threads: Override<'a, u32>,
    pub memory_limits: Override<'a, Vec<Spanned<RawMemoryLimit>>>,
    pub repetitions: Override<'a, u32>,
    pub device_probe: Override<'a, String>,
    /// The size of emulated devices that give none. It applies without `--emulate` too: the
    /// resolved devices record their emulation either way.
    pub device_size: Override<'a, String>,
    /// Added on top of every profile's settings.
    pub settings: Override<'a, Settings>,
    pub apply_kernel_settings: bool,
}

impl<'a> Overrides<'a> {
    pub fn new(section: Option<&'a RawEmulate>, emulating: bool) -> Self {
        let applies = section.filter(|_| emulating);
        // The key is the field's name, so the two cannot drift apart.
        macro_rules! from {
            ($section:expr, $field:ident) => {
                Override {
                    value: $section.and_then(|e| e.$field.as_ref()),
                    key: concat!("emulate.", stringify!($field)),
                }
            };
        }
        Overrides {
            present: section.is_some(),
            scale: from!(applies, scale),
            warehouses: from!(applies, warehouses),
            duration: from!(applies, duration),
            ramp_up: from!(applies, ramp_up),
            clients: from!(applies, clients),
            threads: from!(applies, threads),
            memory_limits: from!(applies, memory_limits),
            repetitions: from!(applies, repetitions),
            device_probe: from!(applies, device_probe),
            device_size: from!(section, device_size),
            settings: from!(applies, settings),
            apply_kernel_settings: section.and_then(|e| e.apply_kernel_settings).unwrap_or(false),
        }
    }
}
