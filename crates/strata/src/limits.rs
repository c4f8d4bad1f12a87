//! The engine's hard limits: sizes every layer checks against, from the write batch and the
//! memtable up to the tree's levels. They sit below every other module so that none of those
//! has to import the options or the versions to learn them.

/// The largest user key Strata accepts, in bytes.
pub const MAX_KEY_BYTES: usize = 64 * 1024;
/// The largest value Strata accepts, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024 * 1024;
/// The largest encoded write batch Strata accepts, in bytes.
pub const MAX_BATCH_BYTES: usize = 512 * 1024 * 1024;
/// The deepest level Strata addresses (level 0 plus 15 disk levels).
pub const MAX_LEVELS: usize = 16;
