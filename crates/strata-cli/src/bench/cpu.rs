//! CPU time by thread, from Linux's `/proc/self/task/*/stat`: what share of the process's CPU a
//! phase spent in compaction threads (EcoTune trades compaction CPU for query speed, so its
//! comparisons need it).
//! Threads are told apart by name: Strata's compaction workers are `strata-compaction-N`,
//! RocksDB's compaction pool runs as `rocksdb:low`. Elsewhere than Linux, or if `/proc` cannot
//! be read, there is no sample and the report says `null`.

use std::path::Path;

/// Names of compaction threads (prefixes).
const COMPACTION_THREADS: [&str; 2] = ["strata-compacti", "rocksdb:low"];

/// CPU time so far, in clock ticks (`utime + stime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuSample {
    /// Of every thread of the process alive now.
    pub total: u64,
    /// Of compaction threads.
    pub compaction: u64,
}

impl CpuSample {
    /// The process's threads now, or `None` without `/proc`.
    pub fn now() -> Option<CpuSample> {
        sample(Path::new("/proc/self/task"))
    }

    /// Compaction's share of the CPU time spent between `earlier` and `self` (`None` if none
    /// was spent, or a compaction thread came or went so that the figures do not subtract).
    pub fn compaction_share_since(&self, earlier: &CpuSample) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let compaction = self.compaction.checked_sub(earlier.compaction)?;
        (total > 0).then(|| compaction as f64 / total as f64)
    }
}

fn sample(tasks: &Path) -> Option<CpuSample> {
    let mut sample = CpuSample::default();
    for entry in std::fs::read_dir(tasks).ok()? {
        let Ok(entry) = entry else { continue };
        // A thread that ended since the listing has no files left: skip it.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((name, ticks)) = parse_stat(&stat) else {
            continue;
        };
        sample.total += ticks;
        if COMPACTION_THREADS
            .iter()
            .any(|prefix| name.starts_with(prefix))
        {
            sample.compaction += ticks;
        }
    }
    Some(sample)
}

/// A `stat` line's thread name (between the parentheses; it may hold spaces and parentheses)
/// and `utime + stime` (fields 14 and 15).
fn parse_stat(stat: &str) -> Option<(&str, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?;
    // After ") ": field 3 (state) onwards; utime and stime are fields 14 and 15.
    let mut fields = stat.get(close + 2..)?.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((name, utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_name_and_cpu_ticks() {
        let line = "4242 (strata-compacti) S 1 2 3 4 5 6 7 8 9 10 120 35 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_stat(line), Some(("strata-compacti", 155)));
        let odd = "7 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 1 2 0 0";
        assert_eq!(parse_stat(odd), Some(("a (b) c", 3)));
        assert_eq!(parse_stat("7 (x) R 1 2"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn shares_subtract_samples_and_refuse_what_does_not() {
        let before = CpuSample {
            total: 100,
            compaction: 10,
        };
        let after = CpuSample {
            total: 300,
            compaction: 60,
        };
        assert_eq!(after.compaction_share_since(&before), Some(0.25));
        assert_eq!(before.compaction_share_since(&after), None);
        assert_eq!(before.compaction_share_since(&before), None);
    }

    #[test]
    fn this_process_is_sampled_on_linux() {
        if !Path::new("/proc/self/task").exists() {
            return;
        }
        let sample = CpuSample::now().expect("a sample");
        assert!(sample.compaction <= sample.total);
    }
}
