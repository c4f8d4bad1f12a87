#![no_main]
//! `strata::fuzz_targets::range_filter` on every input (docs/TESTING.md).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata::fuzz_targets::range_filter(data);
});
