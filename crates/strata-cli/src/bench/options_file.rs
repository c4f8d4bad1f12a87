//! `strata bench --options FILE`: runs the design an options file describes (`strata tune
//! --options-out`, `strata::options_file`). The file becomes the bench flags that say the same
//! thing, inserted before `--options` as a preset's are, so flags given after it override it and
//! the peers get the same settings as Strata (they only ever see flags).
//!
//! A key with no bench flag (the bench always creates its database, say) is accepted when it has
//! `Options::default()`'s value and refused otherwise: a run that silently ignored part of a
//! design would measure a different one. Monkey's prediction (`expected_entries`,
//! `buffer_entries`) is the one exception: the bench predicts the tree from its own `--num` and
//! entry size, which is what the file's figures stand for.

use std::ffi::OsString;
use std::path::Path;

use strata::{Options, OptionsFile};

use crate::error::{CliError, CliResult};

/// Inserts, before each `--options FILE` (or `--options=FILE`), the bench flags that FILE's keys
/// stand for. Arguments without `--options` come back unchanged.
pub fn expand(args: Vec<OsString>) -> CliResult<Vec<OsString>> {
    let mut expanded = Vec::with_capacity(args.len());
    let mut iter = args.into_iter().peekable();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy().into_owned();
        let path = if text == "--options" {
            iter.peek().map(|next| next.to_string_lossy().into_owned())
        } else {
            text.strip_prefix("--options=").map(str::to_string)
        };
        if let Some(path) = path {
            let file = OptionsFile::read(Path::new(&path))?;
            expanded.extend(flags(&file)?.into_iter().map(OsString::from));
        }
        expanded.push(arg);
    }
    Ok(expanded)
}

/// The bench flags that say what `file` says.
pub fn flags(file: &OptionsFile) -> CliResult<Vec<String>> {
    // Every key as TOML values, compared with the defaults' for the keys the bench cannot set.
    let table = to_table(file)?;
    let defaults = to_table(&OptionsFile::from_options(&Options::default()))?;
    let mut flags = Vec::new();
    for (key, value) in &table {
        let plain = || value_text(value);
        match key.as_str() {
            "write_buffer_bytes" => push(&mut flags, "write-buffer-bytes", plain()),
            "target_file_bytes" => push(&mut flags, "target-file-bytes", plain()),
            "block_cache_bytes" => push(&mut flags, "cache-bytes", plain()),
            "compression" => push(&mut flags, "compression", plain()),
            "index_block_restart_interval" => push(&mut flags, "index-restart-interval", plain()),
            "max_background_compactions" => push(&mut flags, "max-background-compactions", plain()),
            "partition_metadata_above_bytes" => {
                push(&mut flags, "partition-metadata-above-bytes", plain())
            }
            "metadata_block_bytes" => push(&mut flags, "metadata-block-bytes", plain()),
            "access_sample_every" => push(&mut flags, "access-sample-every", plain()),
            "access_recent_weight" => push(&mut flags, "access-recent-weight", plain()),
            "access_statistics" => {
                let on = value.as_bool() == Some(true);
                push(
                    &mut flags,
                    "access-statistics",
                    if on { "on" } else { "off" }.to_string(),
                );
            }
            "direct_reads" | "pin_filter_and_index_blocks" => {
                let on = value.as_bool() == Some(true);
                let name = match key.as_str() {
                    "direct_reads" => "--direct-reads",
                    _ => "--pin-index-filter",
                };
                // The bench's switches can only turn these on; off is their default.
                if on {
                    flags.push(name.to_string());
                }
            }
            "compaction" => {
                if let Some(section) = &file.compaction {
                    push(&mut flags, "compaction", section.policy.name().to_string());
                    if let Some(size_ratio) = section.size_ratio {
                        push(&mut flags, "size-ratio", size_ratio.to_string());
                    }
                    if let Some(c) = section.garnering_c {
                        push(&mut flags, "garnering-c", c.to_string());
                    }
                }
            }
            "filters" => {
                if let Some(section) = &file.filters {
                    push(
                        &mut flags,
                        "filter-policy",
                        section.allocator.name().to_string(),
                    );
                    push(&mut flags, "bits-per-key", section.bits_per_key.to_string());
                }
            }
            other => {
                if defaults.get(other) != Some(value) {
                    return Err(CliError::InvalidArgument(format!(
                        "options file: the bench has no flag for {other} = {value}; \
                         leave it out or give it its default ({})",
                        defaults
                            .get(other)
                            .map_or_else(|| "none".to_string(), ToString::to_string)
                    )));
                }
            }
        }
    }
    // The file must also be a valid design for the engine itself.
    file.apply_to(Options::default())?;
    Ok(flags)
}

fn push(flags: &mut Vec<String>, name: &str, value: String) {
    flags.push(format!("--{name}"));
    flags.push(value);
}

fn to_table(file: &OptionsFile) -> CliResult<toml::Table> {
    let text = file.to_toml()?;
    text.parse::<toml::Table>()
        .map_err(|error| CliError::InvalidArgument(format!("options file: {error}")))
}

/// A TOML scalar as a command-line value (strings without their quotes).
fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> OsString {
        let path = dir.join("design.toml");
        std::fs::write(&path, text).expect("writes");
        path.into_os_string()
    }

    fn texts(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_design_becomes_bench_flags_placed_before_the_option() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(
            dir.path(),
            "write_buffer_bytes = 4194304\ndirect_reads = true\ncompression = \"lz4\"\n\
             [compaction]\npolicy = \"garnering\"\nsize_ratio = 3.0\ngarnering_c = 0.6\n\
             [filters]\nallocator = \"monkey\"\nbits_per_key = 5.0\n\
             expected_entries = 100000\nbuffer_entries = 1000\n",
        );
        let args = vec![
            OsString::from("strata"),
            OsString::from("bench"),
            OsString::from("--options"),
            path.clone(),
            OsString::from("--size-ratio"),
            OsString::from("4"),
        ];
        let expanded = texts(&expand(args).expect("expands"));
        let at = expanded
            .iter()
            .position(|a| a == "--options")
            .expect("kept");
        let inserted = &expanded[2..at];
        for pair in [
            ["--write-buffer-bytes", "4194304"],
            ["--compression", "lz4"],
            ["--compaction", "garnering"],
            ["--size-ratio", "3"],
            ["--garnering-c", "0.6"],
            ["--filter-policy", "monkey"],
            ["--bits-per-key", "5"],
        ] {
            assert!(
                inserted.windows(2).any(|w| w == pair),
                "{pair:?} in {inserted:?}"
            );
        }
        assert!(inserted.iter().any(|a| a == "--direct-reads"));
        assert_eq!(
            &expanded[at + 2..],
            ["--size-ratio", "4"],
            "a flag after the file overrides it"
        );
    }

    #[test]
    fn a_setting_the_bench_cannot_make_is_refused_unless_it_is_the_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let default_block = Options::default().block_bytes;
        let accepted = write(dir.path(), &format!("block_bytes = {default_block}\n"));
        assert!(expand(vec![OsString::from("--options"), accepted]).is_ok());
        let refused = write(dir.path(), "block_bytes = 16384\n");
        let error = expand(vec![OsString::from("--options"), refused]).expect_err("refused");
        assert!(error.to_string().contains("block_bytes"), "{error}");
        let invalid = write(
            dir.path(),
            "[compaction]\npolicy = \"tiering\"\nsize_ratio = 0.5\n",
        );
        assert!(expand(vec![OsString::from("--options"), invalid]).is_err());
        let missing = dir.path().join("absent.toml").into_os_string();
        assert!(expand(vec![OsString::from("--options"), missing]).is_err());
    }

    #[test]
    fn a_written_default_options_file_is_accepted_whole() {
        let file = OptionsFile::from_options(&Options::default());
        let flags = flags(&file).expect("the defaults are all expressible");
        assert!(flags
            .windows(2)
            .any(|w| w == ["--write-buffer-bytes", "67108864"]));
    }
}
