//! CPU time by thread, from Linux's `/proc/self/task/*/stat`: what share of the process's CPU a
//! phase spent in compaction threads (EcoTune trades compaction CPU for query speed, so its
//! comparisons need it).
//! Threads are told apart by name: Strata's compaction workers are `strata-compaction-N`,
//! RocksDB's compaction pool runs as `rocksdb:low`; flush threads `strata-flush` and `rocksdb:high`.
//! CPU seconds per query (all threads, compactions included) are what a query costs where
//! compactions and queries share the cores, as in EcoTune's evaluation. Elsewhere than Linux, or if `/proc` cannot
//! be read, there is no sample and the report says `null`.

use std::path::Path;

/// Names of compaction threads (prefixes).
const COMPACTION_THREADS: [&str; 2] = ["strata-compacti", "rocksdb:low"];
/// Names of flush threads (prefixes): Strata's `strata-flush`, RocksDB's high-priority pool.
const FLUSH_THREADS: [&str; 2] = ["strata-flush", "rocksdb:high"];
/// Clock ticks per second of `/proc/*/stat`'s `utime` and `stime` (`USER_HZ`, 100 on every
/// architecture Linux exports to user space).
const TICKS_PER_SEC: f64 = 100.0;

/// CPU time so far, in clock ticks (`utime + stime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuSample {
    /// Of every thread of the process alive now.
    pub total: u64,
    /// Of compaction threads.
    pub compaction: u64,
    /// Of flush threads.
    pub flush: u64,
}

/// CPU seconds spent between two samples, by kind of thread.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct CpuSeconds {
    /// Every thread of the process.
    pub total: f64,
    /// Compaction threads.
    pub compaction: f64,
    /// Flush threads.
    pub flush: f64,
}

impl CpuSample {
    /// The process's threads now, or `None` without `/proc`. The total is the process's own
    /// figure, which keeps the time of threads that have ended (a phase's writer and extra query
    /// threads end before its closing sample).
    pub fn now() -> Option<CpuSample> {
        let mut sample = sample(Path::new("/proc/self/task"))?;
        let process = std::fs::read_to_string("/proc/self/stat").ok();
        if let Some((_, ticks)) = process.as_deref().and_then(parse_stat) {
            sample.total = sample.total.max(ticks);
        }
        Some(sample)
    }

    /// Compaction's share of the CPU time spent between `earlier` and `self` (`None` if none
    /// was spent, or a compaction thread came or went so that the figures do not subtract).
    pub fn compaction_share_since(&self, earlier: &CpuSample) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let compaction = self.compaction.checked_sub(earlier.compaction)?;
        (total > 0).then(|| compaction as f64 / total as f64)
    }

    /// CPU seconds spent between `earlier` and `self` (`None` if a thread came or went so that
    /// the figures do not subtract).
    pub fn seconds_since(&self, earlier: &CpuSample) -> Option<CpuSeconds> {
        let seconds = |now: u64, then: u64| Some(now.checked_sub(then)? as f64 / TICKS_PER_SEC);
        Some(CpuSeconds {
            total: seconds(self.total, earlier.total)?,
            compaction: seconds(self.compaction, earlier.compaction)?,
            flush: seconds(self.flush, earlier.flush)?,
        })
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
        if FLUSH_THREADS.iter().any(|prefix| name.starts_with(prefix)) {
            sample.flush += ticks;
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
            flush: 5,
        };
        let after = CpuSample {
            total: 300,
            compaction: 60,
            flush: 25,
        };
        assert_eq!(after.compaction_share_since(&before), Some(0.25));
        assert_eq!(before.compaction_share_since(&after), None);
        assert_eq!(before.compaction_share_since(&before), None);
        assert_eq!(
            after.seconds_since(&before),
            Some(CpuSeconds {
                total: 2.0,
                compaction: 0.5,
                flush: 0.2
            })
        );
        assert_eq!(before.seconds_since(&after), None);
    }

    #[test]
    fn this_process_is_sampled_on_linux() {
        if !Path::new("/proc/self/task").exists() {
            return;
        }
        let sample = CpuSample::now().expect("a sample");
        assert!(sample.compaction + sample.flush <= sample.total);
    }
}
