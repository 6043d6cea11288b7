//! A class of short TCP flows (`flows_poisson`): connections arriving as a Poisson process,
//! each of a drawn size, each its own TCP connection with its handshake over the flow's route.
//!
//! The whole class is planned when the run is built ([`plan`]): arrival instants from the
//! stream `flow:<name>:arrivals` (exponential gaps, the first one from the flow's start),
//! sizes from `flow:<name>:sizes`, one draw per arrival. Two streams, so the sequence of sizes
//! is the same whatever the arrival rate, and an engine that replays the class (the emulator)
//! can draw the same plan from the seed.
//!
//! Slowdown: a connection's completion time over [`unloaded_fct_s`], the closed-form time of
//! the same transfer alone on the route (see there).

use super::draw;
use super::metrics::{FctSummary, Percentiles, SizeBucket, TrafficSummary};
use crate::rng::StreamRng;
use crate::scenario::{AppSpec, Arrivals, PoissonSpec, Scenario};
use crate::tcp::segment::{IPV4_HEADER_BYTES, TCP_HEADER_BYTES};
use crate::time::SimTime;

/// One connection of a class: when it arrives and how many bytes it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub at: SimTime,
    pub size_bytes: u64,
}

/// Connections per second: the rate given, or the load's (a fraction of the route's
/// bottleneck carried as payload: `load x bottleneck_bps / (8 x mean size)`).
pub fn arrival_rate_per_s(c: &PoissonSpec, bottleneck_bps: u64) -> f64 {
    match c.arrivals {
        Arrivals::PerSecond(r) => r,
        Arrivals::Load(l) => l * bottleneck_bps as f64 / (8.0 * c.size.mean_bytes()),
    }
}

/// The class's arrivals in `[start, end)` (see the module docs).
pub fn plan(
    c: &PoissonSpec,
    name: &str,
    seed: u64,
    start: SimTime,
    end: SimTime,
    bottleneck_bps: u64,
) -> Vec<Arrival> {
    let per_s = arrival_rate_per_s(c, bottleneck_bps);
    let mut arrivals_rng = StreamRng::derive(seed, &format!("flow:{name}:arrivals"));
    let mut sizes_rng = StreamRng::derive(seed, &format!("flow:{name}:sizes"));
    let mean_gap_ns = 1e9 / per_s;
    let mut out = Vec::new();
    let mut t = start.as_nanos();
    loop {
        let gap = libm::round(arrivals_rng.exponential(mean_gap_ns)) as u64;
        t = t.saturating_add(gap);
        if t >= end.as_nanos() {
            return out;
        }
        out.push(Arrival {
            at: SimTime::from_nanos(t),
            size_bytes: draw::size_bytes(&mut sizes_rng, &c.size),
        });
    }
}

/// The arrivals of scenario flow `i` if it is a short-flow class: in `[start, end)`, the end
/// its stop or the run's, at the rate its route's bottleneck gives a `load`. The engine runs
/// this plan; an engine replaying the class draws it here too.
pub fn plan_of(sc: &Scenario, i: usize) -> Option<Vec<Arrival>> {
    let f = sc.flows().get(i)?;
    let AppSpec::FlowsPoisson(c) = &f.app else {
        return None;
    };
    let run_end = SimTime::ZERO + sc.duration();
    let end = f.stop.map_or(run_end, |s| s.min(run_end));
    let bottleneck_bps = crate::world::flow_bottleneck_bps(sc, &f.path);
    Some(plan(c, &f.name, sc.seed(), f.start, end, bottleneck_bps))
}

/// What the closed-form unloaded completion time needs of a route.
#[derive(Clone, Copy, Debug)]
pub struct UnloadedPath {
    /// Propagation delay there and back, seconds.
    pub propagation_rtt_s: f64,
    pub bottleneck_bps: u64,
    /// Sum over the data path of `8 / rate` (seconds per byte, store and forward), and over
    /// the ACK path.
    pub data_s_per_byte: f64,
    pub ack_s_per_byte: f64,
    pub mss_bytes: u32,
    pub initial_window_segments: u32,
    /// The most the receiver's window lets in flight, bytes.
    pub receive_window_bytes: u64,
}

/// The completion time of a `size_bytes` transfer alone on the route, from the SYN to the
/// last byte at the receiver, in closed form:
///
/// - the handshake: SYN and SYN-ACK, one propagation round trip and the two 40-byte packets'
///   serialisations;
/// - slow start without loss: rounds of `w` segments from the initial window, doubling each
///   round (one ACK per segment; a delayed-ACK receiver makes the real growth slower),
///   capped by the receive window; a round lasts one round trip of a full segment and its
///   ACK (`R`) unless its segments take longer than that to serialise at the bottleneck,
///   from which point the window no longer limits and the rest streams at the bottleneck's
///   rate;
/// - the last round: its bytes (headers included) serialised at the bottleneck, the first
///   segment's store-and-forward over the other hops, and the one-way propagation.
///
/// It is a lower bound of what TCP achieves alone (an ideal sender), not a simulated run:
/// slowdowns are at least about 1, and above 1 alone by what delayed ACKs and the model's
/// idealisations leave out.
pub fn unloaded_fct_s(size_bytes: u64, p: &UnloadedPath) -> f64 {
    let hdr = f64::from(IPV4_HEADER_BYTES + TCP_HEADER_BYTES);
    let mss = f64::from(p.mss_bytes.max(1));
    let c_bps = p.bottleneck_bps.max(1) as f64;
    let one_way_s = p.propagation_rtt_s / 2.0;
    let handshake_s = p.propagation_rtt_s + hdr * (p.data_s_per_byte + p.ack_s_per_byte);
    let round_s = p.propagation_rtt_s + (mss + hdr) * p.data_s_per_byte + hdr * p.ack_s_per_byte;
    let max_w = ((p.receive_window_bytes as f64 / mss).floor()).max(1.0);
    let mut w = f64::from(p.initial_window_segments.max(1)).min(max_w);
    let mut left = size_bytes as f64;
    let mut t = handshake_s;
    loop {
        let round_bytes = (w * mss).min(left);
        let round_segments = (round_bytes / mss).ceil();
        let serial_s = (round_bytes + round_segments * hdr) * 8.0 / c_bps;
        let pipe_full = serial_s >= round_s;
        if round_bytes >= left || pipe_full {
            // The rest leaves back to back: its bytes at the bottleneck, the first
            // segment's way through the other hops, the propagation.
            let segments = (left / mss).ceil();
            let rest_s = (left + segments * hdr) * 8.0 / c_bps;
            let first_s = (mss.min(left) + hdr) * p.data_s_per_byte;
            let through_s = (first_s - (mss.min(left) + hdr) * 8.0 / c_bps).max(0.0);
            return t + rest_s + through_s + one_way_s;
        }
        left -= round_bytes;
        t += round_s;
        w = (w * 2.0).min(max_w);
    }
}

/// The size buckets' lower bounds, bytes: below 10 kB, to 100 kB, to 1 MB, to 10 MB, above.
pub const SIZE_BUCKET_BYTES: [u64; 5] = [0, 10_000, 100_000, 1_000_000, 10_000_000];

/// One finished or unfinished connection of a class, as the summary reads it.
#[derive(Clone, Copy, Debug)]
pub struct Completed {
    pub size_bytes: u64,
    /// Completion time, seconds; `None` if it had not finished when the run ended.
    pub fct_s: Option<f64>,
}

/// The class's traffic figures.
pub fn summarize(conns: &[Completed], path: &UnloadedPath) -> TrafficSummary {
    let finished: Vec<(u64, f64)> = conns
        .iter()
        .filter_map(|c| c.fct_s.map(|t| (c.size_bytes, t)))
        .collect();
    let slowdown = |(size, fct): &(u64, f64)| fct / unloaded_fct_s(*size, path);
    let stats = |rows: &[(u64, f64)]| {
        let mut fct: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let mut slow: Vec<f64> = rows.iter().map(slowdown).collect();
        (Percentiles::of(&mut fct), Percentiles::of(&mut slow))
    };
    let (fct, slow) = stats(&finished);
    let mut by_size = Vec::new();
    for (i, &lo) in SIZE_BUCKET_BYTES.iter().enumerate() {
        let hi = SIZE_BUCKET_BYTES.get(i + 1).copied();
        let inside = |s: u64| s >= lo && hi.is_none_or(|h| s < h);
        let flows = conns.iter().filter(|c| inside(c.size_bytes)).count() as u64;
        if flows == 0 {
            continue;
        }
        let rows: Vec<(u64, f64)> = finished.iter().copied().filter(|r| inside(r.0)).collect();
        let (fct_s, slowdown) = stats(&rows);
        by_size.push(SizeBucket {
            min_bytes: lo,
            max_bytes: hi,
            flows,
            finished: rows.len() as u64,
            fct_s,
            slowdown,
        });
    }
    TrafficSummary {
        flows_arrived: Some(conns.len() as u64),
        flows_finished: Some(finished.len() as u64),
        fct_s: fct.map(|p| FctSummary {
            p50: p.p50,
            p90: p.p90,
            p99: p.p99,
            mean: p.mean,
            by_size,
        }),
        slowdown: slow,
        ..TrafficSummary::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> UnloadedPath {
        // One 10 Mbit/s hop each way, 50 ms propagation each way.
        UnloadedPath {
            propagation_rtt_s: 0.1,
            bottleneck_bps: 10_000_000,
            data_s_per_byte: 8.0 / 10e6,
            ack_s_per_byte: 8.0 / 10e6,
            mss_bytes: 1000,
            initial_window_segments: 1,
            receive_window_bytes: 1 << 30,
        }
    }

    #[test]
    fn one_segment_takes_the_handshake_and_one_way() {
        // 0.1 + 2 * 40 * 0.8 us (handshake) + 1040 * 0.8 us + 0.05 s.
        let t = unloaded_fct_s(1000, &path());
        let want = 0.1 + 80.0 * 0.8e-6 + 1040.0 * 0.8e-6 + 0.05;
        assert!((t - want).abs() < 1e-12, "{t} {want}");
    }

    #[test]
    fn slow_start_adds_a_round_per_doubling_and_a_long_flow_streams() {
        // 3 segments, IW 1: rounds of 1 and 2: one round trip more than a lone segment, and
        // the last round's second segment behind its first at the bottleneck.
        let one = unloaded_fct_s(1000, &path());
        let three = unloaded_fct_s(3000, &path());
        let round = 0.1 + 1040.0 * 0.8e-6 + 40.0 * 0.8e-6;
        let want = one + round + 1040.0 * 0.8e-6;
        assert!((three - want).abs() < 1e-12, "{three} {want}");
        // 100 MB: the transfer at the bottleneck's rate dominates.
        let t = unloaded_fct_s(100_000_000, &path());
        let wire_s = 100_000_000.0 * 1.04 * 8.0 / 10e6;
        assert!(t > wire_s && t < wire_s + 2.0, "{t}");
    }

    #[test]
    fn buckets_count_arrivals_and_finished_flows() {
        let conns = [
            Completed {
                size_bytes: 500,
                fct_s: Some(0.2),
            },
            Completed {
                size_bytes: 50_000,
                fct_s: Some(0.5),
            },
            Completed {
                size_bytes: 60_000,
                fct_s: None,
            },
        ];
        let s = summarize(&conns, &path());
        assert_eq!((s.flows_arrived, s.flows_finished), (Some(3), Some(2)));
        let b = &s.fct_s.unwrap().by_size;
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[1].min_bytes, b[1].max_bytes, b[1].flows, b[1].finished),
            (10_000, Some(100_000), 2, 1)
        );
    }
}
