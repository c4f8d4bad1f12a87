//! Options files: a database's [`Options`] written as TOML, so that a design chosen elsewhere
//! (`strata tune --options-out`, a colleague's benchmark) can be handed to [`Options::from_file`],
//! `strata bench --options` or kept beside the database. RocksDB keeps an `OPTIONS` file for the
//! same reason.
//!
//! Every key is optional: what a file leaves out keeps [`Options::default`]'s value. The merge
//! policy and the filter allocator are named from the registry (`crate::policy`) with the
//! settings they are built from, because the objects themselves cannot be written down. A key
//! the file format does not know is an error rather than silently ignored: a misspelt
//! `write_bufer_bytes` would otherwise run a different design than the one the file describes.
//!
//! ```toml
//! write_buffer_bytes = 4194304
//! compression = "lz4,zstd-bottom"
//!
//! [compaction]
//! policy = "garnering"
//! size_ratio = 3.0
//! garnering_c = 0.8
//!
//! [filters]
//! allocator = "monkey"
//! bits_per_key = 5.0
//! expected_entries = 10000000
//! buffer_entries = 30000
//!
//! [auto_tune]              # on; every key optional (`model::auto_tune::AutoTuneOptions`)
//! every_operations = 500000
//! min_gain = 0.1
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::compaction::ecotune::EcoTuneSettings;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::policy::{
    CompactionKind, CompactionSettings, FilterAllocatorKind, FilterSettings, DEFAULT_GARNERING_C,
};
use crate::wal::WalRecoveryMode;

/// The size ratio a `[compaction]` section without one gets: leveling's default, RocksDB's.
const DEFAULT_SIZE_RATIO: f64 = 10.0;

/// Declares the plain (copyable, serde-native) options once: the struct field, reading it from
/// an `Options`, and applying it to one.
macro_rules! plain_options {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {
        /// The contents of an options file. `None` (a key the file leaves out) keeps
        /// [`Options::default`]'s value. See the module documentation for the format.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct OptionsFile {
            $(
                $(#[$doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $name: Option<$ty>,
            )*
            /// [`Options::compression`], in its `Display` form (`"none"`, `"lz4"`,
            /// `"lz4,zstd-bottom"`, ...).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub compression: Option<String>,
            /// [`Options::wal_recovery_mode`].
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub wal_recovery_mode: Option<WalRecoveryModeName>,
            /// The merge policy ([`Options::compaction_policy`]).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub compaction: Option<CompactionSection>,
            /// The filter allocator ([`Options::filter_allocator`]).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub filters: Option<FilterSection>,
            /// Auto-tune ([`Options::auto_tune`]): an `[auto_tune]` section turns it on, its
            /// keys left out at their defaults.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub auto_tune: Option<crate::model::auto_tune::AutoTuneOptions>,
        }

        impl OptionsFile {
            /// Every plain option of `options`, ready to be written. The merge policy and the
            /// filter allocator are left out: an `Options` holds them as objects, whose kind and
            /// settings the caller knows and sets in `compaction` and `filters`.
            pub fn from_options(options: &Options) -> OptionsFile {
                OptionsFile {
                    $($name: Some(options.$name),)*
                    compression: Some(options.compression.to_string()),
                    wal_recovery_mode: Some(options.wal_recovery_mode.into()),
                    compaction: None,
                    filters: None,
                    auto_tune: options.auto_tune,
                }
            }

            fn apply_plain(&self, options: &mut Options) {
                $(
                    if let Some(value) = self.$name {
                        options.$name = value;
                    }
                )*
            }
        }
    };
}

plain_options! {
    /// [`Options::create_if_missing`].
    create_if_missing: bool,
    /// [`Options::error_if_exists`].
    error_if_exists: bool,
    /// [`Options::write_buffer_bytes`].
    write_buffer_bytes: usize,
    /// [`Options::max_write_buffers`].
    max_write_buffers: usize,
    /// [`Options::block_bytes`].
    block_bytes: usize,
    /// [`Options::block_restart_interval`].
    block_restart_interval: usize,
    /// [`Options::index_block_restart_interval`].
    index_block_restart_interval: usize,
    /// [`Options::partition_metadata_above_bytes`].
    partition_metadata_above_bytes: u64,
    /// [`Options::metadata_block_bytes`].
    metadata_block_bytes: usize,
    /// [`Options::target_file_bytes`].
    target_file_bytes: u64,
    /// [`Options::block_cache_bytes`].
    block_cache_bytes: u64,
    /// [`Options::max_open_files`].
    max_open_files: usize,
    /// [`Options::pin_l0_filter_and_index_blocks`].
    pin_l0_filter_and_index_blocks: bool,
    /// [`Options::pin_filter_and_index_blocks`].
    pin_filter_and_index_blocks: bool,
    /// [`Options::direct_reads`].
    direct_reads: bool,
    /// [`Options::compaction_readahead_bytes`].
    compaction_readahead_bytes: usize,
    /// [`Options::scan_readahead_max_bytes`].
    scan_readahead_max_bytes: usize,
    /// [`Options::max_background_compactions`].
    max_background_compactions: usize,
    /// [`Options::access_statistics`].
    access_statistics: bool,
    /// [`Options::access_sample_every`].
    access_sample_every: u32,
    /// [`Options::access_recent_weight`].
    access_recent_weight: f64,
    /// [`Options::level0_compaction_trigger`].
    level0_compaction_trigger: usize,
    /// [`Options::level0_slowdown_writes_trigger`].
    level0_slowdown_writes_trigger: usize,
    /// [`Options::level0_stop_writes_trigger`].
    level0_stop_writes_trigger: usize,
    /// [`Options::sync_writes`].
    sync_writes: bool,
    /// [`Options::disable_wal`].
    disable_wal: bool,
    /// [`Options::range_filter_bits`].
    range_filter_bits: u32,
    /// [`Options::range_filter_last_level`].
    range_filter_last_level: bool,
    /// [`Options::filter_rebuild_bytes_per_sec`].
    filter_rebuild_bytes_per_sec: u64,
}

/// [`WalRecoveryMode`] as an options file spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WalRecoveryModeName {
    /// [`WalRecoveryMode::TolerateCorruptedTail`].
    TolerateCorruptedTail,
    /// [`WalRecoveryMode::AbsoluteConsistency`].
    AbsoluteConsistency,
}

impl From<WalRecoveryMode> for WalRecoveryModeName {
    fn from(mode: WalRecoveryMode) -> Self {
        match mode {
            WalRecoveryMode::TolerateCorruptedTail => WalRecoveryModeName::TolerateCorruptedTail,
            WalRecoveryMode::AbsoluteConsistency => WalRecoveryModeName::AbsoluteConsistency,
        }
    }
}

impl From<WalRecoveryModeName> for WalRecoveryMode {
    fn from(name: WalRecoveryModeName) -> Self {
        match name {
            WalRecoveryModeName::TolerateCorruptedTail => WalRecoveryMode::TolerateCorruptedTail,
            WalRecoveryModeName::AbsoluteConsistency => WalRecoveryMode::AbsoluteConsistency,
        }
    }
}

/// The `[compaction]` section: a registered merge policy and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSection {
    /// The policy's registered name (`leveling`, `tiering`, `lazy-leveling`, `garnering`, ...).
    pub policy: CompactionKind,
    /// The size ratio `T`; default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_ratio: Option<f64>,
    /// Garnering's `c`; default 0.8. Refused for any other policy, which has no `c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub garnering_c: Option<f64>,
    /// EcoTune's share of long range scans `r`; by default measured by the engine (DESIGN.md §6). Refused for any other policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_scan_ratio: Option<f64>,
    /// EcoTune's `beta_q`; default 0.5. Refused for any other policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta_q: Option<f64>,
    /// EcoTune's `Ccap`; default 3. Refused for any other policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccap: Option<u32>,
    /// EcoTune's long-scan length `K`; by default measured by the engine. Refused for any other policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_length: Option<u32>,
}

impl CompactionSection {
    /// The settings the policy is built from, with the documented defaults filled in.
    pub fn settings(&self) -> CompactionSettings {
        let defaults = EcoTuneSettings::default();
        CompactionSettings {
            garnering_c: self.garnering_c.unwrap_or(DEFAULT_GARNERING_C),
            ecotune: EcoTuneSettings {
                long_scan_ratio: self.long_scan_ratio.or(defaults.long_scan_ratio),
                beta_q: self.beta_q.unwrap_or(defaults.beta_q),
                ccap: self.ccap.unwrap_or(defaults.ccap),
                scan_length: self.scan_length.or(defaults.scan_length),
                ..defaults
            },
            ..CompactionSettings::with_size_ratio(self.size_ratio.unwrap_or(DEFAULT_SIZE_RATIO))
        }
    }
}

/// The `[filters]` section: a registered filter allocator and its budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterSection {
    /// The allocator's registered name (`uniform`, `monkey`, `mnemosyne`, `mnemosyne-plus`, ...).
    pub allocator: FilterAllocatorKind,
    /// The filter budget in bits per key.
    pub bits_per_key: f64,
    /// Entries the tree is expected to hold: Monkey's prediction of the tree's shape (DESIGN.md
    /// §3.2). Required for `monkey`, refused for the others, which read the live tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_entries: Option<u64>,
    /// Entries one write buffer holds when flushed (Monkey's prediction). Required for
    /// `monkey`, refused for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_entries: Option<u64>,
    /// A cap in bytes on the filters in use besides the bits per key (DESIGN.md §3.5). Elastic
    /// filters only; refused for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_bytes: Option<u64>,
    /// Modules every new file gets on disk at least (1 to 6; default 3). Elastic filters only;
    /// refused for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_modules: Option<usize>,
    /// The family new filters are built in: `bloom` (the default), `ribbon` or `auto`
    /// (`Options::filter_family`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
}

impl OptionsFile {
    /// Parses an options file's text. A syntax error, an unknown key or a value of the wrong
    /// type is an [`Error::InvalidArgument`] naming the line.
    pub fn parse(text: &str) -> Result<OptionsFile> {
        toml::from_str(text).map_err(|error| {
            Error::InvalidArgument(format!("options file: {}", error.to_string().trim_end()))
        })
    }

    /// The file's text, TOML, with the policy sections last.
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self).map_err(|error| {
            Error::InvalidArgument(format!("options file cannot be written: {error}"))
        })
    }

    /// Reads and parses the options file at `path`.
    pub fn read(path: &Path) -> Result<OptionsFile> {
        let text = std::fs::read_to_string(path).map_err(|error| Error::Io {
            context: format!("reading options file {}", path.display()),
            source: std::sync::Arc::new(error),
        })?;
        OptionsFile::parse(&text)
    }

    /// Writes the file to `path` (replacing it).
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = self.to_toml()?;
        std::fs::write(path, text).map_err(|error| Error::Io {
            context: format!("writing options file {}", path.display()),
            source: std::sync::Arc::new(error),
        })
    }

    /// `base` with every key this file sets applied, the policies built, and the result
    /// validated as `Db::open` would. An invalid value is an [`Error::InvalidArgument`].
    pub fn apply_to(&self, base: Options) -> Result<Options> {
        let mut options = base;
        self.apply_plain(&mut options);
        if let Some(compression) = &self.compression {
            options.compression = compression.parse().map_err(|error: Error| {
                Error::InvalidArgument(format!("options file: compression: {error}"))
            })?;
        }
        if let Some(mode) = self.wal_recovery_mode {
            options.wal_recovery_mode = mode.into();
        }
        if let Some(auto_tune) = self.auto_tune {
            auto_tune.validate().map_err(|error| {
                Error::InvalidArgument(format!("options file: [auto_tune]: {error}"))
            })?;
            options.auto_tune = Some(auto_tune);
        }
        let compaction_settings = self.compaction.as_ref().map(CompactionSection::settings);
        if let Some(section) = &self.compaction {
            if section.garnering_c.is_some() && section.policy != CompactionKind::Garnering {
                return Err(Error::InvalidArgument(format!(
                    "options file: [compaction] garnering_c is Garnering's setting; policy {} has none",
                    section.policy
                )));
            }
            let ecotune_keys = [
                ("long_scan_ratio", section.long_scan_ratio.is_some()),
                ("beta_q", section.beta_q.is_some()),
                ("ccap", section.ccap.is_some()),
                ("scan_length", section.scan_length.is_some()),
            ];
            if let Some((key, _)) = ecotune_keys
                .iter()
                .find(|(_, set)| *set && section.policy != CompactionKind::Ecotune)
            {
                return Err(Error::InvalidArgument(format!(
                    "options file: [compaction] {key} is EcoTune's setting; policy {} has none",
                    section.policy
                )));
            }
            options.compaction_policy = section
                .policy
                .build(&section.settings())
                .map_err(|error| in_section("compaction", error))?;
        }
        if let Some(section) = &self.filters {
            let monkey = section.allocator == FilterAllocatorKind::Monkey;
            let prediction = (section.expected_entries, section.buffer_entries);
            let (expected_entries, buffer_entries) = match (monkey, prediction) {
                (true, (Some(expected), Some(buffer))) => (expected, buffer),
                (true, _) => {
                    return Err(Error::InvalidArgument(
                        "options file: [filters] allocator monkey needs expected_entries and \
                         buffer_entries (its prediction of the tree's shape)"
                            .to_string(),
                    ))
                }
                (false, (None, None)) => (0, 0),
                (false, _) => {
                    return Err(Error::InvalidArgument(format!(
                        "options file: [filters] expected_entries and buffer_entries are Monkey's \
                         settings; allocator {} reads the live tree",
                        section.allocator
                    )))
                }
            };
            let settings = FilterSettings {
                bits_per_key: section.bits_per_key,
                compaction: self
                    .compaction
                    .as_ref()
                    .map_or(CompactionKind::Leveling, |section| section.policy),
                size_ratio: compaction_settings.map_or(DEFAULT_SIZE_RATIO, |s| s.size_ratio),
                expected_entries,
                buffer_entries,
                budget_bytes: section.budget_bytes,
                disk_modules: section.disk_modules,
            };
            options.filter_allocator = section
                .allocator
                .build(&settings)
                .map_err(|error| in_section("filters", error))?;
            if let Some(family) = &section.family {
                options.filter_family = crate::FilterFamilies::parse(family)
                    .map_err(|error| in_section("filters", error))?;
            }
            if section.allocator.needs_access_statistics() && self.access_statistics.is_none() {
                options.access_statistics = true;
            }
        }
        options
            .validate()
            .map_err(|error| Error::InvalidArgument(format!("options file: {error}")))?;
        Ok(options)
    }
}

fn in_section(section: &str, error: Error) -> Error {
    match error {
        Error::InvalidArgument(message) => {
            Error::InvalidArgument(format!("options file: [{section}] {message}"))
        }
        other => other,
    }
}

impl Options {
    /// Options read from the TOML options file at `path` (format: `crate::options_file`): every
    /// key it sets over [`Options::default`], validated. A missing or unreadable file is an
    /// [`Error::Io`]; a malformed one, an unknown key or an invalid value an
    /// [`Error::InvalidArgument`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Options> {
        OptionsFile::read(path.as_ref())?.apply_to(Options::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_auto_tune_section_turns_it_on_with_defaults_for_what_it_leaves_out() {
        let file = OptionsFile::parse("[auto_tune]\nevery_operations = 500000\n").expect("parses");
        let options = file.apply_to(Options::default()).expect("applies");
        let auto_tune = options.auto_tune.expect("on");
        assert_eq!(auto_tune.every_operations, 500_000);
        assert_eq!(
            auto_tune.min_gain,
            crate::model::auto_tune::AutoTuneOptions::default().min_gain
        );
        let written = OptionsFile::from_options(&options)
            .to_toml()
            .expect("writes");
        let again = OptionsFile::parse(&written)
            .expect("parses")
            .apply_to(Options::default())
            .expect("applies");
        assert_eq!(again.auto_tune, Some(auto_tune));
        // Early decisions off, by name.
        let cadence_alone = OptionsFile::parse("[auto_tune]\nearly_decisions_after = 0\n")
            .expect("parses")
            .apply_to(Options::default())
            .expect("applies");
        assert_eq!(
            cadence_alone.auto_tune.map(|a| a.early_decisions_after),
            Some(0)
        );
        assert!(OptionsFile::default()
            .apply_to(Options::default())
            .expect("applies")
            .auto_tune
            .is_none());
        for bad in [
            "[auto_tune]\nevery_operations = 0\n",
            "[auto_tune]\nconfirmations = 0\n",
            "[auto_tune]\nmin_gian = 0.2\n",
            "[auto_tune]\nseconds_per_read = -1.0\n",
            "[auto_tune]\nearly_decisions_after = -1\n",
        ] {
            let result = OptionsFile::parse(bad).and_then(|file| file.apply_to(Options::default()));
            assert!(matches!(result, Err(Error::InvalidArgument(_))), "{bad}");
        }
    }

    #[test]
    fn a_file_sets_what_it_names_and_keeps_every_other_default() {
        let file = OptionsFile::parse(
            "write_buffer_bytes = 4194304\n\
             direct_reads = true\n\
             compression = \"lz4,zstd-bottom\"\n\
             wal_recovery_mode = \"absolute-consistency\"\n\
             [compaction]\n\
             policy = \"garnering\"\n\
             size_ratio = 3.0\n\
             garnering_c = 0.6\n\
             [filters]\n\
             allocator = \"monkey\"\n\
             bits_per_key = 5.0\n\
             expected_entries = 1000000\n\
             buffer_entries = 30000\n",
        )
        .expect("parses");
        let options = file.apply_to(Options::default()).expect("valid");
        let defaults = Options::default();
        assert_eq!(options.write_buffer_bytes, 4 << 20);
        assert!(options.direct_reads);
        assert_eq!(options.compression.to_string(), "lz4,zstd-bottom");
        assert_eq!(
            options.wal_recovery_mode,
            WalRecoveryMode::AbsoluteConsistency
        );
        assert_eq!(options.block_bytes, defaults.block_bytes);
        assert_eq!(options.target_file_bytes, defaults.target_file_bytes);
        assert!(options.compaction_policy.name().contains("garnering"));
        assert!(options.compaction_policy.name().contains("0.6"));
        assert!(options.filter_allocator.name().contains("monkey"));
        assert_eq!(options.filter_allocator.bits_per_key_budget(), 5.0);
    }

    #[test]
    fn writing_and_reading_back_gives_the_same_file() {
        let mut file = OptionsFile::from_options(&Options::default().write_buffer_bytes(1 << 20));
        file.compaction = Some(CompactionSection {
            policy: CompactionKind::Ecotune,
            size_ratio: None,
            garnering_c: None,
            long_scan_ratio: Some(0.5),
            beta_q: Some(0.25),
            ccap: Some(4),
            scan_length: None,
        });
        file.filters = Some(FilterSection {
            allocator: FilterAllocatorKind::MnemosynePlus,
            bits_per_key: 2.5,
            expected_entries: None,
            buffer_entries: None,
            budget_bytes: None,
            disk_modules: None,
            family: Some("auto".to_string()),
        });
        let text = file.to_toml().expect("writes");
        let read = OptionsFile::parse(&text).expect("reads its own output");
        assert_eq!(read, file, "{text}");
        // A byte budget for elastic filters reads back and reaches the allocator.
        let elastic = OptionsFile::parse(
            "[filters]\nallocator = \"elastic\"\nbits_per_key = 2.0\nbudget_bytes = 65536",
        )
        .expect("parses")
        .apply_to(Options::default())
        .expect("valid");
        assert_eq!(elastic.filter_allocator.filter_budget_bytes(), Some(65_536));
        // So do elastic filters' modules on disk: a first file on level 2 at 2 bits per key
        // (1-bit modules) is written with its two modules in use and no spare one, against the
        // default's three modules (level-0 and level-1 files get six at this budget whatever the
        // setting).
        let first_flush = |text: &str| {
            let options = OptionsFile::parse(text)
                .expect("parses")
                .apply_to(Options::default())
                .expect("valid");
            let outputs = crate::alloc::test_support::outputs(&[1000]);
            options.filter_allocator.allocate(
                &crate::version::Version::default(),
                &crate::alloc::FilterJob {
                    kind: crate::alloc::JobKind::Compaction,
                    inputs: &[],
                    output_level: 2,
                    output_run_id: 1,
                    outputs: &outputs,
                },
            )
        };
        assert_eq!(
            first_flush("[filters]\nallocator = \"elastic\"\nbits_per_key = 2.0\ndisk_modules = 1"),
            vec![2.0]
        );
        assert_eq!(
            first_flush("[filters]\nallocator = \"elastic\"\nbits_per_key = 2.0"),
            vec![3.0]
        );
        assert_eq!(
            read.apply_to(Options::default())
                .expect("valid")
                .filter_family,
            crate::FilterFamilies::Automatic
        );
        let options = read.apply_to(Options::default()).expect("valid");
        assert_eq!(options.write_buffer_bytes, 1 << 20);
        // EcoTune's settings reach the policy.
        assert_eq!(
            options.compaction_policy.name(),
            "ecotune(Ccap=4,K=live,r=0.5,beta_q=0.25)"
        );
        assert!(options.filter_allocator.needs_access_statistics());
    }

    #[test]
    fn mistakes_are_errors_that_say_what_is_wrong() {
        let cases = [
            ("write_bufer_bytes = 1", "write_bufer_bytes"),
            ("write_buffer_bytes = \"big\"", "write_buffer_bytes"),
            ("write_buffer_bytes = 0", "write_buffer_bytes"),
            ("[compaction]\npolicy = \"levelling\"", "levelling"),
            (
                "[compaction]\npolicy = \"tiering\"\nsize_ratio = 1.0",
                "size",
            ),
            (
                "[compaction]\npolicy = \"leveling\"\ngarnering_c = 0.5",
                "garnering_c",
            ),
            (
                "[compaction]\npolicy = \"tiering\"\nlong_scan_ratio = 0.5",
                "long_scan_ratio",
            ),
            ("[compaction]\npolicy = \"ecotune\"\nbeta_q = 2.0", "beta_q"),
            (
                "[filters]\nallocator = \"monkey\"\nbits_per_key = 5.0",
                "expected_entries",
            ),
            (
                "[filters]\nallocator = \"uniform\"\nbits_per_key = 5.0\nexpected_entries = 9",
                "Monkey",
            ),
            (
                "[filters]\nallocator = \"uniform\"\nbits_per_key = -1.0",
                "filters",
            ),
            (
                "[filters]\nallocator = \"mnemosyne\"\nbits_per_key = 2.0\nbudget_bytes = 4096",
                "needs elastic filters",
            ),
            (
                "[filters]\nallocator = \"elastic\"\nbits_per_key = 2.0\nbudget_bytes = 0",
                "at least 1 byte",
            ),
            (
                "[filters]\nallocator = \"uniform\"\nbits_per_key = 2.0\ndisk_modules = 2",
                "modules on disk are elastic filters' setting",
            ),
            (
                "[filters]\nallocator = \"elastic\"\nbits_per_key = 2.0\ndisk_modules = 7",
                "1 to 6 modules on disk",
            ),
            (
                "[filters]\nallocator = \"uniform\"\nbits_per_key = 2.0\nfamily = \"xor\"",
                "unknown filter family",
            ),
            ("compression = \"snappy\"", "compression"),
            (
                "max_background_compactions = 0",
                "max_background_compactions",
            ),
            ("[[[", "options file"),
        ];
        for (text, expected) in cases {
            let result =
                OptionsFile::parse(text).and_then(|file| file.apply_to(Options::default()));
            match result {
                Err(Error::InvalidArgument(message)) => assert!(
                    message.contains(expected),
                    "{text:?}: {message:?} should mention {expected:?}"
                ),
                Err(other) => panic!("{text:?}: expected InvalidArgument, got {other:?}"),
                Ok(_) => panic!("{text:?}: accepted"),
            }
        }
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("absent.toml");
        match Options::from_file(&path) {
            Err(Error::Io { context, .. }) => assert!(context.contains("absent.toml")),
            Err(other) => panic!("expected Io, got {other:?}"),
            Ok(_) => panic!("a missing file was accepted"),
        }
        let written = dir.path().join("options.toml");
        OptionsFile::from_options(&Options::default())
            .write(&written)
            .expect("writes");
        let options = Options::from_file(&written).expect("reads");
        assert_eq!(
            options.write_buffer_bytes,
            Options::default().write_buffer_bytes
        );
    }
}
