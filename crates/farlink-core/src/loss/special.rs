//! Special functions for the fading channel: the Bessel function J0, the first-order Marcum Q
//! function, and windows of the Poisson distribution that the latter is built from.
//!
//! They are evaluated when a loss model is built, never per packet. Only IEEE 754 arithmetic and
//! the pure-Rust `libm` crate are used, so results are bit-identical on every machine (see
//! `docs/fading-channel.md` for the formulas and their sources).

/// Entries of a Poisson window smaller than this are dropped (they cannot matter in `f64`).
const POISSON_TINY: f64 = 1e-300;

/// Sum with Neumaier's compensation, so that long sums of terms of mixed size stay accurate.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CompensatedSum {
    sum: f64,
    comp: f64,
}

impl CompensatedSum {
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.comp += (self.sum - t) + x;
        } else {
            self.comp += (x - t) + self.sum;
        }
        self.sum = t;
    }
    pub(crate) fn value(&self) -> f64 {
        self.sum + self.comp
    }
}

/// The Bessel function of the first kind of order zero, J0(x), for any finite `x`.
///
/// Miller's backward recurrence (Abramowitz and Stegun 9.1.27 run downwards,
/// J_{n-1} = (2n/x) J_n - J_{n+1}, started at an even order N well above |x| where J_N is
/// negligible), normalised with the identity J0 + 2 (J2 + J4 + ...) = 1 (A&S 9.1.46).
/// The starting order N >= 1.2 |x| + 40 makes J_N(x) below 1e-18 for every x (Debye's
/// asymptotic form); intermediate values are rescaled to avoid overflow. Absolute error is a
/// few 1e-16 for |x| up to about 1e3; cost is O(|x|) operations.
pub fn bessel_j0(x: f64) -> f64 {
    assert!(x.is_finite(), "bessel_j0 of a non-finite argument {x}");
    let x = x.abs();
    if x < 1e-8 {
        // 1 - x^2/4 is exact to far below f64 precision here.
        return 1.0 - 0.25 * x * x;
    }
    let start = 1.2 * x + 40.0;
    // Next even integer at or above `start`.
    let n_start = 2 * ((start as u64) / 2 + 1);
    let two_over_x = 2.0 / x;
    let mut j_next = 0.0f64; // J_{n+1}
    let mut j = 1e-30f64; // J_n, arbitrary scale
    let mut even_sum = CompensatedSum::default(); // J2 + J4 + ... in the same scale
    let mut n = n_start;
    while n > 0 {
        // (J_{n+1}, J_n) -> (J_n, J_{n-1})
        let j_prev = (n as f64) * two_over_x * j - j_next;
        j_next = j;
        j = j_prev;
        n -= 1;
        if n % 2 == 0 && n > 0 {
            even_sum.add(j);
        }
        if j.abs() > 1e250 {
            j *= 1e-250;
            j_next *= 1e-250;
            even_sum = {
                let mut s = CompensatedSum::default();
                s.add(even_sum.value() * 1e-250);
                s
            };
        }
    }
    // Now `j` holds J0 in the arbitrary scale.
    let norm = j + 2.0 * even_sum.value();
    j / norm
}

/// The modified Bessel function I0(z) for 0 <= z <= 50 by its power series (A&S 9.6.12); all
/// terms are positive, so the series is accurate to a few ulp. Used in tests and identities.
pub fn bessel_i0(z: f64) -> f64 {
    assert!(
        (0.0..=50.0).contains(&z),
        "bessel_i0 series used outside [0, 50]: {z}"
    );
    let q = 0.25 * z * z;
    let mut term = 1.0;
    let mut sum = CompensatedSum::default();
    sum.add(term);
    let mut k = 1.0;
    while term > 1e-18 * sum.value() {
        term *= q / (k * k);
        sum.add(term);
        k += 1.0;
    }
    sum.value()
}

/// The Poisson probabilities p_k(mu) = e^-mu mu^k / k! for k = `start`, `start + 1`, ...,
/// covering every k whose probability is at least 1e-300, normalised to sum to one.
///
/// Computed outwards from the mode m = floor(mu), where ln p_m is evaluated without
/// cancellation as m ln(1 + d/m) - d - ln(2 pi m)/2 - c(m) with d = mu - m and c(m) the
/// Stirling correction of ln m! (A&S 6.1.41); the recurrences p_{k+1} = p_k mu/(k+1) and
/// p_{k-1} = p_k k/mu then run down to the tails. Normalising the window removes any common
/// error of the mode's value. Length is O(sqrt(mu)) for large mu.
pub(crate) fn poisson_window(mu: f64) -> (u64, Vec<f64>) {
    assert!(
        mu.is_finite() && mu >= 0.0,
        "Poisson mean must be finite and >= 0, got {mu}"
    );
    if mu == 0.0 {
        return (0, vec![1.0]);
    }
    let m = libm::floor(mu);
    let ln_pm = if m == 0.0 {
        -mu
    } else {
        let d = mu - m;
        m * libm::log1p(d / m)
            - d
            - 0.5 * libm::log(2.0 * std::f64::consts::PI * m)
            - stirling_correction(m)
    };
    let pm = libm::exp(ln_pm);
    let m_u = m as u64;
    // Downwards from the mode.
    let mut below = Vec::new();
    let mut p = pm;
    let mut k = m_u;
    while k > 0 {
        p *= k as f64 / mu;
        if p < POISSON_TINY {
            break;
        }
        below.push(p);
        k -= 1;
    }
    let start = m_u - below.len() as u64;
    let mut window: Vec<f64> = below.into_iter().rev().collect();
    window.push(pm);
    // Upwards from the mode.
    let mut p = pm;
    let mut k = m_u;
    loop {
        k += 1;
        p *= mu / k as f64;
        if p < POISSON_TINY {
            break;
        }
        window.push(p);
    }
    let mut total = CompensatedSum::default();
    for &x in &window {
        total.add(x);
    }
    let total = total.value();
    for x in &mut window {
        *x /= total;
    }
    (start, window)
}

/// ln m! - (m ln m - m + ln(2 pi m)/2) for m >= 1: exact sum of logarithms below 30, the
/// Stirling series (A&S 6.1.41, four terms, error < 1e-17) from 30 on.
fn stirling_correction(m: f64) -> f64 {
    if m < 30.0 {
        let mut ln_fact = CompensatedSum::default();
        let mut k = 2.0;
        while k <= m {
            ln_fact.add(libm::log(k));
            k += 1.0;
        }
        ln_fact.value() - (m * libm::log(m) - m + 0.5 * libm::log(2.0 * std::f64::consts::PI * m))
    } else {
        let r = 1.0 / m;
        let r2 = r * r;
        r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 / 1680.0)))
    }
}

/// The first-order Marcum Q function Q1(a, b) and its complement 1 - Q1(a, b), each computed
/// directly (so that both are accurate in relative terms, also in the far tails).
///
/// Q1(a, b) = P(R > b) for a Rician variable R whose underlying complex Gaussian has mean of
/// modulus a and unit variance per component, i.e. the survival function at b^2 of the
/// noncentral chi-square with 2 degrees of freedom and noncentrality a^2. Writing that as a
/// Poisson mixture of central chi-squares (Johnson, Kotz and Balakrishnan, *Continuous
/// Univariate Distributions* vol. 2, eq. 29.2) and exchanging the order of summation gives
///
///   Q1(a, b)     = sum_i P(N_beta = i) P(N_alpha >= i),
///   1 - Q1(a, b) = sum_i P(N_beta = i) P(N_alpha <  i),
///
/// with N_alpha, N_beta Poisson of means alpha = a^2/2, beta = b^2/2. All terms are positive,
/// so neither sum cancels. Cost O(sqrt(alpha) + sqrt(beta)); allocates two windows.
pub fn marcum_q1_pair(a: f64, b: f64) -> (f64, f64) {
    assert!(
        a.is_finite() && b.is_finite(),
        "marcum_q1 of non-finite arguments ({a}, {b})"
    );
    let (a, b) = (a.abs(), b.abs());
    let (lo_a, pa) = poisson_window(0.5 * a * a);
    let (lo_b, pb) = poisson_window(0.5 * b * b);
    // suffix[k] = sum of pa[k..], prefix[k] = sum of pa[..k], both summed from the small end
    // that matters (the upper tail for suffix, the lower tail for prefix).
    let n = pa.len();
    let mut suffix = vec![0.0; n + 1];
    let mut acc = CompensatedSum::default();
    for k in (0..n).rev() {
        acc.add(pa[k]);
        suffix[k] = acc.value();
    }
    let mut prefix = vec![0.0; n + 1];
    let mut acc = CompensatedSum::default();
    for k in 0..n {
        acc.add(pa[k]);
        prefix[k + 1] = acc.value();
    }
    let hi_a = lo_a + n as u64; // one past the last index of the window
    let at_least = |i: u64| -> f64 {
        if i <= lo_a {
            1.0
        } else if i >= hi_a {
            0.0
        } else {
            suffix[(i - lo_a) as usize]
        }
    };
    let below = |i: u64| -> f64 {
        if i <= lo_a {
            0.0
        } else if i >= hi_a {
            1.0
        } else {
            prefix[(i - lo_a) as usize]
        }
    };
    let mut q = CompensatedSum::default();
    let mut qc = CompensatedSum::default();
    for (k, &w) in pb.iter().enumerate() {
        let i = lo_b + k as u64;
        q.add(w * at_least(i));
        qc.add(w * below(i));
    }
    (q.value(), qc.value())
}

/// The first-order Marcum Q function Q1(a, b); see [`marcum_q1_pair`].
pub fn marcum_q1(a: f64, b: f64) -> f64 {
    marcum_q1_pair(a, b).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, tol: f64) -> bool {
        (got - want).abs() <= tol * want.abs().max(1e-300)
    }

    /// Reference values of J0 from SciPy 1.17 `scipy.special.j0` (Cephes); the integer
    /// arguments agree with Abramowitz and Stegun Table 9.1.
    const J0_TABLE: [(f64, f64); 12] = [
        (0.0, 1.0),
        (0.1, 0.99750156206604),
        (1.0, 0.7651976865579665),
        (2.0, 0.22389077914123562),
        (5.0, -0.1775967713143383),
        (0.06283185307179587, 0.999013283055915),
        (0.6283185307179586, 0.9037126420924663),
        (std::f64::consts::TAU, 0.22027690853993448),
        (10.0, -0.24593576445134832),
        (25.0, 0.09626678327595801),
        (100.0, 0.01998585030422333),
        (1000.5, 0.019486559987129642),
    ];

    #[test]
    fn j0_matches_reference_table() {
        for (x, want) in J0_TABLE {
            let got = bessel_j0(x);
            assert!((got - want).abs() < 2e-15, "J0({x}) = {got}, want {want}");
            assert_eq!(bessel_j0(-x), got, "J0 is even");
        }
    }

    #[test]
    fn j0_first_zero_and_small_argument() {
        // First zero j_{0,1} = 2.404825557695773 (A&S Table 9.5).
        assert!(bessel_j0(2.404_825_557_695_773).abs() < 1e-15);
        assert_eq!(bessel_j0(1e-10), 1.0);
    }

    #[test]
    fn j0_agrees_with_libm_on_a_grid() {
        // libm's j0 is an independent implementation (fdlibm/musl rational approximations).
        let mut x = 0.0;
        while x < 60.0 {
            let (ours, theirs) = (bessel_j0(x), libm::j0(x));
            assert!((ours - theirs).abs() < 3e-15, "x={x}: {ours} vs {theirs}");
            x += 0.037;
        }
    }

    #[test]
    fn i0_matches_reference_values() {
        // A&S Table 9.8: I0(1) = 1.266065878, e^-5 I0(5) = 0.1835408126.
        assert!(close(bessel_i0(1.0), 1.266_065_877_752_008_4, 1e-15));
        assert!(close(bessel_i0(5.0), 27.239_871_823_604_45, 1e-14));
        assert_eq!(bessel_i0(0.0), 1.0);
    }

    #[test]
    fn poisson_window_sums_to_one_with_right_mean() {
        for mu in [1e-6, 0.3, 1.0, 7.5, 180.0, 5.0e4] {
            let (start, w) = poisson_window(mu);
            let total: f64 = w.iter().sum();
            let mean: f64 = w
                .iter()
                .enumerate()
                .map(|(k, p)| (start + k as u64) as f64 * p)
                .sum();
            assert!((total - 1.0).abs() < 1e-13, "mu={mu} total={total}");
            assert!(close(mean, mu, 1e-11), "mu={mu} mean={mean}");
        }
        // Small mean: exact values.
        let (start, w) = poisson_window(0.5);
        assert_eq!(start, 0);
        assert!(close(w[0], (-0.5f64).exp(), 1e-15));
        assert!(close(w[3], (-0.5f64).exp() * 0.125 / 6.0, 1e-14));
    }

    /// Reference values Q1(a, b) and 1 - Q1(a, b) from SciPy 1.17 `stats.ncx2.sf/cdf(b^2, 2, a^2)`.
    const MARCUM_TABLE: [(f64, f64, f64, f64); 11] = [
        (1.0, 1.0, 0.7328798037968203, 0.2671201962031797),
        (1.0, 2.0, 0.26901206003591, 0.73098793996409),
        (2.0, 1.0, 0.9181076963694061, 0.08189230363059402),
        (0.5, 3.0, 0.01784367338648221, 0.9821563266135178),
        (3.0, 0.5, 0.9983002327055392, 0.001699767294460626),
        (5.0, 7.0, 0.02771478629596345, 0.972285213704036),
        (7.0, 5.0, 0.9814444862070845, 0.01855551379291556),
        (10.0, 12.0, 0.025329474297941492, 0.974670525702058),
        (20.0, 21.0, 0.16463253104603023, 0.8353674689539704),
        (0.01, 0.02, 0.9998000299964169, 0.00019997000358298747),
        (30.0, 40.0, 8.810339762421169e-24, 1.0),
    ];

    #[test]
    fn marcum_q1_matches_reference_table() {
        for (a, b, q_want, qc_want) in MARCUM_TABLE {
            let (q, qc) = marcum_q1_pair(a, b);
            // SciPy itself is good to about 1e-12 relative in the tails.
            assert!(close(q, q_want, 1e-11), "Q1({a},{b}) = {q}, want {q_want}");
            assert!(
                close(qc, qc_want, 1e-11),
                "1-Q1({a},{b}) = {qc}, want {qc_want}"
            );
            assert!((q + qc - 1.0).abs() < 1e-14);
        }
    }

    #[test]
    fn marcum_q1_closed_forms() {
        for b in [0.0, 0.1, 1.0, 3.0, 10.0, 30.0] {
            // Q1(0, b) = exp(-b^2/2)
            assert!(
                close(marcum_q1(0.0, b), libm::exp(-0.5 * b * b), 1e-13),
                "b={b}"
            );
            // Q1(a, 0) = 1
            assert_eq!(marcum_q1(b, 0.0), 1.0);
        }
        // Q1(a, a) = (1 + exp(-a^2) I0(a^2)) / 2 and
        // Q1(a, b) + Q1(b, a) = 1 + exp(-(a^2+b^2)/2) I0(ab)  (Nuttall; Simon and Alouini 4.31)
        for (a, b) in [
            (0.3, 0.3),
            (1.0, 1.0),
            (2.5, 2.5),
            (0.7, 1.9),
            (3.0, 4.0),
            (5.0, 6.5),
        ] {
            let lhs = marcum_q1(a, b) + marcum_q1(b, a);
            let rhs = 1.0 + libm::exp(-0.5 * (a * a + b * b)) * bessel_i0(a * b);
            assert!(close(lhs, rhs, 1e-13), "({a},{b}): {lhs} vs {rhs}");
        }
    }

    #[test]
    fn marcum_q1_agrees_with_direct_integration() {
        // 1 - Q1(a, b) = integral_0^b x exp(-(x^2 + a^2)/2) I0(a x) dx, by composite Simpson.
        for (a, b) in [(0.4, 1.3), (1.5, 2.0), (2.2, 1.1), (3.0, 3.5)] {
            let n = 4000;
            let h = b / n as f64;
            let f = |x: f64| x * libm::exp(-0.5 * (x * x + a * a)) * bessel_i0(a * x);
            let mut s = f(0.0) + f(b);
            for i in 1..n {
                s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * h);
            }
            let integral = s * h / 3.0;
            let (_, qc) = marcum_q1_pair(a, b);
            assert!(close(qc, integral, 1e-11), "({a},{b}): {qc} vs {integral}");
        }
    }

    #[test]
    fn compensated_sum_beats_naive_summation() {
        let mut s = CompensatedSum::default();
        s.add(1.0);
        for _ in 0..1000 {
            s.add(1e-16);
        }
        assert!(close(s.value(), 1.0 + 1e-13, 1e-15));
    }
}
