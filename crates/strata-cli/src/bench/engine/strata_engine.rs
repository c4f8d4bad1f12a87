//! Strata behind the benchmark's [`Engine`] trait.

use std::path::Path;
use std::sync::Arc;

use strata::{Db, Options, WriteBatch};

use super::{
    read_scan, BatchOp, CompressionCounters, Engine, EngineConfig, EngineCounters, IoByKind,
    LevelShape, PredictedBlockReads, PredictedLookupIo, PredictedWriteAmp, ScanOutcome, TreeShape,
    WriteCauses, CAUSE_LEVELS,
};
use crate::error::CliResult;
use crate::policies::{CompactionSettings, FilterSettings};

/// Memory of one file's access statistics (Merlin's 560 bytes plus its handle), rounded up.
const ACCESS_BYTES_PER_FILE: u64 = 600;

/// Strata with the benchmark's settings.
pub struct StrataEngine {
    db: Db,
    settings: Vec<String>,
    /// Auto-tune is on (`--auto-tune`): the shape then says what it decided.
    config_auto_tune: bool,
}

impl StrataEngine {
    /// Opens (or creates) a Strata database in `dir`.
    pub fn open(dir: &Path, config: &EngineConfig) -> CliResult<Self> {
        let policy = config.compaction.build(&CompactionSettings {
            garnering_c: config.garnering_c,
            ecotune: config.ecotune,
            ..CompactionSettings::with_size_ratio(config.size_ratio)
        })?;
        // The memtable holds about write_buffer / (entry + 8-byte trailer + ~64 bytes of
        // skiplist bookkeeping) entries when it is flushed (`memtable/mod.rs`).
        let buffer_entries = (config.write_buffer_bytes / (config.entry_bytes + 8 + 64)).max(1);
        let allocator = config.filter_policy.build(&FilterSettings {
            bits_per_key: config.bits_per_key,
            compaction: config.compaction,
            size_ratio: config.size_ratio,
            expected_entries: config.expected_entries,
            buffer_entries,
            budget_bytes: config.filter_budget_bytes,
            disk_modules: config.elastic_disk_modules,
        })?;
        // Merlin's statistics (Mnemosyne+) are paid for out of the block cache, so that every
        // policy runs with the same memory: about 600 bytes per table file, for the files the
        // loaded data needs at the target file size plus 8 (level 0 and partial files).
        let mut cache_bytes = config.cache_bytes;
        let mut access_note = None;
        let merlin = config.filter_policy.needs_access_statistics();
        if merlin || config.access_statistics {
            let files = (config.expected_entries * config.entry_bytes)
                .div_ceil(config.target_file_bytes.max(1))
                + 8;
            let taken = files * ACCESS_BYTES_PER_FILE;
            cache_bytes = cache_bytes.saturating_sub(taken);
            access_note = Some(format!(
                "access statistics: {taken} bytes ({files} files x {ACCESS_BYTES_PER_FILE} B) taken from the block cache"
            ));
        }
        let defaults = Options::default();
        let index_restart_interval = config
            .index_restart_interval
            .unwrap_or(defaults.index_block_restart_interval);
        let max_background_compactions = config
            .max_background_compactions
            .unwrap_or(defaults.max_background_compactions);
        let partition_above = config
            .partition_metadata_above_bytes
            .unwrap_or(defaults.partition_metadata_above_bytes);
        let metadata_block_bytes = config
            .metadata_block_bytes
            .map_or(defaults.metadata_block_bytes, |bytes| {
                usize::try_from(bytes).unwrap_or(usize::MAX)
            });
        let options = defaults
            .index_block_restart_interval(index_restart_interval)
            .partition_metadata_above_bytes(partition_above)
            .metadata_block_bytes(metadata_block_bytes)
            .max_background_compactions(max_background_compactions)
            .write_buffer_bytes(usize::try_from(config.write_buffer_bytes).unwrap_or(usize::MAX))
            .block_bytes(config.block_bytes)
            .target_file_bytes(config.target_file_bytes)
            .block_cache_bytes(cache_bytes)
            .direct_reads(config.direct_reads)
            .scan_readahead_max_bytes(
                usize::try_from(config.scan_readahead_bytes).unwrap_or(usize::MAX),
            )
            .pin_filter_and_index_blocks(config.pin_index_filter)
            .access_statistics(config.access_statistics)
            .access_sample_every(config.access_sample_every)
            .access_recent_weight(config.access_recent_weight)
            .compaction_policy(Arc::clone(&policy))
            .filter_allocator(allocator)
            .filter_family(config.filter_family)
            .range_filter_bits(config.range_filter_bits)
            .auto_tune(config.auto_tune)
            .filter_rebuild_bytes_per_sec(
                config
                    .filter_rebuild_rate
                    .unwrap_or(strata::DEFAULT_FILTER_REBUILD_BYTES_PER_SEC),
            )
            .compression(config.compression.clone());
        options.validate()?;
        let settings = vec![
            format!(
                "block_bytes {}; index block restart interval {}",
                options.block_bytes, options.index_block_restart_interval
            ),
            if options.partition_metadata_above_bytes == u64::MAX {
                "index and filter never partitioned".to_string()
            } else {
                format!(
                    "index and filter partitioned above {} bytes, partitions of {} bytes",
                    options.partition_metadata_above_bytes, options.metadata_block_bytes
                )
            },
            format!(
                "filter {}, family {}, rebuilds up to {} bytes/s; {}",
                options.filter_allocator.name(),
                options.filter_family.name(),
                options.filter_rebuild_bytes_per_sec,
                match options.range_filter_bits {
                    0 => "no range filters".to_string(),
                    bits => format!("range filters of {bits} quantum bits"),
                }
            ),
            format!(
                "block_cache_bytes {} (data, index and filter blocks)",
                options.block_cache_bytes
            ),
            format!(
                "write_buffer_bytes {} x {} memtables",
                options.write_buffer_bytes, options.max_write_buffers
            ),
            format!("compaction {}", policy.name()),
            format!("target_file_bytes {}", options.target_file_bytes),
            format!(
                "compression {} (data and index blocks; kept raw unless it saves 1/8)",
                options.compression
            ),
            format!("direct_reads {}", options.direct_reads),
            format!(
                "scan_readahead_max_bytes {}",
                options.scan_readahead_max_bytes
            ),
            format!(
                "pin_filter_and_index_blocks {}",
                options.pin_filter_and_index_blocks
            ),
            format!(
                "access_statistics {} (one lookup in {} recorded, recent weight {})",
                options.keeps_access_statistics(),
                options.access_sample_every,
                options.access_recent_weight
            ),
        ];
        let mut settings = settings;
        settings.extend(access_note);
        if let Some(auto_tune) = &options.auto_tune {
            settings.push(format!(
                "auto-tune every {} operations or {} s, or after {} on a change of mix, at most \
                 {}% of a core (min gain {}, {} confirmations, horizon {} intervals); merges for \
                 reads {}",
                auto_tune.every_operations,
                auto_tune.every_seconds,
                auto_tune.early_decisions_after,
                auto_tune.max_processor_share * 100.0,
                auto_tune.min_gain,
                auto_tune.confirmations,
                auto_tune.horizon_intervals,
                if auto_tune.compact_for_reads {
                    "on"
                } else {
                    "off"
                }
            ));
        }
        let config_auto_tune = options.auto_tune.is_some();
        Ok(StrataEngine {
            db: Db::open(dir, options)?,
            settings,
            config_auto_tune,
        })
    }
}

/// Strata's bytes written by cause (`IoStats::merge_write_bytes` and the rest), levels deeper
/// than [`CAUSE_LEVELS`] summed into the last.
fn write_causes(io: &strata::stats::IoStats) -> WriteCauses {
    let mut merges_into = [0u64; CAUSE_LEVELS];
    for (level, &bytes) in io.merge_write_bytes.iter().enumerate().skip(1) {
        merges_into[level.min(CAUSE_LEVELS - 1)] += bytes;
    }
    WriteCauses {
        flush: io.flush_write_bytes,
        level0_merges: io.merge_write_bytes[0],
        merges_into,
        full: io.full_compaction_write_bytes,
        filter_rebuilds: io.filter_rebuild_write_bytes,
        trivial_moves: io.trivial_moves,
    }
}

/// Per-level counts with the levels past the last slot summed into it.
fn by_cause_level(levels: &[u64]) -> [u64; CAUSE_LEVELS] {
    let mut out = [0u64; CAUSE_LEVELS];
    for (level, &count) in levels.iter().enumerate() {
        out[level.min(CAUSE_LEVELS - 1)] += count;
    }
    out
}

impl Engine for StrataEngine {
    fn name(&self) -> &'static str {
        "strata"
    }

    fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }

    fn settings(&self) -> Vec<String> {
        self.settings.clone()
    }

    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()> {
        Ok(self.db.put(key, value)?)
    }

    fn get(&self, key: &[u8]) -> CliResult<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.into_vec()))
    }

    fn delete(&self, key: &[u8]) -> CliResult<()> {
        Ok(self.db.delete(key)?)
    }

    fn write_batch(&self, ops: &[BatchOp]) -> CliResult<()> {
        let mut batch = WriteBatch::new();
        for op in ops {
            match op {
                BatchOp::Put(key, value) => batch.put(key, value),
                BatchOp::Delete(key) => batch.delete(key),
            };
        }
        Ok(self.db.write(batch)?)
    }

    fn scan(&self, from: &[u8], count: u64) -> CliResult<ScanOutcome> {
        let mut iterator = self.db.iter();
        iterator.seek(from);
        let keys = iterator.map(|entry| Ok(entry?.0));
        read_scan(from, keys, count)
    }

    fn scan_bounded(&self, from: &[u8], until: &[u8], count: u64) -> CliResult<ScanOutcome> {
        let keys = self.db.range(from..until).map(|entry| Ok(entry?.0));
        read_scan(from, keys, count)
    }

    fn flush(&self) -> CliResult<()> {
        Ok(self.db.flush()?)
    }

    fn wait_for_compactions(&self) -> CliResult<()> {
        Ok(self.db.wait_for_compactions()?)
    }

    fn compact_all(&self) -> CliResult<()> {
        Ok(self.db.compact()?)
    }

    fn counters(&self) -> EngineCounters {
        let stats = self.db.stats();
        let last = stats.levels.last().map_or(0, |level| level.level);
        let io = stats.io;
        EngineCounters {
            filter_skips: Some(io.filter_skips_total()),
            last_level_filter_probes: io.filter_probes.get(last).copied(),
            last_level_filter_skips: io.filter_skips.get(last).copied(),
            range_filter_probes: Some(io.range_filter_probes_total()),
            range_filter_negatives: Some(io.range_filter_negatives_total()),
            seek_runs: Some(io.seek_runs_total()),
            data_block_reads_by_level: Some(by_cause_level(&io.data_block_reads)),
            cache_hits: Some(IoByKind {
                data: io.data_cache_hits,
                index: io.index_cache_hits,
                filter: io.filter_cache_hits,
            }),
            block_read_micros: Some(io.block_read_nanos / 1_000),
            scan_readahead_reads: Some(io.scan_readahead_reads),
            scan_readahead_blocks: Some(io.scan_readahead_blocks),
            data_block_reads: Some(io.data_block_reads_total()),
            index_block_reads: Some(io.index_block_reads_total()),
            filter_block_reads: Some(io.filter_block_reads_total()),
            read_bytes: Some(io.read_bytes),
            filter_probes: Some(io.filter_probes_total()),
            filter_false_positives: Some(io.filter_false_positives_total()),
            unnecessary_data_reads: Some(io.unnecessary_data_reads_total()),
            // Exact: Strata knows which file held the key.
            unnecessary_data_reads_max: None,
            user_write_bytes: Some(io.user_write_bytes),
            // Filter rebuilds rewrite files on the device as compactions do: counted as writes.
            table_write_bytes: Some(io.table_write_bytes()),
            wal_write_bytes: Some(io.wal_write_bytes),
            write_causes: Some(write_causes(&io)),
            write_stalls: Some(io.write_slowdowns + io.write_stops),
            write_slowdowns: Some(io.write_slowdowns),
            write_stops: Some(io.write_stops),
            filter_rebuilds: Some(io.filter_rebuilds),
            filter_rebuild_bytes: Some(
                io.filter_rebuild_read_bytes + io.filter_rebuild_write_bytes,
            ),
            write_stall_micros: Some(io.write_stall_micros),
            compaction_micros: Some(io.compaction_micros),
            compression: Some(CompressionCounters {
                uncompressed_bytes: io.block_bytes_uncompressed_total(),
                stored_bytes: io.block_bytes_stored_total(),
                compress_nanos: Some(io.compress_nanos),
                decompress_nanos: Some(io.decompress_nanos),
                blocks_decompressed: io.blocks_decompressed,
            }),
        }
    }

    fn reset_counters(&self) {
        self.db.reset_stats();
    }

    fn shape(&self) -> TreeShape {
        let stats = self.db.stats();
        TreeShape {
            levels: stats
                .levels
                .iter()
                .map(|level| LevelShape {
                    level: level.level,
                    runs: level.runs,
                    files: level.files,
                    entries: Some(level.entries),
                    bytes: level.bytes,
                    bits_per_key: Some(level.bits_per_key),
                })
                .collect(),
            table_bytes: stats.table_bytes(),
            memtable_bytes: Some(stats.memtable_bytes),
            avg_bits_per_key: Some(stats.average_bits_per_key),
            effective_bits_per_key: Some(stats.effective_bits_per_key),
            bits_per_key_cap: stats.bits_per_key_cap,
            bits_per_key_budget: Some(stats.bits_per_key_budget),
            filter_bytes_on_disk: Some(stats.levels.iter().map(|level| level.filter_bytes).sum()),
            filter_bytes_in_use: Some(stats.filter_bytes_in_use),
            compaction_state: stats.compaction_state.clone(),
            design: Some({
                let history = self.db.auto_tune_history();
                let mut design = format!("compaction {}", self.db.compaction_policy_name());
                if self.config_auto_tune {
                    let switches = history.iter().filter(|d| d.switched).count();
                    design.push_str(&format!(
                        "; auto-tune: {} decisions, {switches} switches among the last {}",
                        history.last().map_or(0, |last| last.number),
                        history.len()
                    ));
                    if let Some(last) = history.last() {
                        design.push_str(&format!("; last {last}"));
                    }
                }
                design
            }),
            range_filter_bytes: Some(stats.range_filter_bytes),
            top_index: (stats.top_index_entries > 0)
                .then_some((stats.top_index_entries, stats.top_index_bytes)),
            pinned_bytes: Some(stats.pinned_bytes),
            access_statistics_bytes: Some(stats.access_statistics_bytes),
            probe_times: {
                let times = &stats.probe_times;
                let micros = |time: strata::version::ProbeTime| time.mean_nanos().map(|n| n / 1e3);
                Some(super::ProbeTimes {
                    rejected_us: micros(times.rejected),
                    cached_block_us: micros(times.cached_block),
                    device_block_us: micros(times.device_block),
                    cached_false_positive_cost: stats.cached_false_positive_cost(),
                })
            },
            predicted_lookup_io: None,
        }
    }

    fn predicted_lookup_io(&self) -> Option<PredictedLookupIo> {
        let predicted = self.db.predicted_lookup_cost();
        let device = self.db.predicted_device_reads();
        let kinds = |reads: strata::model::tree::BlockReads| PredictedBlockReads {
            data: reads.data,
            index: reads.index,
            filter: reads.filter,
        };
        Some(PredictedLookupIo {
            zero_result: predicted.zero_result_io,
            existing: predicted.existing_io,
            zero_result_device: kinds(device.zero_result),
            existing_device: kinds(device.existing),
        })
    }

    fn predicted_stream_lookup_reads(
        &self,
        streams: &strata::model::tree::LookupStreams,
        history: Option<&strata::model::tree::StreamHistory>,
    ) -> Option<(PredictedBlockReads, PredictedBlockReads)> {
        let device = self.db.predicted_stream_device_reads(streams, history);
        let kinds = |reads: strata::model::tree::BlockReads| PredictedBlockReads {
            data: reads.data,
            index: reads.index,
            filter: reads.filter,
        };
        Some((kinds(device.zero_result), kinds(device.existing)))
    }

    fn stream_history(&self) -> Option<strata::model::tree::StreamHistory> {
        Some(self.db.stream_history())
    }

    fn filter_bits_in_use(&self) -> Option<std::collections::BTreeMap<u64, f64>> {
        Some(self.db.filter_bits_in_use())
    }

    fn predicted_seek_reads(&self, entries: u64, bounded: bool) -> Option<PredictedBlockReads> {
        let reads = self.db.predicted_seek_reads(entries, bounded).reads;
        Some(PredictedBlockReads {
            data: reads.data,
            index: reads.index,
            filter: reads.filter,
        })
    }

    fn predicted_write_amplification(
        &self,
        entries: u64,
        key_space: Option<u64>,
        user_bytes_per_entry: f64,
    ) -> Option<PredictedWriteAmp> {
        let flushes = self.db.stats().io.flushes;
        let stream = strata::model::writes::WriteStream {
            entries,
            entries_per_flush: entries.checked_div(flushes)?,
            key_space,
            user_bytes_per_entry,
        };
        let predicted = self.db.predicted_write_amplification(&stream).ok()?;
        let per_user_byte = |amplification| predicted.table_bytes_per_user_byte(amplification);
        Some(PredictedWriteAmp {
            replay: per_user_byte(predicted.replay)?,
            closed_form: predicted.closed_form.and_then(per_user_byte),
            levels: self
                .db
                .stats()
                .levels
                .iter()
                .filter(|level| level.level > 0 && level.entries > 0)
                .count()
                .max(1),
        })
    }

    fn close(self: Box<Self>) -> CliResult<()> {
        Ok(self.db.close()?)
    }
}
