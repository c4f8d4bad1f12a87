//! The write-amplification prediction of a live database (`Db::predicted_write_amplification`,
//! `model::writes`): its own merge policy replayed on the simulator over a write stream, beside
//! Monkey's closed form on its tree.

use super::DbInner;
use crate::error::{Error, Result};
use crate::model::writes::{
    closed_form_write_amplification, table_bytes_per_entry, PredictedWrites, WriteStream,
};
use crate::policy::{CompactionKind, FilterAllocatorKind};
use crate::sim::{seeded_draws, SimConfig, Simulation};

/// Seeds of the synthetic key ranges the replay is averaged over.
const REPLAYS: u64 = 3;

/// The key space of a stream of new keys: the simulator's largest, so that its files' key
/// ranges overlap as sparse random subsets do (a merge keeps every entry).
const NEW_KEYS_SPACE: u64 = 1 << 53;

/// See `Db::predicted_write_amplification`.
pub(super) fn predict(inner: &DbInner, stream: &WriteStream) -> Result<PredictedWrites> {
    if stream.entries == 0 {
        return Err(Error::InvalidArgument(
            "a write stream to predict needs at least one entry".into(),
        ));
    }
    if !(stream.user_bytes_per_entry.is_finite() && stream.user_bytes_per_entry > 0.0) {
        return Err(Error::InvalidArgument(format!(
            "user bytes per entry must be positive, not {}",
            stream.user_bytes_per_entry
        )));
    }
    let view = inner.view.load_full();
    let options = &inner.options;
    let policy = inner.compaction_policy();
    let registered = policy.registered();
    let (size_ratio, garnering_c) = registered
        .as_ref()
        .map_or((10.0, 1.0), |(_, s)| (s.size_ratio, s.garnering_c));
    let table_bytes = table_bytes_per_entry(&view.version).unwrap_or(stream.user_bytes_per_entry);
    let closed_form = match &registered {
        Some((kind, _)) => {
            closed_form_write_amplification(*kind, size_ratio, garnering_c, &view.version)?
        }
        None => None,
    };
    let config = SimConfig {
        // The policy replayed is the database's own (`Simulation::with_policy`); the kind only
        // names the allocator's setting, which changes no byte written.
        compaction: registered.map_or(CompactionKind::Leveling, |(kind, _)| kind),
        filter_policy: FilterAllocatorKind::Uniform,
        bits_per_key: 10.0,
        num: stream.entries,
        write_buffer_bytes: options.write_buffer_bytes as u64,
        size_ratio: size_ratio.max(2.0),
        garnering_c,
        entry_bytes: (table_bytes.round() as u64).max(1),
        key_space: Some(stream.key_space.unwrap_or(NEW_KEYS_SPACE)),
        target_file_bytes: Some(options.target_file_bytes),
        level0_compaction_trigger: options.level0_compaction_trigger,
        max_background_compactions: options.max_background_compactions,
    };
    let mut sum = 0.0;
    for seed in 0..REPLAYS {
        let summary = Simulation::new(&config, seeded_draws(seed))?
            .with_policy(std::sync::Arc::clone(&policy))
            .with_flush_entries(stream.entries_per_flush)
            .run::<Error>(&mut |_, _| Ok(()))?;
        sum += summary.write_amplification;
    }
    Ok(PredictedWrites {
        replay: sum / REPLAYS as f64,
        replays: REPLAYS as usize,
        closed_form,
        table_bytes_per_entry: table_bytes,
        user_bytes_per_entry: stream.user_bytes_per_entry,
    })
}

#[cfg(test)]
mod tests {
    use crate::model::writes::ENGINE_TARGET_FILE_BYTES;
    use crate::Options;

    /// The tuner's replays cut outputs where a database opened from its options file does.
    #[test]
    fn the_replays_output_file_size_is_the_engines_default() {
        assert_eq!(
            ENGINE_TARGET_FILE_BYTES,
            Options::default().target_file_bytes
        );
    }
}
