//! What every SVG chart of the CLI shares (`strata bench --plot`, `strata whatif --svg`): the
//! colours, numbers on axes as a reader writes them, and drawing errors as I/O errors that name
//! the file.

use std::path::Path;

use plotters::style::RGBColor;

use crate::error::CliError;

/// Series colours (matplotlib's first eight).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// `1,234,567`; numbers below 10 keep up to three decimals (`0.25`, `2`).
pub fn thousands(value: f64) -> String {
    if value.abs() < 10.0 {
        let text = format!("{value:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        return if text.is_empty() || text == "-" || text == "-0" {
            "0".into()
        } else {
            text.into()
        };
    }
    let rounded = value.round() as i64;
    let digits = rounded.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    if rounded < 0 {
        out.insert(0, '-');
    }
    out
}

/// `1.0M`, `32B`: counts as a reader says them.
pub fn count_label(value: f64) -> String {
    for (unit, name) in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")] {
        if value >= unit {
            let scaled = value / unit;
            return if scaled >= 10.0 {
                format!("{scaled:.0}{name}")
            } else {
                format!("{scaled:.1}{name}")
            };
        }
    }
    format!("{value:.0}")
}

/// A drawing error, as an I/O error naming the file.
pub fn plot_error(path: &Path, error: impl std::fmt::Display) -> CliError {
    CliError::io(
        format!("drawing {}", path.display()),
        std::io::Error::other(error.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_labelled_as_a_reader_writes_them() {
        assert_eq!(thousands(450_000.0), "450,000");
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(-12_345.0), "-12,345");
        assert_eq!(thousands(0.25), "0.25");
        assert_eq!(thousands(2.0), "2");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(-0.0001), "0");
        assert_eq!(count_label(1e6), "1.0M");
        assert_eq!(count_label(3.2e10), "32B");
        assert_eq!(count_label(450_000.0), "450K");
        assert_eq!(count_label(12.0), "12");
    }
}
