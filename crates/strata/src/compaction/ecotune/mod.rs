//! EcoTune (DESIGN.md §6; Wang et al., SIGMOD 2025): a three-level layout whose main-level merges are
//! timed by a dynamic program to maximise the queries served over a round under a steady write
//! stream. All in [`dp`] as pure functions: the dynamic programs (§4.3.1,
//! Algorithm 1 corrected, Algorithm 2), the event simulator that scores any schedule by DESIGN.md §6's
//! time model, the brute force over the DP's schedule space, the schedule walk and its Table-4
//! layouts. The three-level layout, the policy and its runtime picker are still to come.

pub mod dp;
mod policy;

pub use policy::{
    decode_merges_done, encode_merges_done, stored_round, EcoTune, EcoTuneSettings, Round,
    DEFAULT_LONG_SCAN_RATIO, DEFAULT_SCAN_LENGTH, DEFAULT_TC_OVER_TW, LAST_LEVEL, MAIN_LEVEL,
    MERGES_STATE_OWNER, ROUND_STATE_OWNER,
};
