//! The priced background rebuild of filters (DESIGN.md §3.5 "Rebuild, priced"; Strata's own rule, not
//! in the papers).
//!
//! Elastic filters (`alloc/elastic.rs`) move bits between the modules files already have on
//! disk; a file whose optimum needs more than it holds (written when the tree was small, or
//! before its lookups arrived) can only get them from a new filter. The allocator prices that
//! ([`FilterAllocator::filter_rebuild`](crate::alloc::FilterAllocator::filter_rebuild)); this
//! module decides *when* to ask and runs the answer:
//!
//! * only a compaction worker that found no policy job asks, at most once per [`CHECK_EVERY`]
//!   when the last answer was "none" (the idle wake-up of the compaction loop brings it even
//!   without writes), and again as soon as the rate limit allows after a rebuild; so a rebuild
//!   never takes a worker a needed compaction could use at that moment;
//! * the rebuild is a one-file compaction in place (same level, same run, one output), registered
//!   like any policy job, so policies avoid its file and level while it runs;
//! * after a rebuild that read and wrote `B` bytes, the next waits `B /
//!   Options::filter_rebuild_bytes_per_sec` (the rate limit; 0 turns rebuilds off);
//! * rebuilds are counted apart from compactions (`IoStats::filter_rebuilds` and their bytes).

use std::time::{Duration, Instant};

use super::DbInner;
use crate::alloc::{FilterRebuild, RebuildPricing};
use crate::compaction::{CompactionJob, JobAction, OutputRun, RunInput, RunningCompactions};
use crate::version::Version;

/// How often an idle compaction worker prices a rebuild.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The longest remaining life credited to a file when nothing is being written (DESIGN.md §3.5: the
/// gain is counted over the file's expected life; without writes no compaction replaces it, but
/// ten minutes of the lookups seen so far is as far as the price trusts them).
pub(crate) const HORIZON_SECS: f64 = 600.0;

/// When the next price check and the next rebuild may happen.
#[derive(Debug)]
pub(crate) struct RebuildSchedule {
    next_check: Instant,
    allowed_at: Instant,
}

impl RebuildSchedule {
    /// A schedule whose first check is one [`CHECK_EVERY`] after `now` (statistics need time).
    pub(crate) fn new(now: Instant) -> Self {
        RebuildSchedule {
            next_check: now + CHECK_EVERY,
            allowed_at: now,
        }
    }

    /// True if a check is due at `now` (the rate limit allowing).
    fn due(&self, now: Instant) -> bool {
        now >= self.next_check && now >= self.allowed_at
    }

    /// A rebuild that read and wrote `bytes` finished at `now`: the next waits its share of
    /// `bytes_per_sec`, and is priced as soon as the rate allows (rebuilds that pay follow one
    /// another at the rate limit, not one per check period).
    fn rebuilt(&mut self, bytes: u64, bytes_per_sec: u64, now: Instant) {
        let wait = bytes as f64 / bytes_per_sec.max(1) as f64;
        self.allowed_at = now + Duration::from_secs_f64(wait.min(86_400.0));
        self.next_check = self.allowed_at;
    }
}

impl DbInner {
    /// True if an idle compaction worker should look for a filter rebuild now (the compaction
    /// loop's wake-up test; does not claim the turn).
    pub(crate) fn filter_rebuild_due(&self, now: Instant) -> bool {
        self.options.filter_rebuild_bytes_per_sec > 0
            && self.filter_allocator().rebuilds_filters()
            && self.rebuild_schedule.lock().due(now)
    }

    /// Called by a compaction worker whose policy picked nothing, holding the pick lock: if a
    /// check is due, claims it and asks the allocator for the rebuild that most repays its cost
    /// on `tree`. Returns the job (a one-file rewrite in place) and the allocator's price, or
    /// `None` (not due, nothing pays, or the file's job would conflict with `running`).
    pub(crate) fn pick_filter_rebuild(
        &self,
        tree: &Version,
        running: &RunningCompactions,
    ) -> Option<(CompactionJob, FilterRebuild)> {
        let now = Instant::now();
        {
            let mut schedule = self.rebuild_schedule.lock();
            if self.options.filter_rebuild_bytes_per_sec == 0 || !schedule.due(now) {
                return None;
            }
            schedule.next_check = now + CHECK_EVERY;
        }
        let pricing = RebuildPricing {
            now,
            flush_bytes_per_sec: self.rates.lock().recent_flush_bytes_per_sec(now),
            horizon_secs: HORIZON_SECS,
            read_cost_bytes: self.options.block_bytes as f64,
        };
        let rebuild = self.filter_allocator().filter_rebuild(tree, &pricing)?;
        let job = rebuild_job(&rebuild);
        if running.conflict(&job).is_some() {
            return None;
        }
        Some((job, rebuild))
    }

    /// A rebuild that read `read` and wrote `written` bytes finished: counts it and starts the
    /// rate limit's wait.
    pub(crate) fn filter_rebuilt(&self, read: u64, written: u64) {
        use crate::stats::add;
        add(&self.counters.filter_rebuilds, 1);
        add(&self.counters.filter_rebuild_read_bytes, read);
        add(&self.counters.filter_rebuild_write_bytes, written);
        self.rebuild_schedule.lock().rebuilt(
            read.saturating_add(written),
            self.options.filter_rebuild_bytes_per_sec,
            Instant::now(),
        );
    }
}

/// The one-file compaction that rewrites `rebuild`'s file in place: its run on its level, one
/// output (the engine cuts no output of a rebuild at the target file size).
pub(crate) fn rebuild_job(rebuild: &FilterRebuild) -> CompactionJob {
    CompactionJob {
        inputs: vec![RunInput {
            level: rebuild.level,
            run_id: rebuild.run_id,
            file_numbers: vec![rebuild.file_number],
        }],
        output_level: rebuild.level,
        output_run: OutputRun::Existing(rebuild.run_id),
        reason: format!(
            "filter rebuild of file {}: {:.1} reads/s avoided over {:.0} s for {} bytes",
            rebuild.file_number,
            rebuild.avoided_reads_per_sec,
            rebuild.life_secs,
            rebuild.cost_bytes
        ),
        state: None,
        action: JobAction::Merge,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limit_spaces_rebuilds_by_their_bytes() {
        let start = Instant::now();
        let mut schedule = RebuildSchedule::new(start);
        assert!(!schedule.due(start), "the first check waits for statistics");
        assert!(schedule.due(start + CHECK_EVERY));
        // 16 MiB at 8 MiB/s: two seconds before the next.
        schedule.rebuilt(16 << 20, 8 << 20, start + CHECK_EVERY);
        assert!(!schedule.due(start + CHECK_EVERY + Duration::from_millis(1_900)));
        assert!(schedule.due(start + CHECK_EVERY + Duration::from_millis(2_001)));
    }

    #[test]
    fn a_rebuild_job_rewrites_one_file_in_place() {
        let job = rebuild_job(&FilterRebuild {
            level: 2,
            run_id: 7,
            file_number: 42,
            avoided_reads_per_sec: 10.0,
            life_secs: 60.0,
            cost_bytes: 1000,
        });
        assert_eq!(job.input_file_count(), 1);
        assert_eq!(job.output_level, 2);
        assert!(job.rewrites_in_place());
        assert!(job.state.is_none());
        // Beside a job that starts a new run on the same level it may run; beside one that
        // writes into the level's runs, not.
        let new_run = CompactionJob {
            inputs: vec![RunInput {
                level: 1,
                run_id: 3,
                file_numbers: vec![5],
            }],
            output_level: 2,
            output_run: OutputRun::New,
            reason: String::new(),
            state: None,
            action: JobAction::Merge,
        };
        assert!(RunningCompactions::new(vec![new_run.clone()])
            .conflict(&job)
            .is_none());
        let joining = CompactionJob {
            output_run: OutputRun::Existing(7),
            ..new_run.clone()
        };
        assert!(RunningCompactions::new(vec![joining])
            .conflict(&job)
            .is_some());
        // Nor beside a job that takes its file.
        let holding = CompactionJob {
            inputs: job.inputs.clone(),
            output_level: 3,
            ..new_run
        };
        assert!(RunningCompactions::new(vec![holding])
            .conflict(&job)
            .is_some());
    }
}
