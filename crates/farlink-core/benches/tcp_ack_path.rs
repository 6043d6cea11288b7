//! Throughput of the TCP sender's ACK path: `Sender::on_ack` and the transmissions it releases
//! (`Sender::poll_transmit` until it returns `None`), the per-ACK work of every simulated flow.
//!
//! Each workload first records a script outside the timing: a sender and a receiver exchange
//! segments in rounds of 10 ms (no delay inside a round, delayed ACKs off, a 1 MiB receive
//! window), dropping the first transmission of one data segment in a hundred when asked; the
//! ACKs the sender processed are kept with their times. The timed routine replays that script
//! into a fresh sender: since the sender is deterministic, it goes through exactly the same
//! states. One element is one ACK.
//!
//! Workloads: `in_order_newreno` (cumulative ACKs only), `loss_newreno` (1 % loss, NewReno,
//! no SACK: duplicate ACKs, fast retransmit, partial ACKs), `loss_sack` (1 % loss, SACK
//! blocks and RFC 6675 recovery). Runs in well under a minute:
//! `cargo bench -p farlink-core --bench tcp_ack_path`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use farlink_core::tcp::receiver::{DelayedAck, Receiver, ReceiverConfig};
use farlink_core::tcp::recovery::LossRecovery;
use farlink_core::tcp::segment::Segment;
use farlink_core::tcp::sender::{AppSource, Sender, SenderConfig};
use farlink_core::tcp::{Negotiated, TcpOptions};
use farlink_core::time::{SimDuration, SimTime};
use std::hint::black_box;
use std::time::Duration;

const ACKS: usize = 20_000;
const RECEIVE_BUFFER_BYTES: u64 = 1 << 20;
const ROUND: SimDuration = SimDuration::from_millis(10);

struct Workload {
    name: &'static str,
    recovery: LossRecovery,
    sack: bool,
    /// Drop the first transmission of segment k when k % 100 == 50.
    lossy: bool,
}

fn endpoints(w: &Workload) -> (Sender, Receiver) {
    let options = TcpOptions {
        mss_bytes: 1460,
        sack: w.sack,
        timestamps: true,
        window_scaling: true,
    };
    let sender_cfg = SenderConfig {
        options,
        recovery: w.recovery,
        app: AppSource::Unbounded,
        ..SenderConfig::default()
    };
    let receiver_cfg = ReceiverConfig {
        options,
        receive_buffer_bytes: RECEIVE_BUFFER_BYTES,
        delayed_ack: DelayedAck::Off,
        ..ReceiverConfig::default()
    };
    let n = Negotiated::without_handshake(&options, &options, RECEIVE_BUFFER_BYTES);
    (
        Sender::new(&sender_cfg, &n),
        Receiver::new(&receiver_cfg, &n),
    )
}

fn drain(s: &mut Sender, now: SimTime, out: &mut Vec<Segment>) {
    while let Some(seg) = s.poll_transmit(now).map(|t| t.segment) {
        out.push(seg);
    }
}

/// The ACKs a sender processes in `ACKS` steps of the exchange, with their times, and the
/// sender's `SND.UNA` after them.
fn script(w: &Workload) -> (Vec<(SimTime, Segment)>, u64) {
    let (mut sender, mut receiver) = endpoints(w);
    let smss = sender.smss_bytes();
    let mut dropped = std::collections::BTreeSet::new();
    let mut wire = Vec::new();
    drain(&mut sender, SimTime::ZERO, &mut wire);
    let mut now = SimTime::ZERO;
    let mut acks = Vec::with_capacity(ACKS);
    while acks.len() < ACKS {
        now += ROUND;
        let arriving = std::mem::take(&mut wire);
        assert!(!arriving.is_empty(), "the exchange stalled");
        let mut replies = Vec::new();
        for seg in &arriving {
            let k = seg.seq / smss;
            if w.lossy && k % 100 == 50 && dropped.insert(seg.seq) {
                continue;
            }
            if let Some(ack) = receiver.on_segment(now, seg) {
                replies.push(ack);
            }
        }
        for ack in replies {
            if acks.len() == ACKS {
                break;
            }
            acks.push((now, ack));
            sender.on_ack(now, &ack);
            drain(&mut sender, now, &mut wire);
        }
    }
    (acks, sender.snd_una())
}

/// Replays `acks` into a sender that has sent its initial window.
fn replay(sender: &mut Sender, acks: &[(SimTime, Segment)], out: &mut Vec<Segment>) {
    for (now, ack) in acks {
        sender.on_ack(*now, ack);
        out.clear();
        drain(sender, *now, out);
        black_box(out.len());
    }
}

/// A sender that has sent its initial window, and room for what it sends.
fn fresh(w: &Workload) -> (Sender, Vec<Segment>) {
    let (mut sender, _) = endpoints(w);
    let mut out = Vec::with_capacity(4096);
    drain(&mut sender, SimTime::ZERO, &mut out);
    (sender, out)
}

fn bench_ack_path(c: &mut Criterion) {
    let mut group = c.benchmark_group("ack_path");
    group.throughput(Throughput::Elements(ACKS as u64));
    for w in [
        Workload {
            name: "in_order_newreno",
            recovery: LossRecovery::NewReno,
            sack: false,
            lossy: false,
        },
        Workload {
            name: "loss_newreno",
            recovery: LossRecovery::NewReno,
            sack: false,
            lossy: true,
        },
        Workload {
            name: "loss_sack",
            recovery: LossRecovery::Sack,
            sack: true,
            lossy: true,
        },
    ] {
        let (acks, snd_una) = script(&w);
        // The replay goes through the script's states (and the lossy ones do recover).
        let (mut check, mut out) = fresh(&w);
        replay(&mut check, &acks, &mut out);
        assert_eq!(check.snd_una(), snd_una, "{}: replay diverged", w.name);
        assert_eq!(check.stats().fast_retransmits > 0, w.lossy, "{}", w.name);
        group.bench_function(w.name, |b| {
            b.iter_batched_ref(
                || fresh(&w),
                |(sender, out)| {
                    replay(sender, &acks, out);
                    black_box(sender.snd_una())
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_ack_path
}
criterion_main!(benches);
