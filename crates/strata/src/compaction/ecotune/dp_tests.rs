use super::*;

fn parameters(units: u32, t_c: f64, beta_q: f64, r: f64, f: f64) -> RoundParameters {
    RoundParameters {
        long_scan_ratio: r,
        false_positive_rate: f,
        beta_q,
        t_w: 1.0,
        t_c,
        units,
        ccap: 3,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn arrival_counts_take_exact_multiples_as_they_are() {
    // DESIGN.md §6: T_c / T_w = 1/3 with x = 3 must give one arrival.
    let p = RoundParameters {
        t_w: 3.0,
        t_c: 1.0,
        ..parameters(7, 1.0, 0.5, 0.3, 0.01)
    };
    assert_eq!(p.arrivals_until_merged(3), 1);
    assert_eq!(p.arrivals_until_merged(1), 1);
    assert_eq!(p.arrivals_until_merged(4), 2);
    let third = parameters(7, 1.0 / 3.0, 0.5, 0.3, 0.01);
    assert_eq!(third.arrivals_until_merged(3), 1);
    assert_eq!(third.arrivals_until_merged(6), 2);
    assert_eq!(third.arrivals_until_merged(7), 3);
}

#[test]
fn a_merge_is_scored_at_the_slowed_speed_of_the_runs_it_sees() {
    let p = parameters(7, 0.4, 0.5, 0.3, 0.01);
    // 2 units take 0.8 < T_w: no arrival during the merge, 0.8 at q'(e).
    assert!(close(p.merge_score(3, 2), 0.8 * p.q_merging(3)));
    // 5 units take 2.0: arrivals at 1 (e + 1 runs from then), the merge ends at the next one.
    let expected = p.q_merging(3) + p.q_merging(4);
    assert!(
        close(p.merge_score(3, 5), expected),
        "{}",
        p.merge_score(3, 5)
    );
    // 6 units take 2.4: two arrivals during it, then 0.4 at e + 2.
    let expected = p.q_merging(3) + p.q_merging(4) + 0.4 * p.q_merging(5);
    assert!(close(p.merge_score(3, 6), expected));
    // More runs, slower queries; long scans pay for every run.
    assert!(p.q(1) > p.q(2));
    let gets_only = RoundParameters {
        long_scan_ratio: 0.0,
        ..p
    };
    assert!(close(gets_only.q(1), gets_only.q(9)));
}

/// DESIGN.md §6's first exact check: with `beta_q = 0` and `(R - 1) * T_c <= T_w`, Algorithm 2
/// equals `T_w * q(0) + f(0, R)`.
#[test]
fn algorithm2_reduces_to_the_simple_program_when_merges_are_short_and_free() {
    for units in 1..=12u32 {
        for share in [0.2, 0.6, 1.0] {
            let t_c = if units > 1 {
                share / f64::from(units - 1)
            } else {
                share
            };
            for r in [0.1, 0.3, 0.5, 1.0] {
                for f in [0.0, 0.01, 0.2] {
                    let p = parameters(units, t_c, 0.0, r, f);
                    let mut dp = Dp::new(p).expect("valid");
                    let (simple, second) = (dp.simple_score(), dp.algorithm2_score());
                    assert!(
                        close(simple, second),
                        "R {units} T_c {t_c} r {r} f {f}: simple {simple}, algorithm 2 {second}"
                    );
                }
            }
        }
    }
}

/// DESIGN.md §6's second exact check: with `(Ccap + 1) * R * T_c <= T_w`, Algorithm 2 equals the
/// corrected Algorithm 1.
#[test]
fn algorithm2_reduces_to_algorithm1_when_every_merge_fits_one_interval() {
    for units in 1..=12u32 {
        for share in [0.1, 0.5, 1.0] {
            let t_c = share / f64::from(4 * units);
            for beta_q in [0.0, 0.5, 1.0] {
                for r in [0.1, 0.5, 1.0] {
                    let p = parameters(units, t_c, beta_q, r, 0.01);
                    let mut dp = Dp::new(p).expect("valid");
                    let (first, second) = (dp.algorithm1_score(), dp.algorithm2_score());
                    assert!(
                        close(first, second),
                        "R {units} T_c {t_c} beta_q {beta_q} r {r}: algorithm 1 {first}, \
                         algorithm 2 {second}"
                    );
                }
            }
        }
    }
}

#[test]
fn merging_pays_when_scans_dominate_and_not_when_they_are_absent() {
    // Long scans pay for every run: some merge beats never merging. With no scans and no
    // filter false positives the run count does not matter, and merging only slows queries.
    let mut scans = Dp::new(parameters(10, 0.1, 0.5, 1.0, 0.0)).expect("valid");
    let (_, first) = scans.algorithm2_with_choice(0, 0, 10, 30);
    let never = {
        let p = scans.parameters();
        // Every unit final (x = 1 throughout), then the global merge.
        let mut score = 0.0;
        for e in 0..10 {
            score += p.t_w * p.q(e);
        }
        score + p.merge_score(10, 40)
    };
    assert!(scans.algorithm2_score() > never + 1e-9);
    assert!(first >= 1);
    let mut gets = Dp::new(parameters(10, 0.1, 0.5, 0.0, 0.0)).expect("valid");
    assert!(close(gets.algorithm2_score(), {
        let p = gets.parameters();
        let mut score = 0.0;
        for e in 0..10 {
            score += p.t_w * p.q(e);
        }
        score + p.merge_score(10, 40)
    }));
}

#[test]
fn invalid_parameters_are_refused() {
    assert!(Dp::new(parameters(0, 0.1, 0.5, 0.3, 0.01)).is_err());
    assert!(Dp::new(parameters(5, 0.0, 0.5, 0.3, 0.01)).is_err());
    assert!(Dp::new(parameters(5, 0.1, 1.5, 0.3, 0.01)).is_err());
    assert!(Dp::new(parameters(5, f64::NAN, 0.5, 0.3, 0.01)).is_err());
    assert!(Dp::new(parameters(5, 0.1, 0.5, -0.1, 0.01)).is_err());
}

/// DESIGN.md §6: the simulator's score of the DP's schedule equals the DP's score.
#[test]
fn the_simulator_scores_the_dp_schedule_as_the_dp_does() {
    for units in 1..=14u32 {
        for t_c in [0.05, 0.2, 0.34, 0.5, 0.9, 1.6] {
            for beta_q in [0.0, 0.5, 1.0] {
                for r in [0.1, 0.5, 1.0] {
                    let p = parameters(units, t_c, beta_q, r, 0.02);
                    let mut dp = Dp::new(p).expect("valid");
                    let score = dp.algorithm2_score();
                    let schedule = dp.schedule();
                    let simulated = simulate(&p, &schedule).unwrap_or_else(|e| {
                        panic!("R {units} T_c {t_c} beta_q {beta_q} r {r}: {e}: {schedule:?}")
                    });
                    assert!(
                        close(score, simulated),
                        "R {units} T_c {t_c} beta_q {beta_q} r {r}: DP {score}, simulated \
                         {simulated}: {schedule:?}"
                    );
                    let global = schedule.last().expect("a global compaction");
                    assert_eq!(global.start_arrival, units);
                    assert_eq!(global.units, (p.ccap + 1) * units);
                }
            }
        }
    }
}

/// DESIGN.md §6: for every R <= 8, the DP's score is the best of every schedule in its space.
#[test]
fn the_dp_finds_the_best_schedule_of_its_space() {
    for units in 1..=8u32 {
        for t_c in [0.1, 0.34, 0.5, 1.2] {
            for beta_q in [0.0, 0.5, 1.0] {
                for r in [0.1, 0.3, 1.0] {
                    let p = parameters(units, t_c, beta_q, r, 0.02);
                    let mut dp = Dp::new(p).expect("valid");
                    let score = dp.algorithm2_score();
                    let (best, schedules) = brute_force(&p);
                    assert!(schedules >= 1);
                    assert!(
                        close(score, best),
                        "R {units} T_c {t_c} beta_q {beta_q} r {r}: DP {score}, best of \
                         {schedules} schedules {best}"
                    );
                }
            }
        }
    }
}

/// The paper's Table 4 notation (R = 7, Ccap = 3, 1/3 < T_c/T_w <= 1/2): one layout per
/// arrival, its run sizes adding up to the units arrived, oldest first.
#[test]
fn layouts_are_written_in_table_4_notation() {
    let p = parameters(7, 0.4, 0.5, 0.5, 0.01);
    let mut dp = Dp::new(p).expect("valid");
    let schedule = dp.schedule();
    let chosen = layouts(7, &schedule);
    assert_eq!(chosen.len(), 7);
    for (arrival, layout) in chosen.iter().enumerate() {
        let units: u32 = layout.chars().filter_map(|c| c.to_digit(10)).sum();
        assert_eq!(units as usize, arrival + 1, "{chosen:?}");
    }
    assert_eq!(chosen[0], "1");
    // Qualitatively the paper's: with r = 0.3 the last four layouts are Table 4's (the paper's
    // second is "2" where this DP keeps "11" and merges three units at the third arrival).
    let mut dp = Dp::new(parameters(7, 0.4, 0.5, 0.3, 0.01)).expect("valid");
    let table = layouts(7, &dp.schedule());
    assert_eq!(table, ["1", "11", "3", "31", "32", "321", "3211"]);
    // A hand-made schedule: merge the two pending units at arrival 2, then three at arrival 5.
    let merges = [
        Merge {
            start_arrival: 2,
            units: 2,
            runs: 2,
            first_run: 0,
        },
        Merge {
            start_arrival: 5,
            units: 3,
            runs: 3,
            first_run: 1,
        },
        Merge {
            start_arrival: 7,
            units: 28,
            runs: 4,
            first_run: 0,
        },
    ];
    assert_eq!(
        layouts(7, &merges),
        ["1", "2", "21", "211", "23", "231", "2311"]
    );
    assert!(simulate(&p, &merges).is_ok());
    // Merges that overlap, or name runs that do not exist, are not schedules.
    let overlapping = [merges[1], merges[0]];
    assert!(simulate(&p, &overlapping).is_err());
    let too_many = [Merge {
        start_arrival: 1,
        units: 2,
        runs: 2,
        first_run: 0,
    }];
    assert!(simulate(&p, &too_many).is_err());
}

#[test]
fn layouts_with_runs_of_ten_units_or_more_separate_the_sizes() {
    let merges = [
        Merge {
            start_arrival: 12,
            units: 12,
            runs: 12,
            first_run: 0,
        },
        Merge {
            start_arrival: 13,
            units: 52,
            runs: 2,
            first_run: 0,
        },
    ];
    let shown = layouts(13, &merges);
    assert_eq!(shown[8], "111111111");
    assert_eq!(shown[11], "12");
    assert_eq!(shown[12], "12+1");
}
