//! Filters (SPEC §1): the per-file structures a point lookup consults to skip files that cannot
//! hold its key.
//!
//! * [`bloom`]: the cache-line-blocked Bloom filter with a real-valued bits-per-key chosen per
//!   file, its on-disk format, and the FPR math (`eps = exp(-ln2sq * bpk)` and its inverse) that
//!   the allocation policies (SPEC §2-3) use.
//! * [`modular`]: the modular filter (Mnemosyne §4.2): how a file's bits per key is split into
//!   independently seeded Bloom modules, the index block that locates them, and the product rule
//!   for their combined FPR.
//! * [`ribbon`]: the Standard Ribbon filter (Dillinger & Walzer 2021) with 128-bit coefficient
//!   rows and interleaved solution storage: about 30% less memory than the blocked Bloom filter
//!   for the same FPR, at a higher construction cost; its own format (version byte 2) and FPR
//!   model `eps = 2^-(bpk / 1.058)`.
//!
//! Keys are hashed once with [`bloom::key_hash`]; the hash is then probed against every filter on the
//! lookup path (and, for modular filters, every module), so builders and readers take hashes.

pub(crate) mod bloom;
pub(crate) mod modular;
pub(crate) mod ribbon;
