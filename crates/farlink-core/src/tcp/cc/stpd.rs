//! ST-PD TCP: a self-tuning PD controller that holds the bottleneck queue near one packet.
//!
//! Read first: seed 003 (the PhD thesis on Self-Tuning PD control based TCP) section 3.4
//! (eqs. 3.2–3.5, the fuzzy supervisor of 3.4.3.2, centre-of-maximum defuzzification),
//! section 4.2 (error control decoupled from congestion control) and section 4.3.3 (the mean
//! gains); then `docs/stpd.md`, which designs the membership functions that survive only as
//! figure captions and states the reasoning.
//!
//! On every arriving ACK, duplicates included (seed 003 section 4.2: "as long as an
//! acknowledgment arrives, regardless of whether it is a duplicate acknowledgment, ST-PD TCP
//! always calculates the current RTT"), with RTT(n) the round-trip time of the segment that
//! made the receiver send it ([`AckEcho`]):
//! - eq. 3.4, the perceived service rate S(n) = (segments sent during RTT(n)) / RTT(n);
//! - eq. 3.3, the observed bottleneck queue buf(n) = (RTT(n) − RTT_min) · S(n);
//! - eq. 3.2, the error err(n) = ref − buf(n), with ref one segment (section 3.4.3.1);
//! - the fuzzy supervisor (3.4.3.2) maps the perceived bandwidth–RTT product, "the amount of
//!   data transmitted during the current round-trip time" (the same count of segments), to
//!   k_p and k_d;
//! - eq. 3.5, cwnd(n) = cwnd(n−1) + k_p·err(n) + k_d·(err(n) − err(n−1)).
//!
//! Error control is decoupled (section 4.2): a loss repaired after duplicate ACKs (or SACK)
//! leaves the window alone; the retransmission timer stays as the safety net and "shuts its
//! congestion window size to one segment". Fast recovery's window inflation, if the recovery
//! algorithm uses it, is the recovery role's (`tcp/recovery.rs`); it keeps the ACK clock going
//! while the unchanged window waits for the hole to be filled.
//!
//! Not in seed 003, and ours: the window is not grown past twice the data in flight (the
//! PD law is an integrator; without this an application-limited or receiver-window-limited
//! flow would wind it up without bound, the classic integrator windup); it never shrinks a
//! window either. The window is a real number of segments, as ns-2's `cwnd_` is a double,
//! and the sender uses its integer part.
//!
//! Floating point is used only here, for the controller's arithmetic; the one transcendental
//! function (a logarithm in the fuzzifier) comes from `libm`, so results are the same on every
//! machine. Nothing is allocated per packet: the record of send times is reserved once and
//! only grows if a window outgrows it, keeping its storage.

use std::collections::VecDeque;

use super::{
    AckBatch, AckEcho, CcMetrics, CongestionController, CongestionEvent, ControllerInit, Detection,
    Reduction, SentPacket, MAX_CWND_BYTES,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::{SimDuration, SimTime};

/// Seed 003 section 3.4.3.1: "To avoid starving the bottleneck link and also to avoid
/// excessive queuing delay, we choose to set the desired buffer occupancy ref to 1 packet."
pub const REFERENCE_SEGMENTS: f64 = 1.0;
/// Seed 003 section 4.2: on a timeout "the ST-PD TCP sender shuts its congestion window size to
/// one segment"; also the smallest window the PD law may leave.
pub const LOSS_WINDOW_SEGMENTS: f64 = 1.0;
/// Anti-windup (ours): the window grows to at most this many times the segments in flight.
pub const WINDUP_LIMIT_FACTOR: f64 = 2.0;
/// Send times kept for eq. 3.4, reserved up front (a window of 1024 segments sent twice).
pub const SEND_RECORD_CAPACITY: usize = 2048;

/// The five linguistic terms of seed 003 section 3.4.3.2, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    ExtremelySmall,
    Small,
    Medium,
    Large,
    ExtremelyLarge,
}

impl Term {
    pub const ALL: [Term; 5] = [
        Term::ExtremelySmall,
        Term::Small,
        Term::Medium,
        Term::Large,
        Term::ExtremelyLarge,
    ];

    /// The seed's abbreviation: ES, S, M, L, EL.
    pub fn abbreviation(self) -> &'static str {
        match self {
            Term::ExtremelySmall => "ES",
            Term::Small => "S",
            Term::Medium => "M",
            Term::Large => "L",
            Term::ExtremelyLarge => "EL",
        }
    }
}

/// Where the five input terms peak: the perceived bandwidth–RTT product in segments, a
/// geometric grid of ratio 3 (`docs/stpd.md`). ES holds 1 below its peak and EL above its peak.
/// Seed 003's own connections sit near the peaks: the example of section 4.3.3 (m = 3), the
/// wired path of section 3.5.1 (about 9), the wireless path of section 4.4.1 (about 31) and
/// the GEO T1 hop of section 4.4.2 (about 94).
pub const INPUT_PEAKS_SEGMENTS: [f64; 5] = [1.0, 3.0, 9.0, 27.0, 81.0];

/// The maxima of the five output terms of k_p, ES to EL (centre-of-maximum needs only these).
/// Each is Ziegler and Nichols's proportional gain 0.6·K_u for the input peak that the rule
/// base maps to it, where K_u(M) = 2·sin(π / (2(2M − 1))) is the ultimate gain of eq. 3.5's
/// k_p in the per-ACK loop whose feedback delay is M ACKs (`docs/stpd.md`). Rule base: BDP ES
/// → k_p EL (M = 1), S → L (M = 3: 0.3708, the 0.368 of section 4.3.3), M → M (9),
/// L → S (27), EL → ES (81).
pub const KP_OUTPUT: [f64; 5] = [0.011_707_6, 0.035_560_0, 0.110_722, 0.370_820, 1.2];

/// The maxima of the five output terms of k_d, ES to EL: the derivative gain that minimises the
/// spectral radius of the per-ACK loop with the k_p above, at each input peak, scaled by one
/// factor so that the term at the section 4.3.3 connection (S, M = 3) is that section's 0.033
/// (`docs/stpd.md`; `farlink.models.stpd.supervisor_design()` recomputes them). Rule base: BDP
/// ES → k_d ES, ..., EL → EL.
pub const KD_OUTPUT: [f64; 5] = [0.0, 0.033, 0.047_703_1, 0.051_971_3, 0.053_324_9];

/// Seed 003 section 3.4.3.2, the rule base for k_p: the output term for each input term.
pub const KP_RULES: [Term; 5] = [
    Term::ExtremelyLarge,
    Term::Large,
    Term::Medium,
    Term::Small,
    Term::ExtremelySmall,
];
/// Seed 003 section 3.4.3.2, the rule base for k_d.
pub const KD_RULES: [Term; 5] = Term::ALL;

/// The PD gains of eq. 3.5.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gains {
    pub kp: f64,
    pub kd: f64,
}

/// The fuzzy supervisory controller of seed 003 section 3.4.3.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FuzzySupervisor;

impl FuzzySupervisor {
    /// Fuzzification: the degree of each term for a perceived bandwidth–RTT product of
    /// `bdp_segments`. Triangles on the logarithm of the product, each reaching zero at its
    /// neighbours' peaks, so that the degrees always sum to one.
    pub fn memberships(&self, bdp_segments: f64) -> [f64; 5] {
        let mut mu = [0.0; 5];
        // Position on the grid: 0 at the ES peak, 4 at the EL peak; NaN and below 1 go to ES.
        let x = if bdp_segments > INPUT_PEAKS_SEGMENTS[0] {
            libm::log(bdp_segments) / libm::log(3.0)
        } else {
            0.0
        };
        if x >= 4.0 {
            mu[4] = 1.0;
            return mu;
        }
        let j = libm::floor(x) as usize;
        let t = x - j as f64;
        mu[j] = 1.0 - t;
        mu[j + 1] = t;
        mu
    }

    /// Inference and centre-of-maximum defuzzification: each rule fires its output term with
    /// the degree of its input term, and the gain is the average of the output terms' maxima
    /// weighted by those degrees.
    pub fn gains(&self, bdp_segments: f64) -> Gains {
        let mu = self.memberships(bdp_segments);
        let (mut kp, mut kd, mut total) = (0.0, 0.0, 0.0);
        for (j, &m) in mu.iter().enumerate() {
            kp += m * KP_OUTPUT[KP_RULES[j] as usize];
            kd += m * KD_OUTPUT[KD_RULES[j] as usize];
            total += m;
        }
        Gains {
            kp: kp / total,
            kd: kd / total,
        }
    }

    /// The smallest and largest k_p and k_d the supervisor can produce.
    pub fn output_range() -> (Gains, Gains) {
        let lo = Gains {
            kp: KP_OUTPUT[0],
            kd: KD_OUTPUT[0],
        };
        let hi = Gains {
            kp: KP_OUTPUT[4],
            kd: KD_OUTPUT[4],
        };
        (lo, hi)
    }
}

/// Where the gains of eq. 3.5 come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GainSchedule {
    /// The fuzzy supervisor of section 3.4.3.2 (ST-PD proper).
    Fuzzy,
    /// Fixed gains (a plain PD controller, e.g. section 4.3.3's mean gains).
    Fixed(Gains),
}

/// ST-PD's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StpdConfig {
    /// ref of eq. 3.2, in segments.
    pub reference_segments: f64,
    pub gains: GainSchedule,
}

impl Default for StpdConfig {
    /// Seed 003: ref of one segment, the fuzzy supervisor.
    fn default() -> Self {
        StpdConfig {
            reference_segments: REFERENCE_SEGMENTS,
            gains: GainSchedule::Fuzzy,
        }
    }
}

/// What the controller worked out on its last ACK, for traces and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StpdState {
    /// RTT(n), the last echoed round-trip time.
    pub rtt: SimDuration,
    /// Segments sent during RTT(n) (eq. 3.4's numerator; the supervisor's input).
    pub sent_in_rtt_segments: u64,
    /// buf(n) of eq. 3.3.
    pub queue_estimate_segments: f64,
    /// err(n) of eq. 3.2.
    pub error_segments: f64,
    pub kp: f64,
    pub kd: f64,
}

#[derive(Clone, Debug)]
pub struct Stpd {
    config: StpdConfig,
    supervisor: FuzzySupervisor,
    smss_bytes: u64,
    initial_window_segments: f64,
    /// cwnd in segments, a real number (ns-2's `cwnd_` is a double).
    cwnd_segments: f64,
    /// RTT_min of eq. 3.3, from echoes that name a segment sent once.
    rtt_min: Option<SimDuration>,
    /// err(n − 1); `None` before the first measurement, so the first step has no derivative
    /// kick.
    err_prev: Option<f64>,
    /// The echo of the ACK being processed, handed over by `on_ack_echo`.
    pending_echo: Option<AckEcho>,
    /// Send times of recent segments, oldest first, for eq. 3.4.
    send_times: VecDeque<SimTime>,
    last: StpdState,
}

impl Stpd {
    pub fn new(config: &StpdConfig, init: &ControllerInit) -> Self {
        let smss = init.smss_bytes.max(1);
        let iw = (init.initial_window_bytes / smss).max(1) as f64;
        Stpd {
            config: *config,
            supervisor: FuzzySupervisor,
            smss_bytes: smss,
            initial_window_segments: iw,
            cwnd_segments: iw,
            rtt_min: None,
            err_prev: None,
            pending_echo: None,
            send_times: VecDeque::with_capacity(SEND_RECORD_CAPACITY),
            last: StpdState::default(),
        }
    }

    /// The window in segments, before the sender takes its integer part.
    pub fn cwnd_segments(&self) -> f64 {
        self.cwnd_segments
    }
    /// RTT_min of eq. 3.3.
    pub fn rtt_min(&self) -> Option<SimDuration> {
        self.rtt_min
    }
    /// The last step's measurement, error and gains.
    pub fn state(&self) -> StpdState {
        self.last
    }

    fn max_window_segments(&self) -> f64 {
        (MAX_CWND_BYTES / self.smss_bytes).max(1) as f64
    }

    /// Segments sent at or after `since` (the triggering segment and every one after it):
    /// during RTT(n), in eq. 3.4's words.
    fn sent_since(&self, since: SimTime) -> u64 {
        let first = self.send_times.partition_point(|&t| t < since);
        (self.send_times.len() - first) as u64
    }

    /// One step of the controller on the ACK whose echo is `echo`.
    fn step(&mut self, now: SimTime, echo: &AckEcho, rtt: &RttEstimator, in_flight_bytes: u64) {
        let r = echo.rtt;
        // RTT_min only from ACKs of new data that name a segment sent once: a duplicate's match
        // to its segment is the sender's inference, and one sample too short would bias every
        // later queue estimate upwards for the rest of the connection.
        if !echo.ambiguous && !echo.duplicate {
            self.rtt_min = Some(self.rtt_min.map_or(r, |m| m.min(r)));
        }
        // The sender's estimator takes only samples Karn's rule allows; they are genuine too.
        if let Some(m) = rtt.min_rtt() {
            self.rtt_min = Some(self.rtt_min.map_or(m, |x| x.min(m)));
        }
        let Some(rtt_min) = self.rtt_min else {
            // Only an ambiguous sample so far: nothing to measure the queue against.
            return;
        };
        let sent_at = SimTime::from_nanos(now.as_nanos().saturating_sub(r.as_nanos()));
        let sent = self.sent_since(sent_at);
        // Keep two round trips of history: a later ACK may echo a segment sent a little before
        // this one's (a retransmission's ACK precedes duplicates of older segments).
        let horizon = sent_at.as_nanos().saturating_sub(r.as_nanos());
        while self
            .send_times
            .front()
            .is_some_and(|t| t.as_nanos() < horizon)
        {
            self.send_times.pop_front();
        }

        // Eqs. 3.3 and 3.4: buf = (RTT − RTT_min) · sent / RTT. An RTT at or below RTT_min
        // (an ambiguous echo, or RTT = 0) means an empty queue.
        let r_ns = r.as_nanos() as f64;
        let min_ns = rtt_min.as_nanos() as f64;
        let queue = if r_ns > min_ns {
            sent as f64 * ((r_ns - min_ns) / r_ns)
        } else {
            0.0
        };
        // Eq. 3.2.
        let err = self.config.reference_segments - queue;
        let gains = match self.config.gains {
            GainSchedule::Fuzzy => self.supervisor.gains(sent as f64),
            GainSchedule::Fixed(g) => g,
        };
        // Eq. 3.5.
        let derr = err - self.err_prev.unwrap_or(err);
        let proposed = self.cwnd_segments + gains.kp * err + gains.kd * derr;
        self.err_prev = Some(err);

        // Anti-windup: growth stops at twice what is in flight (never a cut).
        let in_flight_segments = in_flight_bytes as f64 / self.smss_bytes as f64;
        let ceiling = (WINDUP_LIMIT_FACTOR * in_flight_segments)
            .max(self.initial_window_segments)
            .max(self.cwnd_segments);
        let mut cwnd = proposed.min(ceiling);
        if cwnd.is_nan() {
            cwnd = self.cwnd_segments;
        }
        self.cwnd_segments = cwnd.clamp(LOSS_WINDOW_SEGMENTS, self.max_window_segments());
        self.last = StpdState {
            rtt: r,
            sent_in_rtt_segments: sent,
            queue_estimate_segments: queue,
            error_segments: err,
            kp: gains.kp,
            kd: gains.kd,
        };
    }
}

impl CongestionController for Stpd {
    fn name(&self) -> &'static str {
        "stpd"
    }

    fn on_packet_sent(&mut self, now: SimTime, _sent: &SentPacket, _in_flight_bytes: u64) {
        // Retransmissions count: eq. 3.4 counts packets transmitted.
        self.send_times.push_back(now);
    }

    fn on_ack_echo(&mut self, _now: SimTime, echo: &AckEcho) {
        self.pending_echo = Some(*echo);
    }

    fn on_ack_batch(&mut self, now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator) {
        // Every ACK the sender could match to a segment, duplicates included; an ACK that
        // names no segment (a bare window update) measures nothing.
        if let Some(echo) = self.pending_echo.take() {
            self.step(now, &echo, rtt, batch.prior_in_flight_bytes);
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, event: &CongestionEvent) -> Reduction {
        match event.detection {
            // Seed 003 section 4.2: error control is independent of congestion control; a loss
            // repaired on duplicate ACKs leaves the window to the PD controller (and so does
            // an ECN echo: the PD controller reads the queue from the delay).
            Detection::DupAcks | Detection::Sack | Detection::Ecn => {}
            // "If no acknowledgment is received before the retransmission timer expires, the
            // ST-PD TCP sender shuts its congestion window size to one segment."
            Detection::RetransmissionTimeout => self.cwnd_segments = LOSS_WINDOW_SEGMENTS,
        }
        Reduction {
            ssthresh_bytes: u64::MAX,
            cwnd_bytes: self.window(),
        }
    }

    fn window(&self) -> u64 {
        // The sender sends whole segments: the integer part, as ns-2 converts `cwnd_`.
        (libm::floor(self.cwnd_segments) as u64).max(1) * self.smss_bytes
    }

    fn metrics(&self) -> CcMetrics {
        // For traces, the window as the PD law keeps it, a real number of segments in bytes
        // (seed 003 plots ns-2's double `cwnd_`); the sender's is its integer part, which the
        // trace's effective window shows. No slow-start threshold: ssthresh is unbounded.
        let cwnd_bytes = libm::round(self.cwnd_segments * self.smss_bytes as f64) as u64;
        CcMetrics::new(cwnd_bytes, u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::rtt::RttConfig;

    const SMSS: u64 = 1000;

    fn stpd(config: StpdConfig, iw_segments: u64) -> Stpd {
        Stpd::new(
            &config,
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    fn at_us(us: u64) -> SimTime {
        SimTime::from_nanos(us * 1000)
    }

    fn sent(cc: &mut Stpd, now: SimTime, seq: u64) {
        cc.on_packet_sent(
            now,
            &SentPacket {
                seq,
                bytes: SMSS,
                retransmission: false,
            },
            0,
        );
    }

    /// One ACK echoing a segment sent `rtt` ago.
    fn ack(cc: &mut Stpd, now: SimTime, rtt: SimDuration, duplicate: bool, in_flight_pkts: u64) {
        let est = RttEstimator::new(RttConfig::default());
        cc.on_ack_echo(
            now,
            &AckEcho {
                rtt,
                duplicate,
                ambiguous: false,
            },
        );
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: if duplicate { 0 } else { SMSS },
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: in_flight_pkts * SMSS,
            in_flight_bytes: in_flight_pkts.saturating_sub(1) * SMSS,
            in_recovery: false,
            rtt_sample: (!duplicate).then_some(rtt),
            smss_bytes: SMSS,
        };
        cc.on_ack_batch(now, &batch, &est);
    }

    fn event(cc: &mut Stpd, detection: Detection) -> Reduction {
        cc.on_congestion_event(
            SimTime::ZERO,
            &CongestionEvent {
                detection,
                flight_size_bytes: 20 * SMSS,
                lost_bytes: SMSS,
                smss_bytes: SMSS,
                restart_slow_start: detection == Detection::RetransmissionTimeout,
                repeated_timeout: false,
                during_fast_recovery: false,
            },
        )
    }

    /// A window-limited sender over one FIFO bottleneck of `service_us` per segment and a
    /// base round trip `base_rtt_us` (which includes one service time); one ACK per segment.
    /// Returns the controller and the queue each segment found on arrival at the bottleneck.
    fn constant_rate_path(
        service_us: u64,
        base_rtt_us: u64,
        acks: usize,
        mut loss: impl FnMut(u64) -> bool,
    ) -> (Stpd, Vec<u64>) {
        let mut cc = stpd(StpdConfig::default(), 1);
        let mut next_seq = 0u64;
        let mut in_flight: VecDeque<(SimTime, SimTime, bool)> = VecDeque::new(); // sent, acked at, lost
        let mut link_free_us = 0u64;
        let mut queues = Vec::new();
        let mut now = SimTime::ZERO;
        let mut lost_pending = 0u64;
        for _ in 0..acks {
            // Send what the window allows.
            while (in_flight.len() as u64) < cc.window() / SMSS {
                let t = now.as_nanos() / 1000;
                let start = link_free_us.max(t);
                queues.push((start - t).div_ceil(service_us));
                link_free_us = start + service_us;
                let acked_at = at_us(link_free_us + base_rtt_us - service_us);
                sent(&mut cc, now, next_seq);
                in_flight.push_back((now, acked_at, loss(next_seq)));
                next_seq += 1;
            }
            let (sent_at, acked_at, lost) = in_flight.pop_front().unwrap();
            now = acked_at;
            if lost {
                // The receiver sees nothing; the next arrivals are duplicates.
                lost_pending += 1;
                continue;
            }
            let duplicate = lost_pending > 0;
            ack(
                &mut cc,
                now,
                now - sent_at,
                duplicate,
                in_flight.len() as u64 + 1,
            );
        }
        (cc, queues)
    }

    #[test]
    fn window_settles_at_the_bandwidth_rtt_product_plus_the_reference() {
        // 1.5 Mbit/s and 1000-byte segments: 5333 us each; base RTT 48 ms = 9 segments.
        let service = 5_333;
        let base = 9 * service;
        let (cc, queues) = constant_rate_path(service, base, 4000, |_| false);
        let w = cc.cwnd_segments();
        assert!((9.5..=11.0).contains(&w), "cwnd {w} segments");
        let s = cc.state();
        assert!(
            (s.queue_estimate_segments - 1.0).abs() < 0.5,
            "queue estimate {}",
            s.queue_estimate_segments
        );
        let tail = &queues[queues.len() - 200..];
        assert!(
            tail.iter().all(|&q| q <= 2),
            "queue found on arrival {tail:?}"
        );
        // The supervisor's input is the window in flight, about 10 segments.
        assert!((9..=11).contains(&s.sent_in_rtt_segments));
    }

    #[test]
    fn window_settles_on_a_long_fat_path_too() {
        // 31 segments of base round trip (seed 003's wireless path).
        let service = 5_333;
        let (cc, queues) = constant_rate_path(service, 31 * service, 20_000, |_| false);
        let w = cc.cwnd_segments();
        assert!((31.5..=33.0).contains(&w), "cwnd {w} segments");
        let tail = &queues[queues.len() - 500..];
        assert!(tail.iter().all(|&q| q <= 2), "{tail:?}");
    }

    #[test]
    fn an_empty_queue_opens_the_window_by_kp_per_ack_about_one_segment_per_round_trip() {
        // Seed 003's GEO T1 hop: a pipe of 94 segments, opened from one. On an empty queue
        // eq. 3.3 reads 0 (RTT(n) cannot fall below RTT_min), so err = ref = 1 on every ACK:
        // each ACK adds k_p (the derivative term adds nothing while err stays at 1), with the
        // supervisor's k_p at the segments sent per round trip, which is the window itself.
        let service = 5_333;
        let acks = 2000;
        let (cc, queues) = constant_rate_path(service, 94 * service, acks, |_| false);
        // Only the second of two segments sent back to back (the window passing a whole
        // number) waits, behind the first: the pipe never fills.
        assert!(queues.iter().all(|&q| q <= 1), "the pipe never fills");
        let w = cc.cwnd_segments();
        // dW/dACK = k_p(W): the ACKs needed to open from 1 to w are the integral of 1 / k_p,
        // give or take the ACKs of the segments that waited behind their twin (their echo
        // reads a one-segment queue, err < 1: a few per cent slower).
        let s = FuzzySupervisor;
        let steps = 10_000;
        let dw = (w - 1.0) / steps as f64;
        let predicted_acks: f64 = (0..steps)
            .map(|k| dw / s.gains(1.0 + (k as f64 + 0.5) * dw).kp)
            .sum();
        assert!(
            (predicted_acks / acks as f64 - 1.0).abs() < 0.1,
            "{predicted_acks} ACKs predicted to reach {w}, {acks} taken"
        );
        // A window opening g segments per round trip takes about w² / (2g) ACKs to reach w.
        let per_round_trip = w * w / (2.0 * acks as f64);
        assert!(
            (0.8..1.3).contains(&per_round_trip),
            "{per_round_trip} segments per round trip (window {w} after {acks} ACKs)"
        );
    }

    #[test]
    fn queue_estimate_follows_eqs_3_3_and_3_4() {
        let mut cc = stpd(
            StpdConfig {
                gains: GainSchedule::Fixed(Gains { kp: 0.0, kd: 0.0 }),
                ..StpdConfig::default()
            },
            10,
        );
        // RTT_min of 40 ms from a first echo.
        sent(&mut cc, at_us(0), 0);
        ack(
            &mut cc,
            at_us(40_000),
            SimDuration::from_millis(40),
            false,
            1,
        );
        assert_eq!(cc.rtt_min(), Some(SimDuration::from_millis(40)));
        assert_eq!(cc.state().queue_estimate_segments, 0.0);
        // Twelve segments sent from t = 100 ms on, every 5 ms; the ACK at 160 ms echoes the
        // first of them: RTT(n) = 60 ms, and all twelve were sent during it.
        for k in 0..12 {
            sent(&mut cc, at_us(100_000 + 5_000 * k), 1 + k);
        }
        ack(
            &mut cc,
            at_us(160_000),
            SimDuration::from_millis(60),
            true,
            12,
        );
        let s = cc.state();
        assert_eq!(s.sent_in_rtt_segments, 12);
        // S = 12 / 60 ms; buf = (60 − 40) ms · S = 4 segments.
        assert!((s.queue_estimate_segments - 4.0).abs() < 1e-12);
        assert!((s.error_segments - (REFERENCE_SEGMENTS - 4.0)).abs() < 1e-12);
        // An echo of the sixth: sent during its 35 ms RTT are segments 6..12.
        ack(
            &mut cc,
            at_us(160_000),
            SimDuration::from_millis(35),
            true,
            12,
        );
        let s = cc.state();
        assert_eq!(s.sent_in_rtt_segments, 7);
        assert_eq!(s.queue_estimate_segments, 0.0, "below RTT_min: empty");
    }

    #[test]
    fn pd_law_is_eq_3_5_on_every_ack_duplicates_included() {
        let g = Gains { kp: 0.3, kd: 0.1 };
        let mut cc = stpd(
            StpdConfig {
                gains: GainSchedule::Fixed(g),
                ..StpdConfig::default()
            },
            10,
        );
        for k in 0..10 {
            sent(&mut cc, at_us(0), k);
        }
        // First measurement: err = 1, no derivative kick.
        ack(
            &mut cc,
            at_us(40_000),
            SimDuration::from_millis(40),
            false,
            10,
        );
        assert!((cc.cwnd_segments() - 10.3).abs() < 1e-12);
        // A duplicate ACK echoing a segment with 10 ms of queueing: sent during its 50 ms
        // RTT were the 10 segments, so buf = 10 · 10/50 = 2, err = −1.
        ack(
            &mut cc,
            at_us(50_000),
            SimDuration::from_millis(50),
            true,
            10,
        );
        let (err, err_prev) = (-1.0, 1.0);
        let expected = 10.3 + 0.3 * err + 0.1 * (err - err_prev);
        assert!((cc.cwnd_segments() - expected).abs() < 1e-12);
        assert_eq!(cc.window(), 9 * SMSS, "the integer part");
    }

    #[test]
    fn fast_retransmit_loss_does_not_reduce_the_window() {
        let service = 5_333;
        // Lose segment 500, once the window has settled.
        let (mut cc, _) = constant_rate_path(service, 9 * service, 520, |seq| seq == 500);
        let before = cc.window();
        for detection in [Detection::DupAcks, Detection::Sack] {
            let r = event(&mut cc, detection);
            assert_eq!(r.cwnd_bytes, before);
            assert_eq!(cc.window(), before);
            assert_eq!(r.ssthresh_bytes, u64::MAX);
        }
    }

    #[test]
    fn timeout_shuts_the_window_to_one_segment_and_the_pd_law_reopens_it() {
        let service = 5_333;
        let (mut cc, _) = constant_rate_path(service, 9 * service, 2000, |_| false);
        assert!(cc.window() >= 9 * SMSS);
        let r = event(&mut cc, Detection::RetransmissionTimeout);
        assert_eq!(r.cwnd_bytes, SMSS);
        assert_eq!(cc.window(), SMSS);
        assert_eq!(cc.cwnd_segments(), 1.0);
        // An empty queue: the error is +1 and the window grows again.
        sent(&mut cc, at_us(100_000_000), 0);
        ack(
            &mut cc,
            at_us(100_048_000),
            SimDuration::from_millis(48),
            false,
            1,
        );
        assert!(cc.cwnd_segments() > 1.0);
    }

    #[test]
    fn gains_stay_within_the_supervisor_output_range() {
        let s = FuzzySupervisor;
        let (lo, hi) = FuzzySupervisor::output_range();
        let mut bdp = 0.0;
        while bdp < 1e6 {
            let g = s.gains(bdp);
            assert!(lo.kp <= g.kp && g.kp <= hi.kp, "kp {} at {bdp}", g.kp);
            assert!(lo.kd <= g.kd && g.kd <= hi.kd, "kd {} at {bdp}", g.kd);
            let mu = s.memberships(bdp);
            assert!((mu.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            bdp = bdp * 1.01 + 0.01;
        }
        for bad in [f64::NAN, f64::INFINITY, -5.0] {
            let g = s.gains(bad);
            assert!(g.kp.is_finite() && g.kd.is_finite(), "{bad}");
        }
        // And in the controller, whatever the path.
        let service = 5_333;
        for base in [1, 3, 9, 31, 94, 300] {
            let (cc, _) = constant_rate_path(service, base * service, 3000, |_| false);
            let st = cc.state();
            assert!(lo.kp <= st.kp && st.kp <= hi.kp && lo.kd <= st.kd && st.kd <= hi.kd);
        }
    }

    #[test]
    fn rule_bases_are_monotone_as_section_3_4_3_2_says() {
        let s = FuzzySupervisor;
        let at = |b: f64| s.gains(b);
        // Peaks: each rule fires alone.
        for (j, &peak) in INPUT_PEAKS_SEGMENTS.iter().enumerate() {
            let mu = s.memberships(peak);
            assert!((mu[j] - 1.0).abs() < 1e-12, "{:?} at {peak}", Term::ALL[j]);
            let g = at(peak);
            assert!((g.kp - KP_OUTPUT[4 - j]).abs() < 1e-12);
            assert!((g.kd - KD_OUTPUT[j]).abs() < 1e-12);
        }
        // k_p falls and k_d rises with the bandwidth–RTT product.
        let mut prev = at(0.5);
        for k in 1..400 {
            let g = at(0.5 * 1.02f64.powi(k));
            assert!(g.kp <= prev.kp && g.kd >= prev.kd);
            prev = g;
        }
        assert_eq!(Term::Medium.abbreviation(), "M");
    }

    #[test]
    fn kp_outputs_are_ziegler_nichols_on_the_per_ack_loop() {
        // K_u(M) = 2 sin(π / (2(2M − 1))), k_p = 0.6 K_u at the input peak the rule maps.
        for (j, &peak) in INPUT_PEAKS_SEGMENTS.iter().enumerate() {
            let ku = 2.0 * libm::sin(std::f64::consts::PI / (2.0 * (2.0 * peak - 1.0)));
            assert!((KP_OUTPUT[4 - j] - 0.6 * ku).abs() < 1e-6, "peak {peak}");
        }
        // Section 4.3.3's mean k_p for its m = 3 connection, within 1 %.
        let g = FuzzySupervisor.gains(3.0);
        assert!((g.kp - 0.368).abs() / 0.368 < 0.01, "{}", g.kp);
        assert_eq!(g.kd, 0.033);
    }

    #[test]
    fn rtt_samples_of_zero_and_of_hours_keep_a_finite_window_of_at_least_one_segment() {
        for rtts in [
            [SimDuration::ZERO; 4],
            [SimDuration::from_secs(3 * 3600); 4],
            [
                SimDuration::from_millis(50),
                SimDuration::ZERO,
                SimDuration::from_secs(10 * 3600),
                SimDuration::from_nanos(1),
            ],
        ] {
            let mut cc = stpd(StpdConfig::default(), 10);
            let mut now = SimTime::ZERO;
            for (k, &r) in rtts.iter().cycle().take(200).enumerate() {
                sent(&mut cc, now, k as u64);
                now = now + r + SimDuration::from_nanos(1);
                ack(&mut cc, now, r, k % 3 == 0, 10);
                let w = cc.cwnd_segments();
                assert!(w.is_finite() && w >= 1.0, "cwnd {w} after {r}");
                assert!(cc.window() >= SMSS);
                let s = cc.state();
                assert!(s.queue_estimate_segments.is_finite() && s.error_segments.is_finite());
            }
        }
    }

    #[test]
    fn an_ack_without_an_echo_changes_nothing() {
        let mut cc = stpd(StpdConfig::default(), 4);
        let batch = AckBatch {
            acked: &[],
            lost: &[],
            newly_acked_bytes: 0,
            newly_sacked_bytes: 0,
            prior_in_flight_bytes: 0,
            in_flight_bytes: 0,
            in_recovery: false,
            rtt_sample: None,
            smss_bytes: SMSS,
        };
        cc.on_ack_batch(at_us(1), &batch, &RttEstimator::new(RttConfig::default()));
        assert_eq!(cc.window(), 4 * SMSS);
    }

    #[test]
    fn growth_stops_at_twice_the_data_in_flight() {
        let mut cc = stpd(StpdConfig::default(), 10);
        // An application-limited flow: one segment in flight, an empty queue, ACK after ACK.
        for k in 0..100 {
            sent(&mut cc, at_us(100_000 * k), k);
            ack(
                &mut cc,
                at_us(100_000 * k + 40_000),
                SimDuration::from_millis(40),
                false,
                1,
            );
        }
        assert_eq!(cc.cwnd_segments(), 10.0, "held at the initial window");
    }
}
