//! Strata: an embeddable LSM-tree key-value store.
#![deny(clippy::unwrap_used)]
// Scaffolding: modules land one by one; removed once the engine wires every part.
#![allow(dead_code)]

pub(crate) mod coding;
pub mod env;
mod error;
pub(crate) mod key;
pub(crate) mod table;

pub use error::{Error, Result};
