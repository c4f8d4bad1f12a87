//! Named presets: a set of `strata bench` flags inserted where `--preset NAME` appears, so that
//! flags given after it override it (the bench subcommand lets later flags override earlier ones).

use std::ffi::OsString;

use serde::Serialize;

/// A named configuration of `strata bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// The README's main job: 500,000 keys, 4 MiB write buffer, settled reads (about a minute).
    Quick,
    /// The papers' memory-pressure setting: 2, 3, 4 and 5 bits per key compared, a block cache
    /// of 5% of the data, direct reads, settled reads.
    MemoryPressure,
    /// The Mnemosyne paper's type-II workloads scaled by 1/100 (210,000-key load, 410,000
    /// operations, 128-byte keys and 384-byte values), empty-lookup fractions 0, 0.5 and 1, size
    /// ratio 4, 2 bits per key, a 5% block cache and direct reads.
    PaperMnemosyne,
    /// EcoTune's evaluation (EcoTune §5.1) scaled to 1,000,000 keys: 8-byte keys and 256-byte
    /// values; a write buffer of 256 KiB, so that leveling with size ratio 10 has four levels
    /// counting level 0, as in the paper (data over buffer about 1,000); range filters on
    /// every file, as the paper's SNARF on every file; an 8 MiB block cache and direct reads; a
    /// writer paced at 2 MB/s beside queries on two threads, so that queries take every core
    /// and each compaction second is a second queries lose, as with the paper's shared pool of
    /// query and merge threads; EcoTune against leveling and lazy leveling, the paper's
    /// baselines. The phase is `ecotune:0.3` (`--workloads fillrandom,ecotune:R` for others).
    PaperEcotune,
    /// A workload that shifts while one database stays open: a fill, then write-heavy
    /// overwrites, point reads with a hot spot, short scans, and lookups of absent keys, at
    /// 1,000,000 keys with 2 MiB write buffers and files, direct reads and a block cache of 5% of
    /// the data; the design in force is printed after every phase (with `--auto-tune`, what the
    /// engine switched to).
    Shifting,
    /// YCSB core workloads in YCSB's recommended order (load, A, B, C, F, D, E), 100,000 records
    /// of 1,000-byte values and 100,000 operations each.
    Ycsb,
}

impl Preset {
    /// The flags the preset stands for.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            Preset::Quick => &[
                "--num",
                "500000",
                "--write-buffer-bytes",
                "4MiB",
                "--settle",
            ],
            Preset::MemoryPressure => &[
                "--bits-per-key",
                "2,3,4,5",
                "--cache-fraction",
                "0.05",
                "--direct-reads",
                "--settle",
            ],
            Preset::PaperMnemosyne => &[
                "--workloads",
                "load,mnemosyne-ii:0,mnemosyne-ii:0.5,mnemosyne-ii:1",
                "--num",
                "210000",
                "--reads",
                "410000",
                "--key-size",
                "128",
                "--value-size",
                "384",
                "--size-ratio",
                "4",
                "--bits-per-key",
                "2",
                "--cache-fraction",
                "0.05",
                "--direct-reads",
                "--settle",
            ],
            Preset::PaperEcotune => &[
                "--workloads",
                "fillrandom,ecotune:0.3",
                "--num",
                "1000000",
                "--key-size",
                "8",
                "--value-size",
                "256",
                "--write-buffer-bytes",
                "256KiB",
                "--size-ratio",
                "10",
                "--bits-per-key",
                "10",
                "--range-filter-bits",
                "6",
                "--cache-bytes",
                "8MiB",
                "--direct-reads",
                "--write-rate",
                "2",
                "--query-threads",
                "2",
                "--compaction",
                "ecotune,leveling,lazy-leveling",
            ],
            Preset::Shifting => &[
                "--workloads",
                "fillrandom,overwrite,readhot,seekrandom,readmissing",
                "--num",
                "1000000",
                "--write-buffer-bytes",
                "2MiB",
                "--target-file-bytes",
                "2MiB",
                "--direct-reads",
                "--cache-fraction",
                "0.05",
            ],
            Preset::Ycsb => &[
                "--workloads",
                "load,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,ycsb-e",
                "--num",
                "100000",
                "--reads",
                "100000",
                "--key-size",
                "24",
                "--value-size",
                "1000",
            ],
        }
    }

    fn parse(name: &str) -> Option<Preset> {
        <Preset as clap::ValueEnum>::from_str(name, true).ok()
    }
}

/// Inserts each `--preset NAME`'s flags just before it. Unknown names are left for clap to
/// reject with its usual message.
pub fn expand(args: Vec<OsString>) -> Vec<OsString> {
    let mut expanded = Vec::with_capacity(args.len());
    let mut iter = args.into_iter().peekable();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy().into_owned();
        let name = if text == "--preset" {
            iter.peek().map(|next| next.to_string_lossy().into_owned())
        } else {
            text.strip_prefix("--preset=").map(str::to_string)
        };
        if let Some(preset) = name.as_deref().and_then(Preset::parse) {
            expanded.extend(preset.flags().iter().map(OsString::from));
        }
        expanded.push(arg);
    }
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_preset_expands_before_itself_so_later_flags_win() {
        let expanded = expand(os(&["strata", "bench", "--preset", "ycsb", "--num", "7"]));
        let text: Vec<String> = expanded
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let preset_at = text.iter().position(|a| a == "--preset").expect("kept");
        assert_eq!(&text[2..preset_at], Preset::Ycsb.flags());
        assert_eq!(text.last().map(String::as_str), Some("7"));
        assert_eq!(
            expand(os(&["strata", "bench", "--preset=quick"])).len(),
            3 + 5
        );
        assert_eq!(
            expand(os(&["strata", "bench", "--preset", "nope"])).len(),
            4
        );
    }

    #[test]
    fn the_shifting_preset_changes_the_mix_from_phase_to_phase() {
        use crate::bench::workload::Workload;
        let flags = Preset::Shifting.flags();
        let at = flags
            .iter()
            .position(|f| *f == "--workloads")
            .expect("flag present");
        let phases: Vec<Workload> = flags[at + 1]
            .split(',')
            .map(|name| name.parse().expect("a workload"))
            .collect();
        assert_eq!(phases.len(), 5);
        assert!(phases[0].fills() && phases[1].is_write());
        assert!(phases[2..].iter().all(|phase| !phase.is_write()));
        assert!(flags.contains(&"--direct-reads"));
    }

    #[test]
    fn the_ecotune_preset_is_the_papers_setup_with_queries_on_every_thread() {
        let flags = Preset::PaperEcotune.flags();
        let value_of = |flag: &str| {
            let at = flags.iter().position(|f| *f == flag).expect("flag present");
            flags[at + 1]
        };
        // 8-byte integer keys and 256-byte values (EcoTune §5.1).
        assert_eq!(value_of("--key-size"), "8");
        assert_eq!(value_of("--value-size"), "256");
        // Leveling with size ratio 10 fills levels 1 and 2 (10 and 100 buffers) below a 256 KiB
        // buffer and ends in level 3 (1,000 more): 1,000,000 entries of 264 bytes are between
        // 110 and 1,110 buffers, so the tree has four levels counting level 0.
        assert_eq!(value_of("--write-buffer-bytes"), "256KiB");
        let buffers = 1_000_000 * (8 + 256) / (256 * 1024);
        assert_eq!(value_of("--size-ratio"), "10");
        assert!(buffers > 110 && buffers < 1_110);
        assert!(flags.contains(&"--direct-reads"));
        assert_eq!(value_of("--cache-bytes"), "8MiB");
        assert_ne!(value_of("--range-filter-bits"), "0");
        assert_eq!(value_of("--compaction"), "ecotune,leveling,lazy-leveling");
        assert!(value_of("--workloads").ends_with("ecotune:0.3"));
        // The whole flag set parses as a bench command line.
        let mut args = vec!["strata", "bench"];
        args.extend_from_slice(flags);
        let expanded = expand(os(&args));
        assert_eq!(expanded.len(), 2 + flags.len());
    }

    #[test]
    fn the_paper_preset_is_type_two_at_one_hundredth_of_the_papers_size() {
        use crate::bench::ops::Mix;
        let mix = Mix::MnemosyneTypeII {
            empty_fraction: 0.5,
        };
        let (load, operations) = mix.paper_sizes(0.01).expect("the paper gives sizes");
        let flags = Preset::PaperMnemosyne.flags();
        let value_of = |flag: &str| {
            let at = flags.iter().position(|f| *f == flag).expect("flag present");
            flags[at + 1]
        };
        assert_eq!(value_of("--num"), load.to_string());
        assert_eq!(value_of("--reads"), operations.to_string());
        let size = mix.entry_size();
        assert_eq!(value_of("--key-size"), size.key_bytes.to_string());
        assert_eq!(value_of("--value-size"), size.value_bytes.to_string());
    }
}
