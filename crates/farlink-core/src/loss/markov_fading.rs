//! The first-order Markov model of a Rayleigh fading channel at the frame level, as seed 004
//! (Bai, Ogielski and Wu, PIMRC'99, section III) uses it for IS-707: "Radio Channel is modeled
//! as a first-order binary Markov process [12]. By choosing different values of frame error
//! rate P_e and normalized Doppler frequency f_d T, where f_d is the Doppler frequency and T is
//! the frame length (20 ms for IS-707), we can model fading radio channels with different
//! degree of correlation". Reference [12] is M. Zorzi, R. R. Rao and L. B. Milstein, "On the
//! accuracy of a first-order Markov model for data block transmission on fading channels",
//! Proc. IEEE ICUPC'95, pp. 211–215.
//!
//! A frame is in error when the Rayleigh envelope is below a threshold during the frame; with
//! fading margin F (mean power over threshold power) the frame error rate is
//! P_e = 1 - exp(-1/F). The envelope's complex Gaussian samples one frame apart have
//! correlation rho = J0(2 pi f_d T) (Clarke/Jakes spectrum). With
//! theta = sqrt((2/F) / (1 - rho^2)), the transition probabilities of the binary chain are
//!
//!   p = P(bad next | good now) = Q1(theta, rho theta) - Q1(rho theta, theta),
//!   q = P(bad next | bad now)  = 1 - p (1 - P_e) / P_e,
//!
//! the second being Zorzi, Rao and Milstein's
//! 1 - [Q1(theta, rho theta) - Q1(rho theta, theta)] / (e^{1/F} - 1), since
//! e^{1/F} - 1 = P_e / (1 - P_e). The derivation is in `docs/fading-channel.md`.
//!
//! # Time (our choice; the seed is silent)
//!
//! The chain runs on frame slots of length T in simulated time, whether frames are sent or not:
//! slot n covers [nT, (n+1)T). A frame arriving at `now` sees the state of slot floor(now/T);
//! several frames in one slot see the same state. Between two calls k slots apart the chain
//! takes k steps at once with the k-step probabilities
//! P_k(bad | bad) = P_e + (1 - P_e) lambda^k and P_k(bad | good) = P_e (1 - lambda^k), where
//! lambda = q - p, using one uniform draw; lambda^k is computed by repeated squaring (plain
//! IEEE multiplication, so bit-identical everywhere).

use super::special::{bessel_j0, marcum_q1_pair};
use super::{ConfigError, LossModel};
use crate::rng::StreamRng;
use crate::time::{SimDuration, SimTime};

/// The IS-707 RLP frame length, T = 20 ms (seed 004, section III).
pub const IS707_FRAME: SimDuration = SimDuration::from_millis(20);

/// Smallest normalised Doppler accepted (our choice). At f_d T = 1e-4 mean fades already last
/// 400 frames (P_e = 0.01) to 180,000 frames (P_e = 0.99), i.e. seconds to an hour at 20 ms: a
/// slow on/off process that `GilbertElliott` describes more directly. Below it,
/// p = Q1(theta, rho theta) - Q1(rho theta, theta) becomes a difference of nearly equal numbers
/// whose relative precision falls as 1/(f_d T). Seed 004 uses f_d T of 0.01, 0.1 and 1.0.
pub const MIN_FD_T: f64 = 1e-4;

/// Largest normalised Doppler accepted (our choice). At f_d T = 100 the correlation of
/// successive frames is |J0(2 pi f_d T)| < 0.04: the frames are already as good as independent
/// (a Bernoulli channel), and nothing physical lies beyond (a 20 ms frame would need a Doppler
/// of 5 kHz). The bound also keeps [`bessel_j0`]'s cost, which grows with its argument, at a
/// few hundred steps: f_d T = 1e12 would take hours.
pub const MAX_FD_T: f64 = 100.0;

/// Parameters of a [`MarkovFading`] channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkovFadingConfig {
    /// Average frame error rate P_e, in (0, 1).
    pub frame_error_rate: f64,
    /// Normalised Doppler frequency f_d T, from [`MIN_FD_T`] to [`MAX_FD_T`].
    pub fd_t: f64,
    /// The frame length T: the slot on which the chain steps.
    pub frame: SimDuration,
}

impl MarkovFadingConfig {
    /// Seed 004's IS-707 channel: 20 ms frames.
    pub fn is707(frame_error_rate: f64, fd_t: f64) -> Self {
        MarkovFadingConfig {
            frame_error_rate,
            fd_t,
            frame: IS707_FRAME,
        }
    }
}

/// The derived quantities of the fading model, exposed for documentation, traces and tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FadingTransitions {
    /// |J0(2 pi f_d T)|: the correlation of the complex Gaussian fading samples one frame apart
    /// (only its modulus matters for the envelope).
    pub rho: f64,
    /// Fading margin F = -1 / ln(1 - P_e).
    pub fading_margin: f64,
    /// theta = sqrt((2/F) / (1 - rho^2)).
    pub theta: f64,
    /// p: probability that the next frame is in error given this one is not.
    pub p_good_to_bad: f64,
    /// q: probability that the next frame is in error given this one is.
    pub p_bad_to_bad: f64,
}

impl FadingTransitions {
    /// The mean burst of frame errors, 1 / (1 - q) frames.
    pub fn mean_burst_frames(&self) -> f64 {
        1.0 / (1.0 - self.p_bad_to_bad)
    }
    /// lambda = q - p, the one-step correlation of the binary chain.
    pub fn lambda(&self) -> f64 {
        self.p_bad_to_bad - self.p_good_to_bad
    }
}

/// Computes the transition probabilities of the Zorzi–Rao–Milstein chain for frame error rate
/// `frame_error_rate` and normalised Doppler `fd_t`; see the module documentation.
pub fn fading_transitions(
    frame_error_rate: f64,
    fd_t: f64,
) -> Result<FadingTransitions, ConfigError> {
    let pe = frame_error_rate;
    if !(pe > 0.0 && pe < 1.0) {
        return Err(ConfigError::new(
            "frame_error_rate",
            format!("expected a frame error rate in (0, 1), got {pe}"),
        ));
    }
    if !(fd_t.is_finite() && (MIN_FD_T..=MAX_FD_T).contains(&fd_t)) {
        return Err(ConfigError::new(
            "fd_t",
            format!(
                "expected a normalised Doppler f_d*T from {MIN_FD_T} to {MAX_FD_T}, got {fd_t}"
            ),
        ));
    }
    // 1/F = -ln(1 - P_e)
    let inv_f = -libm::log1p(-pe);
    let rho = bessel_j0(2.0 * std::f64::consts::PI * fd_t).abs();
    let one_minus_rho2 = (1.0 - rho) * (1.0 + rho);
    let theta = libm::sqrt(2.0 * inv_f / one_minus_rho2);
    let (q_a, qc_a) = marcum_q1_pair(theta, rho * theta);
    let (q_b, qc_b) = marcum_q1_pair(rho * theta, theta);
    // D = Q1(theta, rho theta) - Q1(rho theta, theta) = (1 - Q1(rho theta, theta))
    //     - (1 - Q1(theta, rho theta)); take the form whose terms are smaller, so that the
    // subtraction loses least.
    let d = if q_a <= qc_b { q_a - q_b } else { qc_b - qc_a };
    let p = d.clamp(0.0, pe);
    let q = 1.0 - p * (1.0 - pe) / pe;
    Ok(FadingTransitions {
        rho,
        fading_margin: 1.0 / inv_f,
        theta,
        p_good_to_bad: p,
        p_bad_to_bad: q,
    })
}

/// x^k by repeated squaring, with IEEE multiplications only.
fn pow_u64(mut x: f64, mut k: u64) -> f64 {
    let mut acc = 1.0;
    while k > 0 {
        if k & 1 == 1 {
            acc *= x;
        }
        x *= x;
        k >>= 1;
        if x == 0.0 {
            break;
        }
    }
    if k > 0 {
        0.0
    } else {
        acc
    }
}

/// A Rayleigh fading channel as a first-order Markov chain on frame slots; frames arriving in a
/// bad slot are lost, frames in a good slot get through.
#[derive(Debug)]
pub struct MarkovFading {
    cfg: MarkovFadingConfig,
    tr: FadingTransitions,
    bad: bool,
    slot: u64,
    rng: StreamRng,
}

impl MarkovFading {
    /// A channel whose slot 0 is drawn from the stationary law (bad with probability P_e).
    pub fn new(cfg: MarkovFadingConfig, mut rng: StreamRng) -> Result<Self, ConfigError> {
        if cfg.frame.as_nanos() == 0 {
            return Err(ConfigError::new(
                "frame",
                "expected a positive frame length",
            ));
        }
        let tr = fading_transitions(cfg.frame_error_rate, cfg.fd_t)?;
        let bad = rng.bernoulli(cfg.frame_error_rate);
        Ok(MarkovFading {
            cfg,
            tr,
            bad,
            slot: 0,
            rng,
        })
    }

    pub fn config(&self) -> &MarkovFadingConfig {
        &self.cfg
    }

    pub fn transitions(&self) -> &FadingTransitions {
        &self.tr
    }

    /// Whether the slot of the last call (or slot 0) is in a fade.
    pub fn is_bad(&self) -> bool {
        self.bad
    }

    /// Moves the chain to the slot containing `now`.
    fn advance(&mut self, now: SimTime) {
        let slot = now.as_nanos() / self.cfg.frame.as_nanos();
        debug_assert!(slot >= self.slot, "loss model asked about the past");
        if slot <= self.slot {
            return;
        }
        let k = slot - self.slot;
        self.slot = slot;
        let pe = self.cfg.frame_error_rate;
        let p_bad = if k == 1 {
            if self.bad {
                self.tr.p_bad_to_bad
            } else {
                self.tr.p_good_to_bad
            }
        } else {
            let lk = pow_u64(self.tr.lambda(), k);
            if self.bad {
                pe + (1.0 - pe) * lk
            } else {
                pe * (1.0 - lk)
            }
        };
        self.bad = self.rng.bernoulli(p_bad);
    }
}

impl LossModel for MarkovFading {
    fn is_lost(&mut self, now: SimTime) -> bool {
        self.advance(now);
        self.bad
    }

    /// P_e, the stationary probability of the bad state.
    fn analytic_loss_rate(&self) -> f64 {
        self.cfg.frame_error_rate
    }

    /// 1 / (1 - q) frames, for one frame per slot.
    fn analytic_mean_burst_len(&self) -> Option<f64> {
        Some(self.tr.mean_burst_frames())
    }
}

#[cfg(test)]
mod tests {
    use super::super::special::marcum_q1;
    use super::super::testutil::observe;
    use super::*;

    #[test]
    fn transitions_match_reference_values() {
        // Reference: the same formulas evaluated with SciPy 1.17 (special.j0, stats.ncx2) and
        // checked against direct numerical integration of the bivariate Rayleigh law
        // (scipy.integrate.quad); see docs/fading-channel.md.
        let cases = [
            // (P_e, f_d T, q, p)
            (0.01, 0.01, 0.754304851718604, 0.002481769174559556),
            (0.1, 0.1, 0.3702094597303778, 0.0699767266966247),
            (0.3, 0.01, 0.9650794744593427, 0.014965939517424547),
            (0.3, 1.0, 0.31042335375301877, 0.2955328483915634),
            (0.5, 0.05, 0.896099812941803, 0.10390018705819704),
        ];
        for (pe, fdt, q, p) in cases {
            let tr = fading_transitions(pe, fdt).unwrap();
            assert!(
                (tr.p_bad_to_bad - q).abs() < 1e-11,
                "q({pe},{fdt}) = {}",
                tr.p_bad_to_bad
            );
            assert!(
                (tr.p_good_to_bad - p).abs() / p < 1e-10,
                "p({pe},{fdt}) = {}",
                tr.p_good_to_bad
            );
            // Stationarity: p / (p + 1 - q) = P_e.
            let pi_b = tr.p_good_to_bad / (tr.p_good_to_bad + 1.0 - tr.p_bad_to_bad);
            assert!((pi_b - pe).abs() < 1e-13);
        }
    }

    #[test]
    fn zorzi_rao_milstein_form_agrees() {
        // q = 1 - [Q(theta, rho theta) - Q(rho theta, theta)] / (e^{1/F} - 1)
        for (pe, fdt) in [(0.05, 0.02), (0.2, 0.3), (0.02, 1.0)] {
            let tr = fading_transitions(pe, fdt).unwrap();
            let (t, r) = (tr.theta, tr.rho);
            let d = marcum_q1(t, r * t) - marcum_q1(r * t, t);
            let q = 1.0 - d / libm::expm1(1.0 / tr.fading_margin);
            assert!((q - tr.p_bad_to_bad).abs() < 1e-12);
            assert!((1.0 - libm::exp(-1.0 / tr.fading_margin) - pe).abs() < 1e-15);
        }
    }

    #[test]
    fn transition_agrees_with_direct_integration_of_rician_conditional() {
        // P(fade now, no fade next) = int_0^sqrt(1/F) 2r e^{-r^2} Q1(rho r s, theta) dr with
        // s = sqrt(2 / (1 - rho^2)); the closed form says it equals (1 - P_e) p.
        let pe = 0.2;
        let tr = fading_transitions(pe, 0.05).unwrap();
        let (rho, theta) = (tr.rho, tr.theta);
        let s = (2.0 / (1.0 - rho * rho)).sqrt();
        let upper = (1.0 / tr.fading_margin).sqrt();
        let n = 2000;
        let h = upper / n as f64;
        let f = |r: f64| 2.0 * r * (-r * r).exp() * marcum_q1(rho * r * s, theta);
        let mut sum = f(0.0) + f(upper);
        for i in 1..n {
            sum += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * h);
        }
        let integral = sum * h / 3.0;
        let want = (1.0 - pe) * tr.p_good_to_bad;
        assert!(
            (integral - want).abs() / want < 1e-9,
            "{integral} vs {want}"
        );
    }

    #[test]
    fn slow_fading_limit_is_the_level_crossing_rate() {
        // For small f_d T the probability of entering a fade in one frame tends to the
        // Rayleigh level-crossing rate times T over P(good): N_R T / e^{-1/F} with
        // N_R = sqrt(2 pi / F) f_d e^{-1/F} (Rice; Jakes, Microwave Mobile Communications,
        // 1974), i.e. p -> sqrt(2 pi / F) f_d T. An independent check of the Marcum-Q
        // difference where it is hardest to compute.
        for pe in [0.01, 0.1, 0.3] {
            for (fdt, tol) in [(1e-3, 5e-4), (1e-4, 1e-5)] {
                let tr = fading_transitions(pe, fdt).unwrap();
                let lcr = (2.0 * std::f64::consts::PI / tr.fading_margin).sqrt() * fdt;
                let rel = (tr.p_good_to_bad - lcr).abs() / lcr;
                assert!(
                    rel < tol,
                    "P_e={pe} f_dT={fdt}: p={} vs {lcr}",
                    tr.p_good_to_bad
                );
            }
        }
    }

    #[test]
    fn independent_when_correlation_vanishes() {
        // J0 has its first zero at 2.404826, i.e. f_d T = 0.382740: q = p = P_e.
        let tr =
            fading_transitions(0.1, 2.404_825_557_695_773 / (2.0 * std::f64::consts::PI)).unwrap();
        assert!(tr.rho < 1e-14);
        assert!((tr.p_bad_to_bad - 0.1).abs() < 1e-12);
        assert!((tr.p_good_to_bad - 0.1).abs() < 1e-12);
    }

    #[test]
    fn burst_length_grows_as_doppler_falls() {
        let bursts: Vec<f64> = [1.0, 0.1, 0.01, 0.001]
            .iter()
            .map(|&f| fading_transitions(0.1, f).unwrap().mean_burst_frames())
            .collect();
        // f_d T = 1: nearly independent (Bernoulli(0.1) would give 1/0.9 = 1.11).
        assert!(bursts[0] < 1.2, "{bursts:?}");
        assert!(bursts.windows(2).all(|w| w[1] > w[0]), "{bursts:?}");
        // f_d T = 0.01: strongly correlated.
        assert!(bursts[2] > 10.0, "{bursts:?}");
    }

    #[test]
    fn long_run_loss_rate_equals_frame_error_rate() {
        for (pe, fdt, n) in [
            (0.3, 1.0, 300_000u64),
            (0.3, 0.1, 600_000),
            (0.1, 0.01, 3_000_000),
        ] {
            let cfg = MarkovFadingConfig::is707(pe, fdt);
            let mut m = MarkovFading::new(cfg, StreamRng::derive(4, "fading")).unwrap();
            let want_burst = m.analytic_mean_burst_len().unwrap();
            let (rate, burst) = observe(&mut m, n, IS707_FRAME);
            // Variance of the mean of a stationary binary chain:
            // P_e (1 - P_e) (1 + lambda) / (1 - lambda) / n.
            let lam = m.transitions().lambda();
            let sd = (pe * (1.0 - pe) * (1.0 + lam) / (1.0 - lam) / n as f64).sqrt();
            assert!(
                (rate - pe).abs() < 5.0 * sd,
                "P_e={pe} f_dT={fdt}: rate {rate} sd {sd}"
            );
            assert!(
                (burst - want_burst).abs() / want_burst < 0.05,
                "P_e={pe} f_dT={fdt}: burst {burst} vs {want_burst}"
            );
        }
    }

    #[test]
    fn skipping_slots_uses_k_step_law() {
        // Probing every 7th slot must see the 7-step chain: its lag-1 loss correlation is
        // lambda^7, so the conditional P(bad | bad) is P_e + (1 - P_e) lambda^7.
        let pe = 0.2;
        let cfg = MarkovFadingConfig::is707(pe, 0.01);
        let mut m = MarkovFading::new(cfg, StreamRng::derive(8, "fading")).unwrap();
        let lam7 = pow_u64(m.transitions().lambda(), 7);
        let want = pe + (1.0 - pe) * lam7;
        let (mut bb, mut b, mut prev) = (0u64, 0u64, false);
        let step = SimDuration::from_millis(140);
        let mut now = SimTime::ZERO;
        for _ in 0..400_000 {
            let l = m.is_lost(now);
            if prev {
                b += 1;
                if l {
                    bb += 1;
                }
            }
            prev = l;
            now += step;
        }
        let got = bb as f64 / b as f64;
        assert!((got - want).abs() < 0.01, "{got} vs {want}");
    }

    #[test]
    fn frames_in_one_slot_share_the_state() {
        let cfg = MarkovFadingConfig::is707(0.5, 0.1);
        let mut m = MarkovFading::new(cfg, StreamRng::derive(3, "fading")).unwrap();
        for slot in 0..1000u64 {
            let base = slot * IS707_FRAME.as_nanos();
            let first = m.is_lost(SimTime::from_nanos(base));
            for off in [1, 5_000_000, 19_999_999] {
                assert_eq!(m.is_lost(SimTime::from_nanos(base + off)), first);
            }
        }
    }

    #[test]
    fn pow_by_squaring() {
        assert_eq!(pow_u64(0.5, 0), 1.0);
        assert_eq!(pow_u64(0.5, 10), 1.0 / 1024.0);
        assert_eq!(pow_u64(0.9, 1), 0.9);
        assert_eq!(pow_u64(0.5, u64::MAX), 0.0);
        assert!((pow_u64(0.99, 1000) - 0.99f64.powi(1000)).abs() < 1e-15);
    }

    #[test]
    fn rejects_out_of_domain_parameters() {
        assert_eq!(
            fading_transitions(0.0, 0.1).unwrap_err().param,
            "frame_error_rate"
        );
        assert_eq!(
            fading_transitions(1.0, 0.1).unwrap_err().param,
            "frame_error_rate"
        );
        assert_eq!(fading_transitions(0.1, 0.0).unwrap_err().param, "fd_t");
        assert_eq!(fading_transitions(0.1, f64::NAN).unwrap_err().param, "fd_t");
        let cfg = MarkovFadingConfig {
            frame: SimDuration::ZERO,
            ..MarkovFadingConfig::is707(0.1, 0.1)
        };
        assert_eq!(
            MarkovFading::new(cfg, StreamRng::derive(1, "f"))
                .unwrap_err()
                .param,
            "frame"
        );
    }

    #[test]
    fn doppler_beyond_the_physical_range_is_refused_at_once() {
        // f_d T = 1e12 used to run a Bessel recurrence of 7.5e12 steps.
        let t0 = std::time::Instant::now();
        let e = fading_transitions(0.1, 1e12).unwrap_err();
        assert_eq!(e.param, "fd_t");
        assert!(e.message.contains("from 0.0001 to 100"), "{}", e.message);
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        assert!(fading_transitions(0.1, MAX_FD_T).is_ok());
        assert!(fading_transitions(0.1, 100.5).is_err());
    }
}
