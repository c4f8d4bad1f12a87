//! Garnering (DESIGN.md §5.4, the Autumn paper): leveling whose capacities depend on the current
//! logical number of disk levels `L`. Level `i` (1..=L) holds up to
//! `C_i = base * T^(i-1) / c^((2L-1-i) * i / 2)` bytes [Autumn eq. 5], so adjacent levels differ
//! by `C_i / C_(i-1) = T / c^(L-i)` [eq. 4]: `T` between the last two levels, more toward level 1,
//! and every capacity grows as `L` grows. `0 < c <= 1`; `c = 1` is plain leveling.
//!
//! **Delayed last-level compaction.** When the last level `L` holds more than `C_L` and `c < 1`,
//! the policy does not compact it: it increments `L` with a state-only job
//! ([`CompactionJob::state_only`]). Every capacity grows, the old last level now sits one level
//! above a new, empty last level and fits again, and it moves down in a later cycle when it is
//! over its (new) capacity. If a level is still over capacity after the increment the usual
//! leveling rules move it down at the next pick; with `c = 1` the capacities do not depend on `L`,
//! so the over-full last level moves one file into level `L + 1` at once and the job carries the
//! new `L`.
//!
//! Everything else is leveling's machinery ([`super::leveling::pick_leveled`]): level 0 merges
//! into level 1 on `level0_compaction_trigger` runs, an over-full level moves its file with the
//! least overlap down, jobs that conflict with running ones are skipped.
//!
//! **Where `L` lives.** `L` is persisted in the manifest as policy state (owner `"garnering"`,
//! encoded by [`encode_level_count`]). When it is absent (a new database, or one written under
//! another policy) or undecodable, `L` is derived from the tree: the deepest non-empty level, at
//! least 1. The policy always uses `max(stored L, deepest non-empty level)`, and any job it picks
//! carries the `L` it was picked with when that differs from the stored one, so the first
//! compaction persists a derived `L`. `L` never decreases on its own: when a level empties (a
//! deletion-heavy workload drains the last level) the capacities stay where they were rather than
//! shrink and grow back. A full compaction (`Db::compact`) writes one run on level `L` and leaves
//! `L` unchanged, for the same reason.
//!
//! Where Strata departs from the authors' RocksDB fork: capacities are not rounded to multiples
//! of the write buffer, the deepest level is an ordinary level of capacity `C_L` (not an overflow
//! level at ratio `T`), and `L` is persisted rather than re-derived from the manifest on open.
//! `L` is capped at [`Garnering::with_last_level`] (the deepest level Strata addresses by
//! default); at the cap the last level simply grows.

use super::leveling::{pick_leveled, LeveledShape};
use super::{
    merge_or_move, whole_run, CompactionContext, CompactionJob, CompactionPolicy, JobAction,
    OutputRun, PolicyState, RunningCompactions, SizeRatio,
};
use super::{CompactionKind, CompactionSettings};
use crate::error::{Error, Result};
use crate::version::{Version, MAX_LEVELS};

/// The owner name of Garnering's policy state in the manifest.
pub const GARNERING_STATE_OWNER: &str = "garnering";

/// Version of the state encoding ([`encode_level_count`]).
const STATE_FORMAT: u8 = 1;

/// The Garnering merge policy (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Garnering {
    size_ratio: SizeRatio,
    scaling_factor: f64,
    base_level_bytes: Option<u64>,
    last_level: usize,
}

impl Garnering {
    /// Garnering with size ratio `T` (between the last two levels, 2..=1000), scaling factor
    /// `c = 0.8` (the paper's default), level-1 base `write_buffer * T`.
    pub fn new(size_ratio: f64) -> Result<Self> {
        Ok(Garnering {
            size_ratio: SizeRatio::new("garnering size_ratio", size_ratio)?,
            scaling_factor: 0.8,
            base_level_bytes: None,
            last_level: MAX_LEVELS - 1,
        })
    }

    /// Sets the scaling factor `c`, `0 < c <= 1` (1 is plain leveling).
    pub fn with_scaling_factor(mut self, c: f64) -> Result<Self> {
        if !c.is_finite() || c <= 0.0 || c > 1.0 {
            return Err(Error::InvalidArgument(format!(
                "garnering scaling factor c must be in (0, 1], got {c}"
            )));
        }
        self.scaling_factor = c;
        Ok(self)
    }

    /// Sets `base` in bytes (the level-1 capacity plain leveling would use); by default
    /// `write_buffer_bytes * T`.
    pub fn with_base_level_bytes(mut self, bytes: u64) -> Self {
        self.base_level_bytes = Some(bytes.max(1));
        self
    }

    /// The deepest level `L` may grow to (`1..MAX_LEVELS`); `MAX_LEVELS - 1` by default.
    pub fn with_last_level(mut self, last_level: usize) -> Result<Self> {
        self.last_level = super::check_last_level(last_level)?;
        Ok(self)
    }

    /// The size ratio `T`.
    pub fn size_ratio(&self) -> SizeRatio {
        self.size_ratio
    }

    /// The scaling factor `c`.
    pub fn scaling_factor(&self) -> f64 {
        self.scaling_factor
    }

    fn base_bytes(&self, context: &CompactionContext) -> f64 {
        self.base_level_bytes
            .map(|b| b as f64)
            .unwrap_or(context.write_buffer_bytes as f64 * self.size_ratio.get())
            .max(1.0)
    }

    /// The logical level count `L` the policy uses for `tree`: the stored one, but never less
    /// than the deepest non-empty level (and at least 1).
    pub fn level_count(&self, tree: &Version) -> usize {
        let deepest = tree.last_non_empty_level().unwrap_or(0).max(1);
        stored_level_count(tree).unwrap_or(1).max(deepest)
    }

    /// Capacities of levels 0..MAX_LEVELS for `L` levels (see [`garnering_capacities`]).
    pub fn level_capacities(&self, context: &CompactionContext, level_count: usize) -> Vec<f64> {
        garnering_capacities(
            self.base_bytes(context),
            self.size_ratio.get(),
            self.scaling_factor,
            level_count,
        )
    }

    /// The job carries `level_count` as state unless the manifest already holds it.
    fn with_state(tree: &Version, mut job: CompactionJob, level_count: usize) -> CompactionJob {
        if stored_level_count(tree) != Some(level_count) {
            job.state = Some(encode_level_count(level_count));
        }
        job
    }
}

/// Capacity in bytes of every level (index = level; 0 for level 0 and levels below `L`) when the
/// tree has `level_count` disk levels: `C_i = base * T^(i-1) / c^((2L-1-i) * i / 2)` for
/// `i` in 1..=L [Autumn eq. 5, DESIGN.md §5.4]. The exponent `(2L-1-i)*i` is always even.
pub fn garnering_capacities(
    base: f64,
    size_ratio: f64,
    scaling_factor: f64,
    level_count: usize,
) -> Vec<f64> {
    let level_count = level_count.clamp(1, MAX_LEVELS - 1);
    let mut capacity = vec![0.0; MAX_LEVELS];
    for (level, slot) in capacity
        .iter_mut()
        .enumerate()
        .take(level_count + 1)
        .skip(1)
    {
        let exponent = ((2 * level_count - 1 - level) * level / 2) as i32;
        *slot = base * size_ratio.powi(level as i32 - 1) / scaling_factor.powi(exponent);
    }
    capacity
}

/// Number of disk levels Garnering needs for `data` (entries or bytes, in the unit of `base`):
/// the exact solution of Autumn's own capacity equation, `C_L * T / (T - 1) >= N` (the last
/// level times the tail above it; DESIGN.md §5.4), not the paper's O() bound eq. 6. With
/// `a = ln(1/c)` and `X = ln(N * (T-1) / base)`,
/// `L = ceil( ( -(ln T - a/2) + sqrt( (ln T - a/2)^2 + 2*a*X ) ) / a )`, and `ceil(X / ln T)` at
/// `c = 1`. At least 1; 1 for meaningless input (non-positive or non-finite numbers).
pub fn garnering_level_count(data: f64, base: f64, size_ratio: f64, scaling_factor: f64) -> usize {
    let valid = data.is_finite()
        && base.is_finite()
        && size_ratio.is_finite()
        && scaling_factor.is_finite()
        && data > 0.0
        && base > 0.0
        && size_ratio > 1.0
        && scaling_factor > 0.0;
    if !valid {
        return 1;
    }
    let x = (data * (size_ratio - 1.0) / base).ln();
    if x <= 0.0 {
        return 1;
    }
    let ln_t = size_ratio.ln();
    let levels = if scaling_factor >= 1.0 {
        x / ln_t
    } else {
        let a = (1.0 / scaling_factor).ln();
        let b = ln_t - a / 2.0;
        (-b + (b * b + 2.0 * a * x).sqrt()) / a
    };
    if levels.is_finite() && levels >= 1.0 {
        // Capped far beyond any real tree; the cast of a finite float saturates anyway.
        levels.ceil().min(1e6) as usize
    } else {
        1
    }
}

/// Garnering's state as logged in the manifest: `[format = 1, L]`.
pub fn encode_level_count(level_count: usize) -> PolicyState {
    let level = u8::try_from(level_count.min(MAX_LEVELS - 1)).unwrap_or(u8::MAX);
    PolicyState {
        owner: GARNERING_STATE_OWNER.to_string(),
        bytes: vec![STATE_FORMAT, level],
    }
}

/// Decodes [`encode_level_count`]'s bytes; `None` for anything else (another format, a level out
/// of range), which the policy treats as absent.
pub fn decode_level_count(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [STATE_FORMAT, level] if (1..MAX_LEVELS).contains(&usize::from(*level)) => {
            Some(usize::from(*level))
        }
        _ => None,
    }
}

/// The level count stored in `tree`'s manifest state, if any and decodable.
fn stored_level_count(tree: &Version) -> Option<usize> {
    tree.policy_state(GARNERING_STATE_OWNER)
        .and_then(decode_level_count)
}

impl CompactionPolicy for Garnering {
    fn registered(&self) -> Option<(CompactionKind, CompactionSettings)> {
        let settings = CompactionSettings {
            garnering_c: self.scaling_factor,
            ..CompactionSettings::of_levels(
                self.size_ratio.get(),
                self.base_level_bytes,
                self.last_level,
            )
        };
        Some((CompactionKind::Garnering, settings))
    }

    fn name(&self) -> String {
        format!(
            "garnering(T={}, c={})",
            self.size_ratio, self.scaling_factor
        )
    }

    /// Leveling: one run per disk level.
    fn max_runs(&self, _level: usize, _last_level: usize) -> usize {
        1
    }

    fn pick(
        &self,
        tree: &Version,
        context: &CompactionContext,
        running: &RunningCompactions,
    ) -> Option<CompactionJob> {
        let mut level_count = self.level_count(tree);
        let mut capacity = self.level_capacities(context, level_count);
        let last_bytes = tree.levels()[level_count].bytes() as f64;
        if last_bytes > capacity[level_count] && level_count < self.last_level {
            if self.scaling_factor < 1.0 {
                // Delayed last-level compaction: grow L instead of compacting (module docs).
                return Some(CompactionJob::state_only(
                    encode_level_count(level_count + 1),
                    format!(
                        "last level {level_count} holds {last_bytes:.0} > {:.0} bytes: L = {}",
                        capacity[level_count],
                        level_count + 1
                    ),
                ));
            }
            // c = 1: capacities do not depend on L; the last level moves down into a new one.
            level_count += 1;
            capacity = self.level_capacities(context, level_count);
        }
        let job = pick_leveled(
            tree,
            context,
            running,
            &LeveledShape {
                capacity: &capacity,
                base_level: 1,
                last_level: level_count,
            },
        )?;
        Some(Self::with_state(tree, job, level_count))
    }

    fn full_compaction(
        &self,
        tree: &Version,
        _context: &CompactionContext,
    ) -> Option<CompactionJob> {
        // Everything into one run on level L (the data's home), L unchanged (module docs).
        tree.last_non_empty_level()?;
        let level_count = self.level_count(tree);
        let inputs = tree
            .levels()
            .iter()
            .enumerate()
            .flat_map(|(level, l)| l.runs().iter().map(move |run| whole_run(level, run)))
            .collect();
        let job = CompactionJob {
            inputs,
            output_level: level_count,
            output_run: OutputRun::New,
            reason: "full compaction".into(),
            state: None,
            action: JobAction::Merge,
        };
        Some(merge_or_move(
            Self::with_state(tree, job, level_count),
            tree,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{tree, tree_with_states, CONTEXT};
    use crate::compaction::RunInput;

    const MIB: f64 = 1024.0 * 1024.0;
    const GIB: f64 = 1024.0 * MIB;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn level_count_matches_the_spec_check_values() {
        // DESIGN.md §5.4 / Autumn §4: base 256 MB, T = 5, 87 GB -> 5, 4, 3 levels.
        let count = |c| garnering_level_count(87.0 * GIB, 256.0 * MIB, 5.0, c);
        assert_eq!(count(1.0), 5);
        assert_eq!(count(0.8), 4);
        assert_eq!(count(0.4), 3);
        // Tiny or meaningless input needs one level.
        assert_eq!(garnering_level_count(10.0, 256.0, 5.0, 0.8), 1);
        assert_eq!(garnering_level_count(f64::NAN, 256.0, 5.0, 0.8), 1);
        assert_eq!(garnering_level_count(1e9, 0.0, 5.0, 0.8), 1);
    }

    #[test]
    fn the_level_count_formula_is_the_least_l_whose_capacities_hold_the_data() {
        // The formula solves base*T^(L-1)/c^(L(L-1)/2) * T/(T-1) >= N (the last level's capacity
        // times the geometric tail): check it against that sum directly for many sizes.
        for &(t, c) in &[(2.0, 0.8), (3.0, 0.6), (5.0, 0.4), (10.0, 1.0), (4.0, 0.9)] {
            for step in 0..60 {
                let data = 1000.0 * 1.7f64.powi(step);
                let levels = garnering_level_count(data, 1000.0, t, c);
                // C_L = base * T^(L-1) / c^((L-1)L/2), eq. 5 at i = L (any L, not only the
                // levels Strata addresses).
                let holds = |l: usize| {
                    let exponent = ((l - 1) * l / 2) as i32;
                    let last = 1000.0 * t.powi(l as i32 - 1) / c.powi(exponent);
                    last * t / (t - 1.0) >= data * (1.0 - 1e-12)
                };
                assert!(holds(levels), "T={t} c={c} N={data}: L={levels} too small");
                if levels < MAX_LEVELS {
                    let by_table = garnering_capacities(1000.0, t, c, levels)[levels];
                    let exponent = ((levels - 1) * levels / 2) as i32;
                    let direct = 1000.0 * t.powi(levels as i32 - 1) / c.powi(exponent);
                    assert!(close(by_table, direct));
                }
                assert!(
                    levels == 1 || !holds(levels - 1),
                    "T={t} c={c} N={data}: L={levels} not the least"
                );
            }
        }
    }

    #[test]
    fn capacities_follow_equation_5_by_hand() {
        // base 1000, T = 2, c = 0.5, L = 3.
        let capacity = garnering_capacities(1000.0, 2.0, 0.5, 3);
        // exponents (2L-1-i)*i/2: i=1 -> 2, i=2 -> 3, i=3 -> 3.
        assert!(close(capacity[1], 1000.0 / 0.25));
        assert!(close(capacity[2], 2000.0 / 0.125));
        assert!(close(capacity[3], 4000.0 / 0.125));
        assert_eq!(capacity[0], 0.0);
        assert_eq!(capacity[4], 0.0);
        // Adjacent ratios T / c^(L-i): 2/0.5 = 4 (levels 1 -> 2), 2/1 = 2 (levels 2 -> 3).
        assert!(close(capacity[2] / capacity[1], 4.0));
        assert!(close(capacity[3] / capacity[2], 2.0));
        // c = 1 is plain leveling.
        let plain = garnering_capacities(1000.0, 10.0, 1.0, 4);
        assert!(close(plain[1], 1000.0) && close(plain[4], 1_000_000.0));
    }

    #[test]
    fn level_one_holds_about_0_18_percent_at_c_0_8_t_2_l_6() {
        let capacity = garnering_capacities(1.0, 2.0, 0.8, 6);
        let share = capacity[1] / capacity.iter().sum::<f64>();
        assert!((share - 0.0018).abs() < 0.0002, "level 1 share {share}");
    }

    #[test]
    fn an_over_full_last_level_grows_l_instead_of_compacting() {
        let policy = Garnering::new(2.0).expect("valid");
        // base = 2000 (write buffer 1000 * T). L = 2 (derived): C_1 = 2000/0.8 = 2500,
        // C_2 = 4000/0.8 = 5000. Level 2 holds 6000.
        let shape = tree(&[(1, 5, 1, "a", "c", 2000), (2, 6, 2, "a", "z", 6000)]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a decision");
        assert!(job.is_state_only());
        assert_eq!(job.state, Some(encode_level_count(3)));
        // With L = 3 logged: C_1 = 2000/0.8^2 = 3125, C_2 = 4000/0.8^3 = 7812.5 (both fit),
        // C_3 = 8000/0.8^3 = 15625. Nothing to do.
        let grown = tree_with_states(
            &[(1, 5, 1, "a", "c", 2000), (2, 6, 2, "a", "z", 6000)],
            &[encode_level_count(3)],
        );
        assert_eq!(policy.level_count(&grown), 3);
        assert_eq!(
            policy.pick(&grown, &CONTEXT, &RunningCompactions::none()),
            None
        );
    }

    #[test]
    fn a_level_still_over_capacity_after_the_increment_compacts_normally() {
        let policy = Garnering::new(2.0).expect("valid");
        // L = 3 stored: C_2 = 7812.5; level 2 holds 8000; level 3 holds a sliver.
        let shape = tree_with_states(
            &[
                (2, 6, 2, "a", "f", 4000),
                (2, 6, 3, "g", "z", 4000),
                (3, 7, 4, "a", "b", 10),
            ],
            &[encode_level_count(3)],
        );
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert!(!job.is_state_only());
        assert_eq!(job.output_level, 3);
        assert_eq!(
            job.inputs[0],
            RunInput {
                level: 2,
                run_id: 6,
                file_numbers: vec![3]
            },
            "the file that overlaps nothing below"
        );
        assert_eq!(job.state, None, "L = 3 is already stored");
    }

    #[test]
    fn with_c_1_the_last_level_moves_down_with_the_new_l() {
        let policy = Garnering::new(2.0)
            .expect("valid")
            .with_scaling_factor(1.0)
            .expect("valid");
        // c = 1, L = 1: C_1 = 2000; level 1 holds 3000.
        let shape = tree(&[(1, 5, 1, "a", "f", 1500), (1, 5, 2, "g", "z", 1500)]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.output_level, 2);
        // Nothing below either file: both move, in one job (RocksDB's extended trivial move).
        assert_eq!(job.input_file_count(), 2);
        assert_eq!(job.action, JobAction::Move);
        assert_eq!(job.state, Some(encode_level_count(2)));
    }

    #[test]
    fn l_is_restored_from_state_and_never_below_the_deepest_level() {
        let policy = Garnering::new(2.0).expect("valid");
        let files = [(1, 5, 1, "a", "c", 10)];
        assert_eq!(policy.level_count(&tree(&files)), 1, "derived");
        assert_eq!(
            policy.level_count(&tree_with_states(&files, &[encode_level_count(5)])),
            5,
            "stored L survives an empty level"
        );
        let deep = [(4, 5, 1, "a", "c", 10)];
        assert_eq!(
            policy.level_count(&tree_with_states(&deep, &[encode_level_count(2)])),
            4,
            "never above the data"
        );
        for garbage in [
            &[][..],
            &[9, 3][..],
            &[1, 0][..],
            &[1, 200][..],
            &[1, 2, 3][..],
        ] {
            let state = PolicyState {
                owner: GARNERING_STATE_OWNER.into(),
                bytes: garbage.to_vec(),
            };
            assert_eq!(
                policy.level_count(&tree_with_states(&deep, &[state])),
                4,
                "undecodable {garbage:?} is treated as absent"
            );
        }
    }

    #[test]
    fn the_first_job_persists_a_derived_l_and_conflicts_are_skipped() {
        let policy = Garnering::new(2.0).expect("valid");
        // L = 3 derived. Level 1 (C_1 = 2000/0.8^2 = 3125) holds 7000: one file moves to 2.
        // With either file held by a running job, the other's 3500 bytes still exceed C_1 (held
        // files do not count toward the score).
        let shape = tree(&[
            (1, 5, 1, "a", "c", 3500),
            (1, 5, 2, "d", "f", 3500),
            (2, 6, 3, "a", "c", 100),
            (3, 7, 4, "a", "z", 100),
        ]);
        let job = policy
            .pick(&shape, &CONTEXT, &RunningCompactions::none())
            .expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![2], "least overlap");
        assert_eq!(job.state, Some(encode_level_count(3)));
        // A running job holding file 2 leaves file 1.
        let running = RunningCompactions::new(vec![CompactionJob {
            inputs: vec![RunInput {
                level: 1,
                run_id: 5,
                file_numbers: vec![2],
            }],
            output_level: 0,
            output_run: OutputRun::New,
            reason: String::new(),
            state: None,
            action: JobAction::Merge,
        }]);
        let job = policy.pick(&shape, &CONTEXT, &running).expect("a job");
        assert_eq!(job.inputs[0].file_numbers, vec![1]);
        // A running job writing level 2 blocks every move into it.
        let running = RunningCompactions::new(vec![CompactionJob {
            inputs: vec![RunInput {
                level: 3,
                run_id: 7,
                file_numbers: vec![4],
            }],
            output_level: 2,
            output_run: OutputRun::New,
            reason: String::new(),
            state: None,
            action: JobAction::Merge,
        }]);
        assert_eq!(policy.pick(&shape, &CONTEXT, &running), None);
    }

    #[test]
    fn full_compaction_writes_level_l_and_keeps_l() {
        let policy = Garnering::new(2.0).expect("valid");
        let shape = tree_with_states(
            &[(0, 9, 1, "a", "c", 10), (1, 5, 2, "a", "z", 10)],
            &[encode_level_count(4)],
        );
        let job = policy.full_compaction(&shape, &CONTEXT).expect("a job");
        assert_eq!(job.output_level, 4);
        assert_eq!(job.inputs.len(), 2);
        assert_eq!(job.state, None);
        assert_eq!(policy.full_compaction(&tree(&[]), &CONTEXT), None);
    }

    #[test]
    fn invalid_options_are_rejected() {
        assert!(Garnering::new(1.0).is_err());
        assert!(Garnering::new(f64::INFINITY).is_err());
        let policy = Garnering::new(3.0).expect("valid");
        for c in [0.0, -0.5, 1.01, f64::NAN] {
            assert!(policy.clone().with_scaling_factor(c).is_err(), "c = {c}");
        }
        assert!(policy.clone().with_last_level(0).is_err());
        assert!(policy.clone().with_last_level(MAX_LEVELS).is_err());
        assert_eq!(policy.scaling_factor(), 0.8, "the default c");
    }
}
