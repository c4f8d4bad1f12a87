//! RocksDB's bytes written by cause, from the compaction events its info log records
//! (`EVENT_LOG_v1 {...}` lines in `<db>/LOG`): `compaction_started` gives a job's reason,
//! `compaction_finished` its output level and `total_output_size`, `trivial_move` a file moved
//! without being written. No ticker splits compaction bytes by level; the events do, to the byte.
//! Pure text parsing, so it is tested without a RocksDB build.

use std::collections::HashMap;

use super::{WriteCauses, CAUSE_LEVELS};

/// The compaction bytes of the events in `log` (flush bytes are not in these events: the caller
/// takes them from `rocksdb.flush.write.bytes`). Lines that are not events, or events of other
/// kinds, are skipped; a compaction whose start is not in `log` counts as the policy's.
pub fn compaction_causes(log: &str) -> WriteCauses {
    let mut causes = WriteCauses::default();
    let mut manual: HashMap<u64, bool> = HashMap::new();
    for line in log.lines() {
        let Some(at) = line.find("EVENT_LOG_v1 ") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line[at + 13..]) else {
            continue;
        };
        let job = event["job"].as_u64().unwrap_or(u64::MAX);
        match event["event"].as_str() {
            Some("compaction_started") => {
                let reason = event["compaction_reason"].as_str().unwrap_or_default();
                manual.insert(job, reason == "ManualCompaction");
            }
            Some("compaction_finished") => {
                let bytes = event["total_output_size"].as_u64().unwrap_or(0);
                let level = event["output_level"].as_u64().unwrap_or(0) as usize;
                if manual.remove(&job).unwrap_or(false) {
                    causes.full += bytes;
                } else if level == 0 {
                    causes.level0_merges += bytes;
                } else {
                    causes.merges_into[level.min(CAUSE_LEVELS - 1)] += bytes;
                }
            }
            Some("trivial_move") => {
                causes.trivial_moves += event["files"].as_u64().unwrap_or(1);
            }
            _ => {}
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_events_are_split_by_output_level_and_reason() {
        let log = r#"2026/11/28-23:00:00.000001 7f [db/db_impl/db_impl_compaction_flush.cc:3000] some text
2026/11/28-23:00:00.000002 7f EVENT_LOG_v1 {"time_micros": 1, "job": 4, "event": "compaction_started", "compaction_reason": "LevelL0FilesNum", "files_L0": [12, 11], "files_L1": [7]}
2026/11/28-23:00:00.000003 7f EVENT_LOG_v1 {"time_micros": 2, "job": 4, "event": "compaction_finished", "output_level": 1, "num_output_files": 2, "total_output_size": 3000}
2026/11/28-23:00:00.000004 7f EVENT_LOG_v1 {"time_micros": 3, "job": 5, "event": "compaction_started", "compaction_reason": "LevelL0FilesNum"}
2026/11/28-23:00:00.000005 7f EVENT_LOG_v1 {"time_micros": 4, "job": 5, "event": "compaction_finished", "output_level": 0, "total_output_size": 500}
2026/11/28-23:00:00.000006 7f EVENT_LOG_v1 {"time_micros": 5, "job": 6, "event": "trivial_move", "destination_level": 2, "files": 1, "total_files_size": 900}
2026/11/28-23:00:00.000007 7f EVENT_LOG_v1 {"time_micros": 6, "job": 7, "event": "compaction_started", "compaction_reason": "ManualCompaction"}
2026/11/28-23:00:00.000008 7f EVENT_LOG_v1 {"time_micros": 7, "job": 7, "event": "compaction_finished", "output_level": 2, "total_output_size": 7000}
2026/11/28-23:00:00.000009 7f EVENT_LOG_v1 {"time_micros": 8, "job": 9, "event": "compaction_finished", "output_level": 9, "total_output_size": 11}
2026/11/28-23:00:00.000010 7f EVENT_LOG_v1 {"time_micros": 9, "job": 8, "event": "flush_finished"}
EVENT_LOG_v1 {not json"#;
        let causes = compaction_causes(log);
        assert_eq!(causes.merges_into[1], 3000);
        assert_eq!(causes.level0_merges, 500);
        assert_eq!(causes.full, 7000);
        assert_eq!(
            causes.merges_into[CAUSE_LEVELS - 1],
            11,
            "deeper levels in the last"
        );
        assert_eq!(causes.trivial_moves, 1);
        assert_eq!(causes.flush, 0);
        assert_eq!(causes.total(), 3000 + 500 + 7000 + 11);
    }
}
