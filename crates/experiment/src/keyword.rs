//! Enum-valued keys (`class`, `dax`, `backing`, `order`, workload `kind`, `mode`, `side`, fault
//! `kind`, `builtin`, `transparent_hugepages`): each enum spells its words in one place, and the
//! file's text is parsed into the enum in `raw`. A word that is not one of them does not stop the
//! parse: it is kept, and validation reports it with its key and line together with every other
//! problem of the file.

use runner::matrix::Order;
use runner::pgbench::Builtin;
use serde::{Deserialize, Deserializer};
use tiers::spec::{Backing, DaxPolicy, DeviceClass};

use crate::model::FaultKind;

/// A value from a fixed set of words.
pub(crate) trait Keyword: Copy + 'static {
    /// Every variant.
    const ALL: &'static [Self];
    /// How the file spells it.
    fn word(self) -> &'static str;
    /// What to say about `text`, which is none of the words (lists the words allowed).
    fn unknown(text: &str) -> String;

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.word() == text)
    }
}

/// A keyword as written: one of the words, or the text that is none of them.
#[derive(Debug)]
pub(crate) enum Word<K> {
    Known(K),
    Unknown(String),
}

impl<'de, K: Keyword> Deserialize<'de> for Word<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(K::parse(&text).map_or(Word::Unknown(text), Word::Known))
    }
}

/// `impl Keyword for T { ALL and word from the pairs; unknown from the closure }`.
macro_rules! keyword {
    ($t:ty { $($v:path => $w:literal),+ $(,)? } $unknown:expr) => {
        impl Keyword for $t {
            const ALL: &'static [Self] = &[$($v),+];
            fn word(self) -> &'static str {
                match self { $($v => $w),+ }
            }
            fn unknown(text: &str) -> String {
                let f: fn(&str) -> String = $unknown;
                f(text)
            }
        }
    };
}

keyword!(DeviceClass { DeviceClass::Nvme => "nvme", DeviceClass::Pmem => "pmem", DeviceClass::NvmeTcp => "nvme-tcp" }
    |t| format!("unknown class {t:?}; use \"nvme\" (any local block device), \"pmem\" or \"nvme-tcp\""));

keyword!(DaxPolicy { DaxPolicy::Off => "off", DaxPolicy::Optional => "optional", DaxPolicy::Required => "required" }
    |t| format!("{t:?}: use \"off\", \"optional\" or \"required\""));

keyword!(Backing {
    Backing::LoopFile => "loop-file", Backing::Zram => "zram", Backing::TmpfsLoop => "tmpfs-loop", Backing::Nbd => "nbd",
} |t| format!("unknown backing {t:?}; use \"loop-file\", \"zram\", \"tmpfs-loop\" or \"nbd\""));

keyword!(crate::model::Design { crate::model::Design::Slices => "slices", crate::model::Design::Runs => "runs" }
    |t| format!("{t:?}: use \"slices\" (every placement's server up at once, the load alternating in short slices) or \"runs\" (a server start, ramp-up and measured run per cell and repetition)"));

keyword!(Order { Order::Interleaved => "interleaved", Order::Sequential => "sequential" }
    |t| format!("{t:?}: use \"interleaved\" or \"sequential\""));

keyword!(Builtin {
    Builtin::TpcbLike => "tpcb-like", Builtin::SimpleUpdate => "simple-update", Builtin::SelectOnly => "select-only",
} |t| format!("unknown pgbench builtin {t:?}; use \"tpcb-like\", \"simple-update\" or \"select-only\""));

keyword!(tpcc::Mode { tpcc::Mode::Spec => "spec", tpcc::Mode::HammerDb => "hammerdb", tpcc::Mode::HammerDbFaithful => "hammerdb-faithful" }
    |t| format!("{t:?}: use \"spec\" (the TPC-C specification), \"hammerdb\" (HammerDB's mix and draws on correct transactions) or \"hammerdb-faithful\" (HammerDB 4.12's schema, loader and functions, defects included, for NOPM next to HammerDB's)"));

keyword!(tpcc::Side { tpcc::Side::ServerProcedures => "procedures", tpcc::Side::ClientSql => "client-sql" }
    |t| format!("{t:?}: use \"procedures\" (server-side PL/pgSQL, as HammerDB) or \"client-sql\""));

keyword!(FaultKind {
    FaultKind::IoErrors => "io-errors",
    FaultKind::FillDevice => "fill-device",
    FaultKind::KillServer => "kill-server",
    FaultKind::StopTarget => "stop-target",
    FaultKind::HangClient => "hang-client",
} |t| format!("unknown fault {t:?}; use io-errors, fill-device, kill-server, stop-target or hang-client"));

/// A workload's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WorkloadKindWord {
    Pgbench,
    Tpcc,
}

keyword!(WorkloadKindWord { WorkloadKindWord::Pgbench => "pgbench", WorkloadKindWord::Tpcc => "tpcc" }
    |t| format!("unknown workload kind {t:?}; use \"pgbench\" or \"tpcc\""));

/// `[kernel] transparent_hugepages` (the resolved settings keep the word, as the kernel takes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransparentHugepages {
    Always,
    Madvise,
    Never,
}

keyword!(TransparentHugepages {
    TransparentHugepages::Always => "always",
    TransparentHugepages::Madvise => "madvise",
    TransparentHugepages::Never => "never",
} |_| "use \"always\", \"madvise\" or \"never\"".into());

impl crate::model::Design {
    /// The design a word names (`slices`, `runs`), as the file spells it.
    pub fn from_word(text: &str) -> Option<crate::model::Design> {
        <crate::model::Design as Keyword>::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_design_from_its_word() {
        assert_eq!(crate::model::Design::from_word("slices"), Some(crate::model::Design::Slices));
        assert_eq!(crate::model::Design::from_word("runs"), Some(crate::model::Design::Runs));
        assert_eq!(crate::model::Design::from_word("Slices"), None);
    }

    /// Every word parses back to its variant, the message about a wrong word names them all, and
    /// types that serde also spells (the manifest) spell them the same way.
    fn check<K: Keyword + PartialEq + std::fmt::Debug>(serde_word: impl Fn(K) -> Option<String>) {
        let message = K::unknown("nonsense");
        for &k in K::ALL {
            assert_eq!(K::parse(k.word()), Some(k));
            assert!(message.contains(k.word()), "{message:?} lists {:?}", k.word());
            if let Some(s) = serde_word(k) {
                assert_eq!(s, k.word(), "serde spells {k:?} as the file does");
            }
        }
        assert_eq!(K::parse("nonsense"), None);
    }

    fn serde_word<T: serde::Serialize>(t: T) -> Option<String> {
        toml::Value::try_from(t).ok().and_then(|v| v.as_str().map(str::to_string))
    }

    #[test]
    fn every_keyword_lists_its_words() {
        check::<DeviceClass>(serde_word);
        check::<DaxPolicy>(serde_word);
        check::<Backing>(serde_word);
        check::<Order>(serde_word);
        check::<Builtin>(serde_word);
        check::<FaultKind>(serde_word);
        check::<tpcc::Mode>(serde_word);
        check::<tpcc::Side>(serde_word);
        check::<WorkloadKindWord>(|_| None);
        check::<TransparentHugepages>(|_| None);
    }

    #[test]
    fn words_keep_what_is_not_a_keyword() {
        #[derive(Deserialize)]
        struct T {
            class: Word<DeviceClass>,
        }
        let t: T = toml::from_str("class = \"nvme-tcp\"").unwrap();
        assert!(matches!(t.class, Word::Known(DeviceClass::NvmeTcp)));
        let t: T = toml::from_str("class = \"optane\"").unwrap();
        assert!(matches!(t.class, Word::Unknown(s) if s == "optane"));
        let e = toml::from_str::<T>("class = 5").err().unwrap();
        assert!(e.message().contains("expected a string"), "{e}");
    }
}

keyword!(crate::model::ClaimMetric {
    crate::model::ClaimMetric::Tps => "tps",
    crate::model::ClaimMetric::Latency => "latency",
    crate::model::ClaimMetric::LatencyP99 => "latency-p99",
    crate::model::ClaimMetric::Nopm => "nopm",
    crate::model::ClaimMetric::StatementLatency => "statement-latency",
    crate::model::ClaimMetric::DeviceIops => "device-iops",
    crate::model::ClaimMetric::DeviceMbS => "device-mb-s",
} |t| format!("unknown metric {t:?}; use \"tps\", \"latency\", \"latency-p99\", \"nopm\", \"statement-latency\", \"device-iops\" (read + write IOPS of the placement's devices) or \"device-mb-s\""));

keyword!(crate::model::ClaimAcross {
    crate::model::ClaimAcross::Placements => "placements",
    crate::model::ClaimAcross::ResultSets => "result-sets",
    crate::model::ClaimAcross::Profiles => "profiles",
} |t| format!("{t:?}: use \"placements\" (two placements of one result set), \"profiles\" (the claim's profile against the default profile, one placement) or \"result-sets\" (the same cell in two result sets: `cargo xtask report --baseline A --contender B`)"));

impl crate::model::ClaimMetric {
    pub fn as_str(self) -> &'static str {
        Keyword::word(self)
    }
}

impl crate::model::ClaimAcross {
    pub fn as_str(self) -> &'static str {
        Keyword::word(self)
    }
}
