//! Redis's glob patterns (`SCAN ... MATCH`, `CONFIG GET`): `*`, `?`, `[abc]`, `[^a]`, `[a-z]`
//! and `\` escapes, over bytes. Matching backtracks only to the last `*`, so it takes time
//! proportional to the pattern's length times the key's, never exponential time.

/// True if `text` matches `pattern`.
pub fn matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where to resume after the last `*`: the pattern after it, and the text position it
    // currently stands for.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p + 1, t));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {
                    if let Some(next) = single(pattern, p, text[t]) {
                        p = next;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((after, from)) => {
                p = after;
                t = from + 1;
                star = Some((after, from + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// If the single-byte element of `pattern` at `p` (a literal, an escape or a class) matches
/// `byte`, where the next element starts.
fn single(pattern: &[u8], p: usize, byte: u8) -> Option<usize> {
    match pattern[p] {
        b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == byte).then_some(p + 2),
        b'[' => {
            let mut i = p + 1;
            let negate = pattern.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut matched = false;
            while i < pattern.len() && pattern[i] != b']' {
                if pattern[i] == b'\\' && i + 1 < pattern.len() {
                    matched |= pattern[i + 1] == byte;
                    i += 2;
                } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']'
                {
                    let (low, high) = (
                        pattern[i].min(pattern[i + 2]),
                        pattern[i].max(pattern[i + 2]),
                    );
                    matched |= (low..=high).contains(&byte);
                    i += 3;
                } else {
                    matched |= pattern[i] == byte;
                    i += 1;
                }
            }
            // An unclosed class runs to the end of the pattern, as in Redis.
            let next = (i + 1).min(pattern.len());
            (matched != negate).then_some(next)
        }
        literal => (literal == byte).then_some(p + 1),
    }
}

/// The bytes every match starts with: the pattern up to its first special character.
pub fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut prefix = Vec::new();
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'*' | b'?' | b'[' => break,
            b'\\' if i + 1 < pattern.len() => {
                prefix.push(pattern[i + 1]);
                i += 2;
            }
            b'\\' => break,
            byte => {
                prefix.push(byte);
                i += 1;
            }
        }
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_in_redis() {
        let yes = [
            ("*", "anything"),
            ("*", ""),
            ("user:*", "user:1"),
            ("h?llo", "hello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("a\\*b", "a*b"),
            ("*a*b*c", "xxaxxbxxc"),
        ];
        for (pattern, text) in yes {
            assert!(
                matches(pattern.as_bytes(), text.as_bytes()),
                "{pattern} {text}"
            );
        }
        let no = [
            ("user:*", "users"),
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("a\\*b", "axb"),
            ("*a*b*c", "xxaxxbxx"),
            ("", "a"),
        ];
        for (pattern, text) in no {
            assert!(
                !matches(pattern.as_bytes(), text.as_bytes()),
                "{pattern} {text}"
            );
        }
        let slow = "*a".repeat(50);
        let text = format!("{}b", "a".repeat(10_000));
        assert!(!matches(slow.as_bytes(), text.as_bytes()));
        assert_eq!(literal_prefix(b"user:\\*x*"), b"user:*x");
        assert_eq!(literal_prefix(b"*"), b"");
    }
}
