//! EcoTune (SPEC §6; Wang et al., SIGMOD 2025): a three-level layout whose main-level merges are
//! timed by a dynamic program to maximise the queries served over a round under a steady write
//! stream. Built so far (issue 17): the dynamic programs as pure functions ([`dp`]). The layout,
//! the policy, the event simulator, the brute force and the schedule walk are still to come.

pub mod dp;
