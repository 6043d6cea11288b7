//! Coupled congestion control: each subflow's window grows with regard to the others', so that
//! the connection takes no more than one TCP would on its best path and moves traffic away
//! from congested paths.
//!
//! - `lia` (RFC 6356 section 4, the Linked Increases Algorithm): on each ACK of `acked` bytes
//!   on subflow i in congestion avoidance, `cwnd_i += min(alpha * acked * MSS_i / cwnd_total,
//!   acked * MSS_i / cwnd_i)`, with `alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) /
//!   (sum_i cwnd_i / rtt_i)^2`; a loss halves `cwnd_i`.
//! - `olia` (Khalili, Gast, Popovic, Le Boudec, "MPTCP is not Pareto-optimal: performance
//!   issues and a possible solution", IEEE/ACM ToN 21(5), 2013, eq. (4)): per ACKed packet on
//!   path r, `w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r` (windows in
//!   packets), where `alpha_r` moves window from the paths with the largest window (set M)
//!   to the best paths (set B: the largest `l_r^2 / rtt_r`, `l_r` the bytes acknowledged
//!   between the last two losses or since the last, the larger): `1 / (|P| |B\M|)` for r in
//!   B\M, `-1 / (|P| |M|)` for r in M when B\M is not empty, else 0; a loss halves `w_r`.
//! - `balia` (Peng, Walid, Hwang, Low, "Multipath TCP: analysis, design, and
//!   implementation", IEEE/ACM ToN 24(1), 2016, section VI): with `x_k = w_k / rtt_k` and
//!   `alpha_r = max_k x_k / x_r`, per ACKed packet `w_r += x_r / (rtt_r (sum_k x_k)^2) *
//!   (1 + alpha_r) / 2 * (4 + alpha_r) / 5`; per loss `w_r -= w_r / 2 * min(alpha_r, 1.5)`.
//! - `none`: every subflow runs the flow's own controller, uncoupled.
//!
//! Slow start is each subflow's own (RFC 6356 section 4: "the algorithm ... applies only to
//! the increase part of the congestion avoidance phase"), with RFC 3465 byte counting, L = 2.
//! The coupled controllers are built on Reno's rules (RFC 5681's ssthresh, loss window and
//! repeated-timeout hold), as all three papers are. Subflows share a [`CouplingGroup`]: each
//! controller writes its window and smoothed RTT there on every ACK and reads the others'.
//! Floating point only in the increase arithmetic; the window is whole bytes with the
//! fraction carried.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use crate::tcp::cc::reno::{LOSS_WINDOW_SEGMENTS, MIN_SSTHRESH_SEGMENTS};
use crate::tcp::cc::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Reduction,
};
use crate::tcp::rtt::RttEstimator;
use crate::tcp::UnknownName;
use crate::time::SimTime;

/// RFC 3465's L: slow start grows by at most 2 segments per ACK.
const SLOW_START_LIMIT_SEGMENTS: u64 = 2;

/// The coupled controllers, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Coupling {
    #[default]
    Lia,
    Olia,
    Balia,
    /// Uncoupled: each subflow its own controller.
    None,
}

impl Coupling {
    pub const NAMES: &'static [&'static str] = &["lia", "olia", "balia", "none"];

    pub fn name(self) -> &'static str {
        match self {
            Coupling::Lia => "lia",
            Coupling::Olia => "olia",
            Coupling::Balia => "balia",
            Coupling::None => "none",
        }
    }
}

impl FromStr for Coupling {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "lia" => Ok(Coupling::Lia),
            "olia" => Ok(Coupling::Olia),
            "balia" => Ok(Coupling::Balia),
            "none" => Ok(Coupling::None),
            _ => Err(UnknownName {
                what: "MPTCP coupling",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

impl fmt::Display for Coupling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one subflow tells the others.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubflowWindow {
    pub cwnd_bytes: u64,
    pub smss_bytes: u64,
    /// Smoothed RTT in seconds (0: no sample yet; such a subflow is left out of the sums).
    pub srtt_s: f64,
    /// OLIA's `l_r`: bytes acknowledged between its last two losses or since the last, the
    /// larger.
    pub inter_loss_bytes: u64,
}

impl SubflowWindow {
    fn has_rtt(&self) -> bool {
        self.srtt_s > 0.0
    }

    fn w_pkts(&self) -> f64 {
        self.cwnd_bytes as f64 / self.smss_bytes.max(1) as f64
    }
}

/// RFC 6356 section 4's `alpha` over the subflows with an RTT sample.
pub fn lia_alpha(subs: &[SubflowWindow]) -> f64 {
    let with_rtt = subs.iter().filter(|s| s.has_rtt());
    let total: f64 = with_rtt.clone().map(|s| s.cwnd_bytes as f64).sum();
    let best = with_rtt
        .clone()
        .map(|s| s.cwnd_bytes as f64 / (s.srtt_s * s.srtt_s))
        .fold(0.0, f64::max);
    let sum: f64 = with_rtt.map(|s| s.cwnd_bytes as f64 / s.srtt_s).sum();
    if sum <= 0.0 {
        return 1.0;
    }
    total * best / (sum * sum)
}

/// RFC 6356 section 4: the increase of subflow `i`'s window, in bytes, for an ACK of `acked`
/// bytes in congestion avoidance.
pub fn lia_increase_bytes(subs: &[SubflowWindow], i: usize, acked: u64) -> f64 {
    let me = subs[i];
    let total: f64 = subs
        .iter()
        .filter(|s| s.has_rtt())
        .map(|s| s.cwnd_bytes as f64)
        .sum::<f64>()
        .max(me.cwnd_bytes as f64);
    let (acked, mss, cwnd) = (acked as f64, me.smss_bytes as f64, me.cwnd_bytes as f64);
    let uncoupled = acked * mss / cwnd;
    if !me.has_rtt() {
        return uncoupled;
    }
    (lia_alpha(subs) * acked * mss / total).min(uncoupled)
}

/// OLIA's `alpha_r` for subflow `i` (Khalili et al. 2013, eq. (5)).
pub fn olia_alpha(subs: &[SubflowWindow], i: usize) -> f64 {
    let paths: Vec<usize> = (0..subs.len()).filter(|&k| subs[k].has_rtt()).collect();
    if !paths.contains(&i) {
        return 0.0;
    }
    let quality = |k: usize| {
        let l = subs[k].inter_loss_bytes as f64;
        l * l / subs[k].srtt_s
    };
    let best_q = paths.iter().map(|&k| quality(k)).fold(0.0, f64::max);
    let max_w = paths.iter().map(|&k| subs[k].cwnd_bytes).max().unwrap_or(0);
    let in_b = |k: usize| quality(k) >= best_q;
    let in_m = |k: usize| subs[k].cwnd_bytes == max_w;
    let b_not_m = paths.iter().filter(|&&k| in_b(k) && !in_m(k)).count();
    let m = paths.iter().filter(|&&k| in_m(k)).count();
    let p = paths.len() as f64;
    if b_not_m == 0 {
        0.0
    } else if in_b(i) && !in_m(i) {
        1.0 / (p * b_not_m as f64)
    } else if in_m(i) {
        -1.0 / (p * m as f64)
    } else {
        0.0
    }
}

/// The subflows' summed rate, sum of w / rtt (packets per second), over those with an RTT.
fn summed_rate(subs: &[SubflowWindow]) -> f64 {
    subs.iter()
        .filter(|s| s.has_rtt())
        .map(|s| s.w_pkts() / s.srtt_s)
        .sum()
}

/// OLIA's increase of subflow `i`'s window, in bytes, for `acked` bytes acknowledged.
pub fn olia_increase_bytes(subs: &[SubflowWindow], i: usize, acked: u64) -> f64 {
    let me = subs[i];
    let pkts = acked as f64 / me.smss_bytes.max(1) as f64;
    let mss = me.smss_bytes as f64;
    if !me.has_rtt() {
        return pkts * mss / me.w_pkts();
    }
    let sum = summed_rate(subs);
    let w = me.w_pkts();
    let per_pkt = (w / (me.srtt_s * me.srtt_s)) / (sum * sum) + olia_alpha(subs, i) / w;
    per_pkt * pkts * mss
}

/// BALIA's `alpha_r` for subflow `i`: the largest rate over its own.
fn balia_alpha(subs: &[SubflowWindow], i: usize) -> f64 {
    let x = |s: &SubflowWindow| s.w_pkts() / s.srtt_s;
    let max_x = subs
        .iter()
        .filter(|s| s.has_rtt())
        .map(x)
        .fold(0.0, f64::max);
    max_x / x(&subs[i])
}

/// BALIA's increase of subflow `i`'s window, in bytes, for `acked` bytes acknowledged.
pub fn balia_increase_bytes(subs: &[SubflowWindow], i: usize, acked: u64) -> f64 {
    let me = subs[i];
    let pkts = acked as f64 / me.smss_bytes.max(1) as f64;
    let mss = me.smss_bytes as f64;
    if !me.has_rtt() {
        return pkts * mss / me.w_pkts();
    }
    let sum_x = summed_rate(subs);
    let x_r = me.w_pkts() / me.srtt_s;
    let a = balia_alpha(subs, i);
    let per_pkt = x_r / (me.srtt_s * sum_x * sum_x) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
    per_pkt * pkts * mss
}

/// BALIA's decrease on a loss: the share of subflow `i`'s window it gives up,
/// `min(alpha_r, 1.5) / 2`.
pub fn balia_decrease_share(subs: &[SubflowWindow], i: usize) -> f64 {
    if !subs[i].has_rtt() {
        return 0.5;
    }
    balia_alpha(subs, i).min(1.5) / 2.0
}

/// The subflows of one connection as their controllers see each other, by slot.
#[derive(Clone, Debug, Default)]
pub struct CouplingGroup {
    slots: Vec<Option<SubflowWindow>>,
    /// Scratch for the live subflows (reused).
    live: Vec<SubflowWindow>,
}

impl CouplingGroup {
    /// A group shared by the controllers of one connection.
    pub fn shared() -> Arc<Mutex<CouplingGroup>> {
        Arc::new(Mutex::new(CouplingGroup::default()))
    }

    /// Subflow `slot` now has window `w`.
    pub fn set(&mut self, slot: usize, w: SubflowWindow) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, None);
        }
        self.slots[slot] = Some(w);
    }

    /// Subflow `slot` is gone: the others stop counting it.
    pub fn remove(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            *s = None;
        }
    }

    /// The live subflows with `slot`'s place among them.
    fn live(&mut self, slot: usize) -> Option<(&[SubflowWindow], usize)> {
        self.live.clear();
        let mut at = None;
        for (k, w) in self.slots.iter().enumerate() {
            if let Some(w) = w {
                if k == slot {
                    at = Some(self.live.len());
                }
                self.live.push(*w);
            }
        }
        Some((&self.live, at?))
    }
}

/// A coupled controller for one subflow (`lia`, `olia` or `balia`).
#[derive(Debug)]
pub struct Coupled {
    coupling: Coupling,
    slot: usize,
    group: Arc<Mutex<CouplingGroup>>,
    smss_bytes: u64,
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    /// The fraction of a byte of increase not yet added (or, for OLIA's negative term, taken).
    carry: f64,
    /// OLIA: bytes acknowledged since the last loss, and between the two before.
    acked_since_loss: u64,
    acked_between_losses: u64,
    srtt_s: f64,
}

impl Coupled {
    /// The controller of subflow `slot` of `group` (`coupling` is not `None`).
    pub fn new(
        coupling: Coupling,
        slot: usize,
        group: Arc<Mutex<CouplingGroup>>,
        init: &ControllerInit,
    ) -> Self {
        let c = Coupled {
            coupling,
            slot,
            group,
            smss_bytes: init.smss_bytes,
            cwnd_bytes: init.initial_window_bytes.max(init.smss_bytes),
            ssthresh_bytes: u64::MAX,
            carry: 0.0,
            acked_since_loss: 0,
            acked_between_losses: 0,
            srtt_s: 0.0,
        };
        c.publish();
        c
    }

    fn window(&self) -> SubflowWindow {
        SubflowWindow {
            cwnd_bytes: self.cwnd_bytes,
            smss_bytes: self.smss_bytes,
            srtt_s: self.srtt_s,
            inter_loss_bytes: self.acked_since_loss.max(self.acked_between_losses),
        }
    }

    fn publish(&self) {
        if let Ok(mut g) = self.group.lock() {
            g.set(self.slot, self.window());
        }
    }

    /// The increase for `acked` bytes in congestion avoidance, in bytes, from the group.
    fn increase(&self, acked: u64) -> f64 {
        let Ok(mut g) = self.group.lock() else {
            return 0.0;
        };
        g.set(self.slot, self.window());
        let Some((subs, i)) = g.live(self.slot) else {
            return 0.0;
        };
        match self.coupling {
            Coupling::Lia => lia_increase_bytes(subs, i, acked),
            Coupling::Olia => olia_increase_bytes(subs, i, acked),
            Coupling::Balia => balia_increase_bytes(subs, i, acked),
            Coupling::None => acked as f64 * self.smss_bytes as f64 / self.cwnd_bytes as f64,
        }
    }

    /// The share of the window a loss takes.
    fn decrease_share(&self) -> f64 {
        if self.coupling != Coupling::Balia {
            return 0.5;
        }
        let Ok(mut g) = self.group.lock() else {
            return 0.5;
        };
        g.set(self.slot, self.window());
        match g.live(self.slot) {
            Some((subs, i)) => balia_decrease_share(subs, i),
            None => 0.5,
        }
    }
}

impl CongestionController for Coupled {
    fn name(&self) -> &'static str {
        self.coupling.name()
    }

    fn on_ack_batch(&mut self, _now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator) {
        if let Some(srtt) = rtt.srtt() {
            self.srtt_s = srtt.as_secs_f64();
        }
        let n = batch.newly_acked_bytes;
        self.acked_since_loss += n;
        if batch.in_recovery || n == 0 {
            self.publish();
            return;
        }
        let smss = self.smss_bytes;
        if self.cwnd_bytes < self.ssthresh_bytes {
            self.cwnd_bytes += n.min(SLOW_START_LIMIT_SEGMENTS * smss);
        } else {
            self.carry += self.increase(n);
            let whole = libm::floor(self.carry);
            self.carry -= whole;
            let next = self.cwnd_bytes as f64 + whole;
            self.cwnd_bytes = (next.max(smss as f64) as u64).min(max_window_bytes(smss));
        }
        self.publish();
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        let smss = self.smss_bytes;
        let share = self.decrease_share();
        if !event.repeated_timeout {
            // RFC 5681 eq. (4) with the coupled share in place of one half.
            let kept = libm::round(
                self.cwnd_bytes.min(event.flight_size_bytes.max(smss)) as f64 * (1.0 - share),
            ) as u64;
            self.ssthresh_bytes = kept.max(MIN_SSTHRESH_SEGMENTS * smss);
        }
        self.cwnd_bytes = if event.restart_slow_start {
            LOSS_WINDOW_SEGMENTS * smss
        } else {
            self.ssthresh_bytes
        };
        self.carry = 0.0;
        self.acked_between_losses = self.acked_since_loss;
        self.acked_since_loss = 0;
        self.publish();
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes,
            cwnd_bytes: self.cwnd_bytes,
        }
    }

    fn window(&self) -> u64 {
        self.cwnd_bytes
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics::new(self.cwnd_bytes, self.ssthresh_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(cwnd_segments: u64, rtt_ms: u64) -> SubflowWindow {
        SubflowWindow {
            cwnd_bytes: cwnd_segments * 1000,
            smss_bytes: 1000,
            srtt_s: rtt_ms as f64 / 1000.0,
            inter_loss_bytes: 0,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// RFC 6356 section 4's formulas worked by hand, MSS 1000 bytes, an ACK of 1000 bytes.
    ///
    /// Two subflows, 10 segments each, both 100 ms: cwnd_total = 20,000;
    /// max(cwnd_i / rtt_i^2) = 10,000 / 0.01 = 1e6; sum(cwnd_i / rtt_i) = 2 * 10,000 / 0.1 =
    /// 2e5, squared 4e10; alpha = 20,000 * 1e6 / 4e10 = 0.5 (1/n for n equal paths, so the two
    /// together grow as one TCP). Increase: min(0.5 * 1000 * 1000 / 20,000, 1000 * 1000 /
    /// 10,000) = min(25, 100) = 25 bytes.
    ///
    /// 10 segments at 100 ms and 5 at 200 ms: max(10,000 / 0.01, 5,000 / 0.04) = 1e6;
    /// sum = 1e5 + 2.5e4 = 1.25e5, squared 1.5625e10; alpha = 15,000 * 1e6 / 1.5625e10 =
    /// 0.96. Increase on either: 0.96 * 1e6 / 15,000 = 64 bytes, below 1e6 / 10,000 = 100 and
    /// 1e6 / 5,000 = 200.
    ///
    /// One subflow alone: alpha = cwnd * (cwnd / rtt^2) / (cwnd / rtt)^2 = 1, and the increase
    /// is Reno's, MSS * MSS / cwnd = 100 bytes for 10 segments.
    #[test]
    fn lia_increase_matches_rfc_6356_worked_by_hand() {
        let equal = [w(10, 100), w(10, 100)];
        assert!(close(lia_alpha(&equal), 0.5));
        assert!(close(lia_increase_bytes(&equal, 0, 1000), 25.0));
        let unequal = [w(10, 100), w(5, 200)];
        assert!(close(lia_alpha(&unequal), 0.96));
        assert!(close(lia_increase_bytes(&unequal, 0, 1000), 64.0));
        assert!(close(lia_increase_bytes(&unequal, 1, 1000), 64.0));
        let alone = [w(10, 100)];
        assert!(close(lia_alpha(&alone), 1.0));
        assert!(close(lia_increase_bytes(&alone, 0, 1000), 100.0));
        // The cap: 1 segment at 1 ms beside 1000 at 1 s. alpha = 1,001,000 * (1000 / 1e-6) /
        // (1e6 + 1e6)^2 = 250.25, so the coupled term on the slow path, 250.25 * 1e6 /
        // 1,001,000 = 250 bytes, would outgrow one TCP there; the cap gives Reno's 1e6 / 1e6.
        let capped = [w(1, 1), w(1000, 1000)];
        assert!(close(lia_alpha(&capped), 250.25));
        assert!(close(lia_increase_bytes(&capped, 1, 1000), 1.0));
    }

    #[test]
    fn olia_moves_window_from_the_largest_to_the_best_path() {
        // Path 0 has the larger window, path 1 the larger l^2 / rtt: alpha_1 > 0 > alpha_0.
        let mut a = w(20, 100);
        a.inter_loss_bytes = 10_000;
        let mut b = w(5, 100);
        b.inter_loss_bytes = 50_000;
        let subs = [a, b];
        assert!(close(olia_alpha(&subs, 1), 1.0 / 2.0));
        assert!(close(olia_alpha(&subs, 0), -1.0 / 2.0));
        // Equal paths: alpha 0, increase (w / rtt^2) / (sum w / rtt)^2 per packet:
        // (10 / 0.01) / (200)^2 = 0.025 packets = 25 bytes, as LIA's 1/n.
        let eq = [w(10, 100), w(10, 100)];
        assert!(close(olia_alpha(&eq, 0), 0.0));
        assert!(close(olia_increase_bytes(&eq, 0, 1000), 25.0));
    }

    #[test]
    fn balia_on_equal_paths_and_its_decrease() {
        // Equal paths: alpha = 1; x = 100 pkt/s each; per packet x / (rtt X^2) * 1 * 1 =
        // 100 / (0.1 * 200^2) = 0.025 packets = 25 bytes; the decrease is half the window.
        let eq = [w(10, 100), w(10, 100)];
        assert!(close(balia_increase_bytes(&eq, 0, 1000), 25.0));
        assert!(close(balia_decrease_share(&eq, 0), 0.5));
        // The slower path (x = 25 vs 100): alpha = 4, the decrease capped at 1.5 / 2.
        let uneq = [w(10, 100), w(5, 200)];
        assert!(close(balia_decrease_share(&uneq, 1), 0.75));
        assert!(close(balia_decrease_share(&uneq, 0), 0.5));
    }

    #[test]
    fn a_coupled_pair_grows_together_as_one_tcp() {
        let group = CouplingGroup::shared();
        let init = ControllerInit {
            smss_bytes: 1000,
            initial_window_bytes: 10_000,
        };
        let mut est = RttEstimator::new(Default::default());
        est.on_sample(crate::time::SimDuration::from_millis(100));
        let mut subs: Vec<Coupled> = (0..2)
            .map(|k| Coupled::new(Coupling::Lia, k, group.clone(), &init))
            .collect();
        for s in &mut subs {
            s.ssthresh_bytes = 0; // congestion avoidance from the start
        }
        let ack = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: 1000,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 10_000,
            in_flight_bytes: 9000,
            in_recovery: false,
            rtt_sample: None,
            smss_bytes: 1000,
        };
        // One window of ACKs on each: together they grow by about one segment, as one TCP.
        for _ in 0..10 {
            for s in &mut subs {
                s.on_ack_batch(SimTime::ZERO, &ack, &est);
            }
        }
        let total: u64 = subs.iter().map(|s| s.cwnd_bytes).sum();
        assert!((20_400..=20_600).contains(&total), "{total}");
        group.lock().unwrap().remove(1);
        let mut alone = subs.remove(0);
        let before = alone.cwnd_bytes;
        alone.on_ack_batch(SimTime::ZERO, &ack, &est);
        // Reno's MSS * MSS / cwnd once alone, give or take the fraction carried.
        let grew = alone.cwnd_bytes - before;
        assert!(grew.abs_diff(1000 * 1000 / before) <= 1, "{grew}");
    }
}
