//! How close an estimated vector of per-file statistics is to the true one (DESIGN.md §4, "Accuracy
//! check"; Mnemosyne §5.2, Fig. 10): Euclidean distance (the absolute error) and cosine
//! similarity (agreement in direction, blind to scale).

/// `sqrt(sum_i (a_i - b_i)^2)`. The vectors must have the same length.
pub fn euclidean_distance(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// `a . b / (|a| |b|)`, in `[-1, 1]`. Conventions for the degenerate cases: two zero vectors are
/// identical (1); a zero vector against a non-zero one shares no direction (0).
pub fn cosine_similarity(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm_a = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let norm_b = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    match (norm_a > 0.0, norm_b > 0.0) {
        (false, false) => 1.0,
        (true, true) => (dot / (norm_a * norm_b)).clamp(-1.0, 1.0),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn distance_is_the_euclidean_norm_of_the_difference() {
        assert!(close(euclidean_distance(&[0.0, 0.0], &[3.0, 4.0]), 5.0));
        assert!(close(
            euclidean_distance(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]),
            0.0
        ));
        assert!(close(euclidean_distance(&[], &[]), 0.0));
        assert!(close(
            euclidean_distance(&[1.0, -1.0], &[-1.0, 1.0]),
            8f64.sqrt()
        ));
    }

    #[test]
    fn cosine_ignores_scale_and_measures_the_angle() {
        assert!(close(cosine_similarity(&[1.0, 2.0], &[10.0, 20.0]), 1.0));
        assert!(close(cosine_similarity(&[1.0, 0.0], &[0.0, 5.0]), 0.0));
        assert!(close(cosine_similarity(&[1.0, 0.0], &[-2.0, 0.0]), -1.0));
        assert!(close(
            cosine_similarity(&[1.0, 1.0], &[1.0, 0.0]),
            std::f64::consts::FRAC_1_SQRT_2
        ));
    }

    #[test]
    fn cosine_of_zero_vectors_follows_the_documented_convention() {
        assert!(close(cosine_similarity(&[0.0, 0.0], &[0.0, 0.0]), 1.0));
        assert!(close(cosine_similarity(&[0.0, 0.0], &[1.0, 0.0]), 0.0));
        assert!(close(cosine_similarity(&[], &[]), 1.0));
    }
}
