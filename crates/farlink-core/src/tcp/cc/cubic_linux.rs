//! CUBIC as Linux computes it (`net/ipv4/tcp_cubic.c`, Linux 5.x to 6.x): the same cubic
//! curve as RFC 9438 ([`super::cubic`]), reached through the kernel's integer, jiffy-clocked
//! arithmetic, with HyStart.
//!
//! Read first: RFC 9438 (what CUBIC means), then S. Ha, I. Rhee, L. Xu, "CUBIC: A New
//! TCP-Friendly High-Speed TCP Variant", ACM SIGOPS OSR 2008 (section 3), and S. Ha, I. Rhee,
//! "Taming the Elephants: New TCP Slow Start", Computer Networks 2011 (HyStart); the kernel
//! module is where the arithmetic below comes from, re-derived here from its description.
//!
//! Where it differs from RFC 9438, and why it matters:
//! - **The window grows by `cnt`, recomputed at most once every HZ/32 jiffies while cwnd is
//!   unchanged.** Per ACK the kernel adds the segments acknowledged to a counter and grows
//!   cwnd by one each `cnt` of them; `cnt` comes from the cubic curve and the Reno-friendly
//!   estimate. While cwnd has not changed and fewer than HZ/32 jiffies (28 ms at HZ = 250)
//!   have passed since the last computation, the kernel keeps the old `cnt`. On a path whose
//!   round trip is far shorter than that, a `cnt` computed at the start of an epoch (20 when
//!   no W_max is known, after a timeout; up to 100·cwnd on the plateau) holds for hundreds of
//!   round trips: a window of 2 grows by one segment every 20 ACKs. Under heavy loss on such a
//!   path the kernel's windows stay a few segments wide, and a lost retransmission with nothing
//!   sent behind it leaves only the timer (`docs/captures.md`, the heavy cases).
//! - **The reduction is taken from cwnd**, not FlightSize: `ssthresh = max(cwnd·717/1024, 2)`,
//!   W_max = cwnd (or cwnd·(1024 + 717)/2048 with fast convergence).
//! - **The Reno-friendly estimate** grows by one segment per `cwnd·beta_scale/8` segments
//!   acknowledged, `beta_scale = 8(1024 + 717)/3/(1024 − 717) = 15` (integer): 0.53 segments
//!   per round trip, where RFC 9438 moves to 1 once W_est reaches cwnd_prior.
//! - **No W_max, `cnt` at most 20** (5 % per round trip), and the cubic curve's time is the
//!   jiffies since the epoch began plus the least RTT, in 1/1024 s.
//! - **A timeout** (the kernel's Loss state) resets everything the module keeps (W_max, the
//!   least delay, the epoch) and HyStart; the ssthresh computed just before it stays. A
//!   timeout that ends a fast recovery still in progress keeps the recovery's ssthresh (the
//!   kernel recomputes it only "if it has not yet been made inside this window").
//! - **Slow start** is the kernel's `tcp_slow_start`: cwnd grows by the segments newly
//!   delivered (`tcp_newly_delivered`: a segment SACKed before the cumulative ACK covers it
//!   counts when SACKed, not again) up to ssthresh, the rest going to congestion avoidance in
//!   the same ACK; in slow start while cwnd < ssthresh.
//! - **HyStart** ends slow start from cwnd ≥ 16: when the ACKs of a round, each within 2 ms
//!   of the last, span more than half the least delay plus an allowance for send offload
//!   (the ACK train), or when the least of a round's first 8 RTT samples exceeds the least
//!   delay by an eighth of it, clamped to [4, 16] ms (delay increase). ssthresh becomes cwnd.
//!
//! Choices (see also `docs/congestion-control.md`):
//! - HZ is 250 by default (`CubicLinuxConfig::hz`): Debian's and Ubuntu's kernels, and the
//!   kernel of the machines farlink's comparisons run on. A kernel built with HZ = 1000 holds
//!   `cnt` for 31 ms instead of 28.
//! - The cube root is exact (the integer floor); the kernel's table and one Newton step are
//!   within 0.2 % of it.
//! - The RTT sample HyStart and the least delay see is that of the most recently sent segment
//!   the ACK newly covers that was sent once (the kernel's `ca_rtt_us`); an ACK that covers
//!   only retransmitted or SACKed segments gives the sender's RTT sample, if any.
//! - The window grows only while the sender is window-limited (`tcp_is_cwnd_limited`): in
//!   congestion avoidance when no full segment more fitted in flight before the ACK, in slow
//!   start while cwnd is below twice what was in flight.
//! - The epoch is not shifted across an idle spell (`CA_EVENT_TX_START`): farlink's sender does
//!   not report one, and a bulk transfer has none.
//! - A spurious congestion event restores max(cwnd, cwnd before the reduction) and the
//!   previous ssthresh if larger (`tcp_reno_undo_cwnd`, `tcp_undo_cwnd_reduction`).

use super::{
    max_window_bytes, AckBatch, CcMetrics, CongestionController, CongestionEvent, ControllerInit,
    Detection, Reduction, SentPacket,
};
use crate::tcp::rtt::RttEstimator;
use crate::time::SimTime;

/// `tcp_cubic.c` `beta = 717`, in 1024ths (≈ 0.7).
pub const DEFAULT_BETA_PER_1024: u64 = 717;
/// `tcp_cubic.c` `bic_scale = 41`: C = 41/1024 · 10 ≈ 0.4 segments/s³.
pub const DEFAULT_BIC_SCALE: u64 = 41;
/// `CONFIG_HZ` of the kernels farlink is compared with (module notes).
pub const DEFAULT_HZ: u64 = 250;
/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u64 = 1024;
/// `BICTCP_HZ`: the cubic curve's time unit is 2^-10 s.
const BICTCP_HZ_SHIFT: u32 = 10;
/// `bictcp_update`: with no W_max, "increase cwnd 5% per RTT" at least.
const NO_W_MAX_MAX_CNT: u64 = 20;
/// `bictcp_update`: below the curve's target, `cnt = 100·cwnd` ("very small increment").
const PLATEAU_CNT_PER_SEGMENT: u64 = 100;
/// `bictcp_update`: "The maximum rate of cwnd increase CUBIC allows is 1 packet per 2
/// packets ACKed".
const MIN_CNT: u64 = 2;
/// `cubictcp_recalc_ssthresh`: `max(..., 2U)`.
const MIN_SSTHRESH_SEGMENTS: u64 = 2;
/// RFC 5681 3.1, and the kernel's cwnd after a timeout with nothing in flight.
const LOSS_WINDOW_SEGMENTS: u64 = 1;
/// `hystart_low_window = 16`.
const HYSTART_LOW_WINDOW_SEGMENTS: u64 = 16;
/// `hystart_ack_delta_us = 2000`: ACKs closer than this form a train.
const HYSTART_ACK_DELTA_US: u64 = 2000;
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`: the delay test's threshold bounds.
const HYSTART_DELAY_MIN_US: u64 = 4000;
const HYSTART_DELAY_MAX_US: u64 = 16000;
/// `hystart_ack_delay`: the allowance for send offload is at most 1 ms, and is the time
/// four 64 KB super-segments (`GSO_LEGACY_MAX_SIZE`) take at the pacing rate.
const HYSTART_ACK_DELAY_MAX_US: u64 = 1000;
const GSO_MAX_SIZE_BYTES: u64 = 65536;
/// `tcp_update_pacing_rate`: in slow start the pacing rate is twice cwnd per SRTT.
const SLOW_START_PACING_RATIO: u64 = 2;
/// The cubic curve's |t − K| is bounded here, 2^-10 s (two years).
const MAX_CURVE_OFFSET: u64 = 1 << 36;
/// The kernel's ssthresh before any loss, `TCP_INFINITE_SSTHRESH`.
const INFINITE_SSTHRESH_SEGMENTS: u64 = 0x7fff_ffff;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicLinuxConfig {
    /// β in 1024ths.
    pub beta_per_1024: u64,
    /// C in 1024ths of a tenth: 41 → C ≈ 0.4.
    pub bic_scale: u64,
    /// The kernel's timer frequency, jiffies per second.
    pub hz: u64,
    pub fast_convergence: bool,
    /// The Reno-friendly estimate (`tcp_friendliness = 1`).
    pub tcp_friendliness: bool,
    /// HyStart (`hystart = 1`, both detections).
    pub hystart: bool,
}

impl Default for CubicLinuxConfig {
    /// The module's defaults (`/sys/module/tcp_cubic/parameters`): β = 717, bic_scale = 41,
    /// fast convergence, Reno-friendliness and HyStart on; HZ = 250.
    fn default() -> Self {
        CubicLinuxConfig {
            beta_per_1024: DEFAULT_BETA_PER_1024,
            bic_scale: DEFAULT_BIC_SCALE,
            hz: DEFAULT_HZ,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
        }
    }
}

/// HyStart's state for the current round (`struct bictcp`'s last six fields).
#[derive(Clone, Copy, Debug, Default)]
struct HyStart {
    found: bool,
    round_start_us: u64,
    last_ack_us: u64,
    /// The round ends when SND.UNA passes this (SND.NXT when it began).
    end_seq: u64,
    /// The least RTT sample of the round, µs.
    curr_rtt_us: Option<u64>,
    sample_cnt: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Saved {
    cwnd: u64,
    ssthresh: u64,
}

#[derive(Clone, Debug)]
pub struct CubicLinux {
    config: CubicLinuxConfig,
    /// `8(1024 + β)/3/(1024 − β)`: ACKs per Reno-friendly segment are `cwnd·beta_scale/8`.
    beta_scale: u64,
    /// `2^40 / (bic_scale·10)`: K³ in (2^-10 s)³ per segment below W_max.
    cube_factor: u64,
    smss_bytes: u64,
    /// Segments, as the kernel's `snd_cwnd`.
    cwnd: u64,
    /// Segments acknowledged towards the next increase (`snd_cwnd_cnt`).
    cwnd_cnt: u64,
    ssthresh: u64,
    /// Segments acknowledged per one-segment increase.
    cnt: u64,
    /// W_max, segments; 0 before any loss and after a timeout.
    last_max_cwnd: u64,
    /// cwnd and the jiffy when `cnt` was last computed.
    last_cwnd: u64,
    last_time_jiffies: u64,
    origin_point: u64,
    /// K, in 2^-10 s.
    k: u64,
    /// The least RTT, µs; 0 until measured (and after a timeout).
    delay_min_us: u64,
    epoch_start_jiffies: Option<u64>,
    /// Segments acknowledged since the Reno-friendly estimate last grew.
    ack_cnt: u64,
    /// The Reno-friendly estimate, segments.
    tcp_cwnd: u64,
    hystart: HyStart,
    snd_una: u64,
    snd_nxt: u64,
    prior: Option<Saved>,
}

impl CubicLinux {
    pub fn new(config: &CubicLinuxConfig, init: &ControllerInit) -> Self {
        let d = CubicLinuxConfig::default();
        let config = CubicLinuxConfig {
            beta_per_1024: if config.beta_per_1024 > 0 && config.beta_per_1024 < BETA_SCALE {
                config.beta_per_1024
            } else {
                d.beta_per_1024
            },
            bic_scale: config.bic_scale.max(1),
            hz: config.hz.max(1),
            ..*config
        };
        let smss_bytes = init.smss_bytes.max(1);
        let beta = config.beta_per_1024;
        let mut cc = CubicLinux {
            config,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ_SHIFT)) / (config.bic_scale * 10),
            smss_bytes,
            cwnd: (init.initial_window_bytes / smss_bytes).clamp(1, Self::max_cwnd(smss_bytes)),
            cwnd_cnt: 0,
            ssthresh: INFINITE_SSTHRESH_SEGMENTS,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time_jiffies: 0,
            origin_point: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start_jiffies: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            hystart: HyStart::default(),
            snd_una: 0,
            snd_nxt: 0,
            prior: None,
        };
        cc.hystart_reset(0);
        cc
    }

    fn max_cwnd(smss_bytes: u64) -> u64 {
        max_window_bytes(smss_bytes) / smss_bytes
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh.saturating_mul(self.smss_bytes)
    }
    /// W_max in segments, `None` before any loss and after a timeout.
    pub fn w_max_segments(&self) -> Option<u64> {
        (self.last_max_cwnd > 0).then_some(self.last_max_cwnd)
    }
    /// Segments acknowledged per one-segment increase, as last computed.
    pub fn acks_per_increase(&self) -> u64 {
        self.cnt
    }
    /// The Reno-friendly estimate, segments.
    pub fn reno_estimate_segments(&self) -> u64 {
        self.tcp_cwnd
    }
    /// K of the current epoch, seconds.
    pub fn k_seconds(&self) -> f64 {
        self.k as f64 / (1u64 << BICTCP_HZ_SHIFT) as f64
    }
    /// HyStart ended slow start.
    pub fn hystart_found(&self) -> bool {
        self.hystart.found
    }

    fn jiffies(&self, now: SimTime) -> u64 {
        // Jiffies since the run began; only differences are used.
        (now.as_nanos() as u128 * self.config.hz as u128 / 1_000_000_000) as u64
    }

    /// `usecs_to_jiffies`: rounded up.
    fn usecs_to_jiffies(&self, us: u64) -> u64 {
        (us * self.config.hz).div_ceil(1_000_000)
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `bictcp_reset`: the Loss state forgets everything the module keeps.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time_jiffies = 0;
        self.origin_point = 0;
        self.k = 0;
        self.delay_min_us = 0;
        self.epoch_start_jiffies = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.hystart.found = false;
    }

    /// `bictcp_hystart_reset`: a new round begins now and ends at SND.NXT.
    fn hystart_reset(&mut self, now_us: u64) {
        self.hystart.round_start_us = now_us;
        self.hystart.last_ack_us = now_us;
        self.hystart.end_seq = self.snd_nxt;
        self.hystart.curr_rtt_us = None;
        self.hystart.sample_cnt = 0;
    }

    /// `cubictcp_acked`: the least delay, and HyStart while in slow start.
    fn on_delay_sample(&mut self, now: SimTime, delay_us: u64, rtt: &RttEstimator) {
        // "Discard delay samples right after fast recovery": for a second after an epoch began.
        if let Some(start) = self.epoch_start_jiffies {
            if self.jiffies(now).saturating_sub(start) < self.config.hz {
                return;
            }
        }
        let delay = delay_us.max(1);
        if self.delay_min_us == 0 || self.delay_min_us > delay {
            self.delay_min_us = delay;
        }
        if !self.hystart.found && self.in_slow_start() && self.config.hystart {
            self.hystart_update(now.as_nanos() / 1000, delay, rtt);
        }
    }

    /// `hystart_ack_delay`: four 64 KB super-segments at the slow-start pacing rate, at most 1 ms.
    fn hystart_ack_delay_us(&self, rtt: &RttEstimator) -> u64 {
        let srtt_us = rtt.srtt().map_or(0, |d| d.as_nanos() / 1000);
        if srtt_us == 0 {
            return 0;
        }
        // bytes per second: cwnd·MSS per SRTT, doubled in slow start.
        let rate = (self.cwnd * self.smss_bytes)
            .saturating_mul(SLOW_START_PACING_RATIO)
            .saturating_mul(1_000_000)
            / srtt_us;
        if rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE_BYTES * 4 * 1_000_000 / rate).min(HYSTART_ACK_DELAY_MAX_US)
    }

    fn hystart_update(&mut self, now_us: u64, delay: u64, rtt: &RttEstimator) {
        if self.snd_una > self.hystart.end_seq {
            self.hystart_reset(now_us);
        }
        if self.cwnd < HYSTART_LOW_WINDOW_SEGMENTS {
            return;
        }
        // The ACK train: ACKs each within 2 ms of the last, spanning more than half the least
        // delay (the kernel's halving for a sender that does not pace).
        if now_us.saturating_sub(self.hystart.last_ack_us) <= HYSTART_ACK_DELTA_US {
            self.hystart.last_ack_us = now_us;
            let threshold = (self.delay_min_us + self.hystart_ack_delay_us(rtt)) >> 1;
            if now_us.saturating_sub(self.hystart.round_start_us) > threshold {
                self.hystart.found = true;
                self.ssthresh = self.cwnd;
            }
        }
        // The delay increase: the least of the round's first samples against the least delay.
        let curr = self.hystart.curr_rtt_us.map_or(delay, |c| c.min(delay));
        self.hystart.curr_rtt_us = Some(curr);
        if self.hystart.sample_cnt < HYSTART_MIN_SAMPLES {
            self.hystart.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
            if curr > self.delay_min_us + thresh {
                self.hystart.found = true;
                self.ssthresh = self.cwnd;
            }
        }
    }

    /// `bictcp_update`: `cnt` for a window of `cwnd` segments, `acked` segments just counted.
    fn update_cnt(&mut self, now: SimTime, acked: u64) {
        let cwnd = self.cwnd;
        let jiffies = self.jiffies(now);
        self.ack_cnt = self.ack_cnt.saturating_add(acked);
        // The kernel keeps cnt while cwnd is unchanged, for HZ/32 jiffies (module notes).
        if self.last_cwnd == cwnd
            && jiffies.saturating_sub(self.last_time_jiffies) <= self.config.hz / 32
        {
            return;
        }
        // At most once a jiffy from the cubic curve; the Reno-friendly bound every time.
        if !(self.epoch_start_jiffies.is_some() && jiffies == self.last_time_jiffies) {
            self.last_cwnd = cwnd;
            self.last_time_jiffies = jiffies;
            let epoch_start = match self.epoch_start_jiffies {
                Some(s) => s,
                None => {
                    self.epoch_start_jiffies = Some(jiffies);
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.k = 0;
                        self.origin_point = cwnd;
                    } else {
                        self.k = icbrt(self.cube_factor * (self.last_max_cwnd - cwnd));
                        self.origin_point = self.last_max_cwnd;
                    }
                    jiffies
                }
            };
            // The curve's time, 2^-10 s: since the epoch began, plus the least RTT.
            let t_jiffies = jiffies - epoch_start + self.usecs_to_jiffies(self.delay_min_us);
            let t = (t_jiffies << BICTCP_HZ_SHIFT) / self.config.hz;
            // Bounded at 2^36 (two years) so that the cube cannot overflow.
            let offs = t.abs_diff(self.k).min(MAX_CURVE_OFFSET);
            // C·(t − K)³ in segments: bic_scale·10 / 2^40 per (2^-10 s)³.
            let delta = u64::try_from(
                ((self.config.bic_scale * 10) as u128 * (offs as u128).pow(3))
                    >> (10 + 3 * BICTCP_HZ_SHIFT),
            )
            .unwrap_or(u64::MAX);
            let target = if t < self.k {
                self.origin_point.saturating_sub(delta)
            } else {
                self.origin_point.saturating_add(delta)
            };
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                PLATEAU_CNT_PER_SEGMENT * cwnd
            };
            if self.last_max_cwnd == 0 {
                self.cnt = self.cnt.min(NO_W_MAX_MAX_CNT);
            }
        }
        if self.config.tcp_friendliness {
            // One segment of the Reno-friendly estimate per cwnd·beta_scale/8 acknowledged.
            let per_segment = ((cwnd * self.beta_scale) >> 3).max(1);
            if self.ack_cnt > per_segment {
                let grown = (self.ack_cnt - 1) / per_segment;
                self.ack_cnt -= grown * per_segment;
                self.tcp_cwnd += grown;
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }
        self.cnt = self.cnt.max(MIN_CNT);
    }

    /// `tcp_cong_avoid_ai`: one segment per `cnt` acknowledged.
    fn additive_increase(&mut self, acked: u64) {
        let w = self.cnt.max(1);
        // Credit gathered under a smaller cnt is applied gently: one segment.
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt = self.cwnd_cnt.saturating_add(acked);
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd = self.cwnd.saturating_add(delta);
        }
        self.cwnd = self.cwnd.min(Self::max_cwnd(self.smss_bytes));
    }

    /// The delay sample the kernel gives the module: the newest segment this ACK newly
    /// covers that was sent once, else the sender's RTT sample.
    fn delay_sample_us(now: SimTime, batch: &AckBatch<'_>) -> Option<u64> {
        batch
            .acked
            .iter()
            .filter(|a| !a.retransmitted && !a.was_sacked)
            .map(|a| a.sent_time)
            .max()
            .map(|sent| now.saturating_since(sent).as_nanos() / 1000)
            .or_else(|| batch.rtt_sample.map(|d| d.as_nanos() / 1000))
    }
}

/// ⌊∛a⌋.
fn icbrt(a: u64) -> u64 {
    if a == 0 {
        return 0;
    }
    let mut x = libm::cbrt(a as f64) as u64;
    // Correct the float's estimate to the exact floor.
    while (x as u128 + 1).pow(3) <= a as u128 {
        x += 1;
    }
    while (x as u128).pow(3) > a as u128 {
        x -= 1;
    }
    x
}

impl CongestionController for CubicLinux {
    fn name(&self) -> &'static str {
        "cubic-linux"
    }

    fn on_packet_sent(&mut self, _now: SimTime, sent: &SentPacket, _in_flight_bytes: u64) {
        self.snd_nxt = self.snd_nxt.max(sent.seq + sent.bytes);
    }

    fn on_ack_batch(&mut self, now: SimTime, batch: &AckBatch<'_>, rtt: &RttEstimator) {
        if let Some(end) = batch.acked.iter().map(|a| a.end_seq).max() {
            self.snd_una = self.snd_una.max(end);
        }
        if batch.newly_acked_bytes == 0 && batch.newly_sacked_bytes == 0 {
            return;
        }
        if let Some(delay) = Self::delay_sample_us(now, batch) {
            self.on_delay_sample(now, delay, rtt);
        }
        // No growth while the window comes down (the kernel's CWR and Recovery states).
        if batch.in_recovery {
            return;
        }
        let smss = self.smss_bytes;
        // `tcp_is_cwnd_limited` (module notes).
        let cwnd_bytes = self.cwnd * smss;
        let limited = if self.in_slow_start() {
            cwnd_bytes < batch.prior_in_flight_bytes.saturating_mul(2)
        } else {
            batch.prior_in_flight_bytes.saturating_add(smss) > cwnd_bytes
        };
        if !limited {
            return;
        }
        // The kernel counts segments (packets) delivered, cumulatively or by SACK.
        let mut acked = batch.newly_delivered_bytes().div_ceil(smss);
        if acked == 0 {
            return;
        }
        if self.in_slow_start() {
            // `tcp_slow_start`: up to ssthresh; what is left grows the window as below.
            let grown = self.cwnd.saturating_add(acked).min(self.ssthresh);
            acked -= grown - self.cwnd;
            self.cwnd = grown.min(Self::max_cwnd(smss));
            if acked == 0 {
                return;
            }
        }
        self.update_cnt(now, acked);
        self.additive_increase(acked);
    }

    fn on_congestion_event(&mut self, now: SimTime, event: &CongestionEvent) -> Reduction {
        let timeout = event.detection == Detection::RetransmissionTimeout;
        // The kernel recomputes ssthresh unless a timeout repeats, or ends a fast recovery
        // whose reduction was already made.
        let recompute = !(timeout && (event.repeated_timeout || event.during_fast_recovery));
        if recompute {
            self.prior = Some(Saved {
                cwnd: self.cwnd,
                ssthresh: self.ssthresh,
            });
            // `cubictcp_recalc_ssthresh`.
            self.epoch_start_jiffies = None;
            let cwnd = self.cwnd;
            let beta = self.config.beta_per_1024;
            self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.config.fast_convergence {
                cwnd * (BETA_SCALE + beta) / (2 * BETA_SCALE)
            } else {
                cwnd
            };
            self.ssthresh = (cwnd * beta / BETA_SCALE).max(MIN_SSTHRESH_SEGMENTS);
        }
        self.cwnd_cnt = 0;
        if timeout {
            // The Loss state: from the loss window, the module and HyStart reset.
            self.reset();
            self.hystart_reset(now.as_nanos() / 1000);
        }
        self.cwnd = if event.restart_slow_start {
            LOSS_WINDOW_SEGMENTS
        } else {
            self.ssthresh
        };
        Reduction {
            ssthresh_bytes: self.ssthresh_bytes(),
            cwnd_bytes: self.window(),
        }
    }

    fn on_spurious_congestion(&mut self, _now: SimTime) {
        if let Some(p) = self.prior.take() {
            self.cwnd = self.cwnd.max(p.cwnd);
            self.ssthresh = self.ssthresh.max(p.ssthresh);
        }
    }

    fn window(&self) -> u64 {
        self.cwnd.max(1) * self.smss_bytes
    }

    fn metrics(&self) -> CcMetrics {
        CcMetrics::new(self.window(), self.ssthresh_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{self, estimator};
    use super::*;
    use crate::time::SimDuration;

    const SMSS: u64 = 1000;

    fn cubic(iw_segments: u64) -> CubicLinux {
        CubicLinux::new(
            &CubicLinuxConfig::default(),
            &ControllerInit {
                smss_bytes: SMSS,
                initial_window_bytes: iw_segments * SMSS,
            },
        )
    }

    fn segments(cc: &CubicLinux) -> u64 {
        cc.window() / SMSS
    }

    /// One ACK of one segment with the window full.
    fn ack(cc: &mut CubicLinux, now: SimTime) {
        let batch = test_support::plain_ack(SMSS, cc.window(), false, SMSS);
        cc.on_ack_batch(now, &batch, &estimator(SimDuration::from_micros(20)));
    }

    fn event(detection: Detection, flight_segments: u64) -> CongestionEvent {
        test_support::congestion_event(detection, flight_segments, SMSS)
    }

    #[test]
    fn constants_are_the_modules() {
        let cc = cubic(10);
        assert_eq!(cc.beta_scale, 15);
        assert_eq!(cc.cube_factor, (1u64 << 40) / 410);
        assert_eq!(icbrt(26), 2);
        assert_eq!(icbrt(27), 3);
        assert_eq!(icbrt(u64::MAX), 2_642_245);
    }

    #[test]
    fn reduction_is_from_cwnd_with_fast_convergence() {
        let mut cc = cubic(100);
        // FlightSize is not what the kernel reduces from.
        let r = cc.on_congestion_event(SimTime::ZERO, &event(Detection::Sack, 40));
        assert_eq!(r.ssthresh_bytes, 100 * 717 / 1024 * SMSS);
        assert_eq!(r.cwnd_bytes, r.ssthresh_bytes);
        assert_eq!(cc.w_max_segments(), Some(100));
        // Below the previous W_max: fast convergence lowers it.
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::Sack, 40));
        assert_eq!(cc.w_max_segments(), Some(70 * (1024 + 717) / 2048));
        // Never below two segments.
        let mut small = cubic(2);
        let r = small.on_congestion_event(SimTime::ZERO, &event(Detection::Sack, 2));
        assert_eq!(r.ssthresh_bytes, 2 * SMSS);
    }

    /// The behaviour that sets Linux's CUBIC apart on a short path: after a timeout, with no
    /// W_max, a window of 2 grows by one segment per 20 ACKs for HZ/32 jiffies (28 ms), however
    /// many round trips fit in them.
    #[test]
    fn cnt_is_held_for_hz_over_32_while_cwnd_is_unchanged() {
        let mut cc = cubic(4);
        let t0 = SimTime::from_nanos(1_000_000_000);
        let r = cc.on_congestion_event(t0, &event(Detection::RetransmissionTimeout, 4));
        assert_eq!(r.cwnd_bytes, SMSS);
        assert_eq!(cc.ssthresh_bytes(), 2 * SMSS);
        assert_eq!(cc.w_max_segments(), None, "the Loss state forgets W_max");
        // A 20 µs round trip: one ACK per segment, every 10 µs.
        let mut now = t0;
        let mut acks_at_two = 0;
        for _ in 0..60 {
            now += SimDuration::from_micros(10);
            let before = segments(&cc);
            ack(&mut cc, now);
            if before == 2 && segments(&cc) == 2 {
                acks_at_two += 1;
            }
            if segments(&cc) == 3 {
                break;
            }
        }
        // Slow start 1 → 2 takes one ACK; then cnt = 20 holds for 20 more (less one, the
        // first ACK in congestion avoidance counts toward it).
        assert_eq!(segments(&cc), 3);
        assert!(
            (18..=20).contains(&acks_at_two),
            "{acks_at_two} ACKs at cwnd 2"
        );
        assert_eq!(cc.acks_per_increase(), 20);
    }

    #[test]
    fn once_cwnd_moves_the_reno_friendly_estimate_lowers_cnt() {
        let mut cc = cubic(4);
        let t0 = SimTime::from_nanos(1_000_000_000);
        cc.on_congestion_event(t0, &event(Detection::RetransmissionTimeout, 4));
        let mut now = t0;
        while segments(&cc) < 3 {
            now += SimDuration::from_micros(10);
            ack(&mut cc, now);
        }
        // The next ACK finds cwnd changed and computes cnt again (within the same jiffy, the
        // Reno-friendly bound only): the estimate, one segment per 2·15/8 = 3 ACKs since the
        // epoch began, is far above 3 segments, so cnt falls to its floor of 2.
        now += SimDuration::from_micros(10);
        ack(&mut cc, now);
        assert!(
            cc.reno_estimate_segments() >= 6,
            "{}",
            cc.reno_estimate_segments()
        );
        assert_eq!(cc.acks_per_increase(), MIN_CNT);
    }

    #[test]
    fn a_long_round_trip_grows_as_the_cubic_curve() {
        // 100 ms round trips: cnt is recomputed every round trip, so growth follows the curve
        // (concave towards W_max = 100, reaching it at K ≈ ∛(30/0.4) ≈ 4.2 s).
        let mut cc = cubic(100);
        let rtt = SimDuration::from_millis(100);
        let mut now = SimTime::from_nanos(10_000_000_000);
        cc.on_congestion_event(now, &event(Detection::Sack, 100));
        assert_eq!(segments(&cc), 70);
        let mut at = Vec::new();
        for _ in 0..60 {
            let n = segments(&cc);
            let start = now;
            for i in 1..=n {
                now = start + SimDuration::from_nanos(rtt.as_nanos() * i / n);
                ack(&mut cc, now);
            }
            at.push(segments(&cc));
        }
        assert!(
            (4.0..4.4).contains(&cc.k_seconds()),
            "K = {}",
            cc.k_seconds()
        );
        // Concave: fast at first, slow near W_max, at W_max by ~4.2 s (42 round trips).
        assert!(at[9] - at[0] > at[39] - at[30], "{at:?}");
        assert!((97..=101).contains(&at[41]), "{at:?}");
    }

    #[test]
    fn hystart_ends_slow_start_on_a_delay_increase() {
        let mut cc = cubic(10);
        let est = estimator(SimDuration::from_millis(20));
        let mut now = SimTime::from_nanos(1_000_000);
        let mut seq = 0;
        // Round trips of 20 ms, then a queue: 30 ms (above 20 + max(20/8, 4) = 24 ms).
        for round in 0..6 {
            let rtt = SimDuration::from_millis(if round < 3 { 20 } else { 30 });
            let n = segments(&cc);
            for _ in 0..n {
                cc.on_packet_sent(
                    now,
                    &SentPacket {
                        seq,
                        bytes: SMSS,
                        retransmission: false,
                    },
                    0,
                );
                seq += SMSS;
            }
            let sent_at = now;
            for i in 0..n {
                // ACKs spread over the round so that no ACK train forms.
                now = sent_at + rtt + SimDuration::from_micros(2500 * i);
                let acked = [super::super::Acked {
                    end_seq: seq - (n - 1 - i) * SMSS,
                    bytes: SMSS,
                    sent_time: sent_at,
                    retransmitted: false,
                    was_sacked: false,
                }];
                let mut batch = test_support::plain_ack(SMSS, cc.window(), false, SMSS);
                batch.acked = &acked;
                cc.on_ack_batch(now, &batch, &est);
            }
            if cc.hystart_found() {
                assert_eq!(round, 3, "found in the first round with the queue");
                // Slow start ended inside the round: the window did not double.
                assert!(!cc.in_slow_start());
                assert!(cc.window() < 2 * n * SMSS, "{} after {n}", segments(&cc));
                return;
            }
        }
        panic!("HyStart never ended slow start; cwnd {}", segments(&cc));
    }

    /// After a timeout the holes are resent and each cumulative ACK then covers segments the
    /// receiver had already SACKed: the kernel counted those when they were SACKed
    /// (`tcp_newly_delivered`), so slow start grows by the segments newly delivered, not by all
    /// the cumulative ACK covers. Counted twice, the window left slow start at once and grew
    /// far past the path (a CoDel bottleneck then held in its dropping state, tests/aqm.rs).
    #[test]
    fn segments_sacked_before_the_cumulative_ack_count_once() {
        let mut cc = cubic(40);
        let t0 = SimTime::from_nanos(1_000_000_000);
        cc.on_congestion_event(t0, &event(Detection::RetransmissionTimeout, 40));
        assert_eq!((segments(&cc), cc.ssthresh_bytes() / SMSS), (1, 28));
        let est = estimator(SimDuration::from_millis(100));
        // The receiver SACKs 5 segments beyond the hole: 5 delivered.
        let mut batch = test_support::plain_ack(0, 2 * SMSS, false, SMSS);
        batch.newly_sacked_bytes = 5 * SMSS;
        cc.on_ack_batch(t0 + SimDuration::from_millis(100), &batch, &est);
        assert_eq!(segments(&cc), 6);
        // The resent hole arrives: the cumulative ACK covers it and the 5 SACKed before, one
        // segment newly delivered.
        let acked: Vec<super::super::Acked> = (0..6)
            .map(|i| super::super::Acked {
                end_seq: (i + 1) * SMSS,
                bytes: SMSS,
                sent_time: t0,
                retransmitted: i == 0,
                was_sacked: i > 0,
            })
            .collect();
        let mut batch = test_support::plain_ack(6 * SMSS, 6 * SMSS, false, SMSS);
        batch.acked = &acked;
        cc.on_ack_batch(t0 + SimDuration::from_millis(200), &batch, &est);
        assert_eq!(segments(&cc), 7);
        assert!(cc.in_slow_start());
    }

    #[test]
    fn timeout_in_fast_recovery_keeps_its_ssthresh() {
        let mut cc = cubic(100);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::Sack, 100));
        let ssthresh = cc.ssthresh_bytes();
        let mut e = event(Detection::RetransmissionTimeout, 70);
        e.during_fast_recovery = true;
        let r = cc.on_congestion_event(SimTime::ZERO, &e);
        assert_eq!(r.ssthresh_bytes, ssthresh);
        assert_eq!(r.cwnd_bytes, SMSS);
    }

    #[test]
    fn no_growth_in_recovery_or_when_not_window_limited() {
        let mut cc = cubic(10);
        let est = estimator(SimDuration::from_millis(20));
        let rec = test_support::plain_ack(SMSS, 10 * SMSS, true, SMSS);
        cc.on_ack_batch(SimTime::ZERO, &rec, &est);
        assert_eq!(segments(&cc), 10);
        let idle = test_support::plain_ack(SMSS, 2 * SMSS, false, SMSS);
        cc.on_ack_batch(SimTime::ZERO, &idle, &est);
        assert_eq!(segments(&cc), 10);
        let full = test_support::plain_ack(SMSS, 10 * SMSS, false, SMSS);
        cc.on_ack_batch(SimTime::ZERO, &full, &est);
        assert_eq!(
            segments(&cc),
            11,
            "slow start: one segment per segment acknowledged"
        );
    }

    #[test]
    fn spurious_congestion_undoes_the_reduction() {
        let mut cc = cubic(40);
        cc.on_congestion_event(SimTime::ZERO, &event(Detection::Sack, 40));
        cc.on_spurious_congestion(SimTime::ZERO);
        assert_eq!(segments(&cc), 40);
    }
}
