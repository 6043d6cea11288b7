//! Draws from the distributions the traffic sources use, by inversion (Box-Muller for the
//! lognormal's normal), from a component's own [`StreamRng`]. Every function consumes a
//! fixed number of words (one; two for the lognormal), so changing a parameter never shifts
//! the rest of a stream. `libm` for the transcendental functions (`rng.rs`: bit-identical on
//! every platform).

use crate::rng::StreamRng;
use crate::scenario::{SizeDist, Sojourn};

/// A Pareto variate with the given mean and shape (> 1): scale `mean (shape - 1) / shape`,
/// `scale / (1 - u)^(1 / shape)`. One word.
pub fn pareto(rng: &mut StreamRng, mean: f64, shape: f64) -> f64 {
    let scale = mean * (shape - 1.0) / shape;
    // 1 - u lies in (0, 1]: the draw is finite and at least the scale.
    scale / libm::pow(1.0 - rng.uniform(), 1.0 / shape)
}

/// A standard normal variate (Box-Muller, cosine branch). Two words.
pub fn standard_normal(rng: &mut StreamRng) -> f64 {
    let r = libm::sqrt(-2.0 * libm::log(1.0 - rng.uniform()));
    r * libm::cos(2.0 * std::f64::consts::PI * rng.uniform())
}

/// A lognormal variate with the given mean whose logarithm has standard deviation `sigma`
/// (`mu = ln(mean) - sigma^2 / 2`). Two words.
pub fn lognormal(rng: &mut StreamRng, mean: f64, sigma: f64) -> f64 {
    let mu = libm::log(mean) - sigma * sigma / 2.0;
    libm::exp(mu + sigma * standard_normal(rng))
}

/// The inverse of a piecewise-linear CDF at `u` (`points` as `SizeDist::Cdf` holds them):
/// the first size whose probability reaches `u`, interpolated within its segment.
pub fn cdf_inverse(points: &[(f64, f64)], u: f64) -> f64 {
    let i = points.partition_point(|&(_, p)| p < u);
    let Some(&(x, p)) = points.get(i) else {
        return points[points.len() - 1].0;
    };
    if i == 0 {
        return x;
    }
    let (x0, p0) = points[i - 1];
    if p > p0 {
        x0 + (x - x0) * (u - p0) / (p - p0)
    } else {
        x
    }
}

/// A size in bytes from `dist`, rounded, at least 1.
pub fn size_bytes(rng: &mut StreamRng, dist: &SizeDist) -> u64 {
    let x = match dist {
        // Consumes its word all the same, so a fixed size draws like the others.
        SizeDist::Fixed { bytes } => {
            rng.next_u64();
            *bytes as f64
        }
        SizeDist::Exponential { mean_bytes } => rng.exponential(*mean_bytes),
        SizeDist::Pareto { mean_bytes, shape } => pareto(rng, *mean_bytes, *shape),
        SizeDist::Lognormal { mean_bytes, sigma } => lognormal(rng, *mean_bytes, *sigma),
        SizeDist::Cdf { points } => cdf_inverse(points, rng.uniform()),
    };
    // `as` saturates; a size beyond 2^62 bytes is no transfer a run could finish anyway.
    (libm::round(x) as u64).clamp(1, 1 << 62)
}

/// A period's length in ns with mean `mean_ns`, at least 1 ns.
pub fn period_ns(rng: &mut StreamRng, mean_ns: f64, how: Sojourn) -> u64 {
    let x = match how {
        Sojourn::Exponential => rng.exponential(mean_ns),
        Sojourn::Pareto { shape } => pareto(rng, mean_ns, shape),
    };
    (libm::round(x) as u64).clamp(1, u64::MAX / 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdf_is_inverted_linearly_between_its_points() {
        let pts = [(100.0, 0.5), (300.0, 1.0)];
        assert_eq!(cdf_inverse(&pts, 0.2), 100.0, "the jump at the first point");
        assert_eq!(cdf_inverse(&pts, 0.5), 100.0);
        assert_eq!(cdf_inverse(&pts, 0.75), 200.0);
        assert_eq!(
            cdf_inverse(&pts, 0.999_999),
            300.0 - 200.0 * 0.000_001 / 0.5
        );
    }

    #[test]
    fn the_means_are_those_asked_for() {
        let n = 200_000;
        let mean_of = |f: &mut dyn FnMut(&mut StreamRng) -> f64| {
            let mut rng = StreamRng::derive(9, "draw-test");
            (0..n).map(|_| f(&mut rng)).sum::<f64>() / f64::from(n)
        };
        // Lognormal sigma 1: sd = mean sqrt(e - 1) = 1.31 mean, so the sample mean's sd is
        // 0.3 % of it; 5 sigma. Pareto 2.5: finite variance, sd 0.9 mean; 5 sigma = 1 %.
        let m = mean_of(&mut |r| lognormal(r, 1000.0, 1.0));
        assert!((m / 1000.0 - 1.0).abs() < 0.015, "{m}");
        let m = mean_of(&mut |r| pareto(r, 1000.0, 2.5));
        assert!((m / 1000.0 - 1.0).abs() < 0.02, "{m}");
        let m = mean_of(&mut |r| standard_normal(r));
        assert!(m.abs() < 0.012, "{m}");
    }
}
