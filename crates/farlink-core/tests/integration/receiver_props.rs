//! Property tests of the TCP receiver's segment handling (the stable-Rust twin of the fuzz
//! target `fuzz/fuzz_targets/receiver_segments.rs`): random segment sequences with
//! retransmissions, overlaps, reordering, duplicates and data beyond the window.
//!
//! After every segment: the delivered count never decreases, equals `RCV.NXT` and never
//! exceeds the highest byte up to which everything was received; the out-of-order ranges are
//! non-empty, sorted, disjoint and not touching, above `RCV.NXT`, inside the window, within
//! their bound and made of received bytes; every ACK acknowledges `RCV.NXT` and reports only
//! held ranges, the one just stored first. And a sequence that covers `[0, N)`, in any order,
//! delivers exactly N bytes, in order.

use farlink_core::tcp::receiver::{DelayedAck, Receiver, ReceiverConfig};
use farlink_core::tcp::segment::{max_sack_blocks, Flags, Segment, Timestamps};
use farlink_core::tcp::{Negotiated, TcpOptions};
use farlink_core::time::{SimDuration, SimTime};
use proptest::prelude::*;

/// The bytes sent to the receiver: sorted, disjoint, non-touching `[start, end)` ranges.
#[derive(Default)]
struct Sent(Vec<(u64, u64)>);

impl Sent {
    fn add(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        self.0.retain(|&(a, b)| {
            let apart = b < s || a > e;
            if !apart {
                s = s.min(a);
                e = e.max(b);
            }
            apart
        });
        let i = self.0.partition_point(|&(a, _)| a < s);
        self.0.insert(i, (s, e));
    }

    /// Everything in `[0, this)` was sent at least once.
    fn contiguous_from_zero(&self) -> u64 {
        match self.0.first() {
            Some(&(0, e)) => e,
            _ => 0,
        }
    }

    fn covers(&self, start: u64, end: u64) -> bool {
        self.0.iter().any(|&(a, b)| a <= start && end <= b)
    }
}

#[derive(Clone, Copy, Debug)]
struct Setup {
    mss: u32,
    sack: bool,
    timestamps: bool,
    window_scaling: bool,
    delayed_ack_ms: Option<u64>,
    quick_ack: bool,
    receive_buffer_bytes: u64,
    max_ooo_ranges: usize,
}

/// A receiver under test, the bytes it was sent, and what was checked last.
struct Harness {
    receiver: Receiver,
    sent: Sent,
    delivered: u64,
    window: u64,
    max_ooo_ranges: usize,
    sack: bool,
    timestamps: bool,
    now: SimTime,
}

impl Harness {
    fn new(setup: Setup) -> Harness {
        let options = TcpOptions {
            mss_bytes: setup.mss,
            sack: setup.sack,
            timestamps: setup.timestamps,
            window_scaling: setup.window_scaling,
        };
        let config = ReceiverConfig {
            options,
            receive_buffer_bytes: setup.receive_buffer_bytes,
            delayed_ack: match setup.delayed_ack_ms {
                None => DelayedAck::Off,
                Some(ms) => DelayedAck::On {
                    timeout: SimDuration::from_millis(ms),
                    every_segments: 2,
                    quick_ack: setup.quick_ack,
                },
            },
            max_ooo_ranges: setup.max_ooo_ranges,
            reads_on_demand: false,
            ecn: Default::default(),
        };
        let negotiated =
            Negotiated::without_handshake(&options, &options, setup.receive_buffer_bytes);
        let receiver = Receiver::new(&config, &negotiated);
        Harness {
            window: receiver.window_bytes(),
            receiver,
            sent: Sent::default(),
            delivered: 0,
            max_ooo_ranges: setup.max_ooo_ranges.max(1),
            sack: negotiated.sack,
            timestamps: negotiated.timestamps,
            now: SimTime::ZERO,
        }
    }

    /// Delivers `[start, end)` (empty for a pure ACK) after `gap_us`, first letting a due
    /// delayed-ACK timer fire if `timer_first`; checks everything after each step.
    fn deliver(
        &mut self,
        start: u64,
        end: u64,
        tsval: Option<u32>,
        gap_us: u64,
        timer_first: bool,
    ) {
        self.now = SimTime::from_nanos(self.now.as_nanos() + gap_us * 1000);
        if timer_first {
            if let Some(due) = self.receiver.next_timeout() {
                self.now = self.now.max(due);
                let ack = self.receiver.on_timeout(self.now);
                assert!(ack.is_some(), "the delayed-ACK timer fired without an ACK");
                assert_eq!(self.receiver.next_timeout(), None);
                self.check(ack, None);
            }
        }
        let seg = Segment {
            seq: start,
            flags: Flags::ACK,
            payload_bytes: u32::try_from(end - start).expect("segment under 4 GiB"),
            options: farlink_core::tcp::segment::Options {
                timestamps: tsval.map(|tsval| Timestamps { tsval, tsecr: 0 }),
                ..Default::default()
            },
            ..Segment::default()
        };
        let rcv_nxt = self.receiver.rcv_nxt();
        let stored_at =
            (end > start && start > rcv_nxt && start < rcv_nxt + self.window).then_some(start);
        self.sent.add(start, end);
        let ack = self.receiver.on_segment(self.now, &seg);
        if end == start {
            // An empty segment below RCV.NXT is a zero-window probe, answered at once; any other
            // is a pure ACK, which is not acknowledged.
            assert_eq!(
                ack.is_some(),
                start < rcv_nxt,
                "empty segment at {start}, RCV.NXT {rcv_nxt}"
            );
        }
        self.check(ack, stored_at);
    }

    fn check(&mut self, ack: Option<Segment>, stored_at: Option<u64>) {
        let r = &self.receiver;
        let delivered = r.delivered_bytes();
        assert!(
            delivered >= self.delivered,
            "delivered went back from {} to {delivered}",
            self.delivered
        );
        self.delivered = delivered;
        assert_eq!(
            r.rcv_nxt(),
            delivered,
            "RCV.NXT differs from the bytes delivered"
        );
        assert_eq!(r.stats().delivered_bytes, delivered);
        let contiguous = self.sent.contiguous_from_zero();
        assert!(
            delivered <= contiguous,
            "delivered {delivered} bytes but only [0, {contiguous}) was ever received"
        );
        assert_eq!(r.window_bytes(), self.window, "the window changed");

        let ranges: Vec<(u64, u64)> = r.ooo_ranges().collect();
        assert!(ranges.len() <= self.max_ooo_ranges, "{ranges:?}");
        let mut floor = r.rcv_nxt();
        for (i, &(s, e)) in ranges.iter().enumerate() {
            assert!(s < e, "empty range {i} in {ranges:?}");
            assert!(
                s > floor,
                "range {i} not above RCV.NXT / its predecessor: {ranges:?}"
            );
            assert!(
                e <= r.rcv_nxt() + self.window,
                "range {i} beyond the window: {ranges:?}"
            );
            assert!(
                self.sent.covers(s, e),
                "range {i} holds bytes never received"
            );
            floor = e;
        }

        let Some(ack) = ack else { return };
        assert_eq!(ack.ack, r.rcv_nxt());
        assert_eq!(ack.flags, Flags::ACK);
        assert_eq!(ack.payload_bytes, 0);
        assert_eq!(ack.options.timestamps.is_some(), self.timestamps);
        let blocks = ack.options.sack.as_slice();
        assert!(self.sack || blocks.is_empty());
        assert!(blocks.len() <= max_sack_blocks(self.timestamps));
        for (i, b) in blocks.iter().enumerate() {
            assert!(
                ranges.contains(&(b.left, b.right)),
                "SACK block {b:?} not held: {ranges:?}"
            );
            assert!(!blocks[..i].contains(b), "repeated SACK block {b:?}");
        }
        if let (true, Some(seq)) = (self.sack, stored_at) {
            if let Some(&held) = ranges.iter().find(|&&(s, e)| s <= seq && seq < e) {
                let first = blocks.first().map(|b| (b.left, b.right));
                assert_eq!(first, Some(held), "the block just received is not first");
            }
        }
    }
}

/// Receivers of every option set, windows from one MSS to 1 MiB, small and default bounds
/// on the out-of-order ranges.
fn setup() -> impl Strategy<Value = Setup> {
    (
        64u32..3_000,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(1u64..500),
        any::<bool>(),
        0u64..(1 << 20),
        prop_oneof![1usize..6, Just(64usize)],
    )
        .prop_map(
            |(mss, sack, timestamps, window_scaling, delack, quick_ack, extra, ooo)| Setup {
                mss,
                sack,
                timestamps,
                window_scaling,
                delayed_ack_ms: delack,
                quick_ack,
                receive_buffer_bytes: u64::from(mss) + extra,
                max_ooo_ranges: ooo,
            },
        )
}

/// A segment placed relative to the receiver's state when it arrives.
#[derive(Clone, Copy, Debug)]
enum Anchor {
    RcvNxt,
    RangeStart(usize),
    RangeEnd(usize),
    RightEdge,
    Origin,
}

#[derive(Clone, Copy, Debug)]
struct Step {
    anchor: Anchor,
    offset: i64,
    len: u64,
    tsval: Option<u32>,
    gap_us: u64,
    timer_first: bool,
}

fn step() -> impl Strategy<Value = Step> {
    let anchor = prop_oneof![
        3 => Just(Anchor::RcvNxt),
        2 => any::<usize>().prop_map(Anchor::RangeStart),
        2 => any::<usize>().prop_map(Anchor::RangeEnd),
        1 => Just(Anchor::RightEdge),
        1 => Just(Anchor::Origin),
    ];
    let offset = prop_oneof![4 => -3_000i64..6_000, 1 => -2_000_000i64..2_000_000];
    let len = prop_oneof![1 => Just(0u64), 8 => 1u64..3_000, 1 => 3_000u64..70_000];
    (
        anchor,
        offset,
        len,
        prop::option::of(any::<u32>()),
        0u64..300_000,
        any::<bool>(),
    )
        .prop_map(|(anchor, offset, len, tsval, gap_us, timer_first)| Step {
            anchor,
            offset,
            len,
            tsval,
            gap_us,
            timer_first,
        })
}

impl Harness {
    fn apply(&mut self, s: &Step) {
        let r = &self.receiver;
        let ranges: Vec<(u64, u64)> = r.ooo_ranges().collect();
        let pick = |i: usize| ranges.get(i % ranges.len().max(1)).copied();
        let base = match s.anchor {
            Anchor::RcvNxt => r.rcv_nxt(),
            Anchor::RangeStart(i) => pick(i).map_or(r.rcv_nxt(), |(a, _)| a),
            Anchor::RangeEnd(i) => pick(i).map_or(r.rcv_nxt(), |(_, b)| b),
            Anchor::RightEdge => r.rcv_nxt() + r.window_bytes(),
            Anchor::Origin => 0,
        };
        let start = base.saturating_add_signed(s.offset);
        self.deliver(start, start + s.len, s.tsval, s.gap_us, s.timer_first);
    }
}

/// `[0, n)` cut into pieces, plus retransmissions of random sub-ranges (overlapping the
/// pieces) and duplicates of pieces, in a random order.
fn covering(
    max_n: u64,
    max_pieces: usize,
    max_extra: usize,
) -> impl Strategy<Value = (u64, Vec<(u64, u64)>)> {
    (1u64..max_n)
        .prop_flat_map(move |n| {
            (
                Just(n),
                prop::collection::vec(0..n, 0..max_pieces),
                prop::collection::vec((0..n, 1u64..4_000), 0..max_extra),
                prop::collection::vec(any::<prop::sample::Index>(), 0..max_extra),
            )
        })
        .prop_map(|(n, mut cuts, extra, duplicates)| {
            cuts.extend([0, n]);
            cuts.sort_unstable();
            cuts.dedup();
            let mut segments: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
            segments.extend(extra.into_iter().map(|(s, len)| (s, (s + len).min(n))));
            for d in duplicates {
                let k = d.index(segments.len());
                segments.push(segments[k]);
            }
            (n, segments)
        })
        .prop_flat_map(|(n, segments)| (Just(n), Just(segments).prop_shuffle()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_over_any_segment_sequence(
        setup in setup(),
        steps in prop::collection::vec(step(), 0..120),
    ) {
        let mut h = Harness::new(setup);
        for s in &steps {
            h.apply(s);
        }
    }

    /// With the whole stream inside the window and room for every out-of-order range, the
    /// receiver delivers each byte as soon as everything before it has arrived: after every
    /// segment exactly the contiguous prefix received, so exactly N bytes at the end.
    #[test]
    fn a_covering_sequence_delivers_exactly_n_bytes_in_order(
        setup in setup(),
        (n, segments) in covering(40_000, 40, 20),
        gaps in prop::collection::vec(0u64..50_000, 80),
    ) {
        let setup = Setup {
            window_scaling: true,
            receive_buffer_bytes: 1 << 20,
            max_ooo_ranges: segments.len(),
            ..setup
        };
        let mut h = Harness::new(setup);
        prop_assert!(h.window >= n);
        for (i, &(s, e)) in segments.iter().enumerate() {
            h.deliver(s, e, None, gaps[i % gaps.len()], i % 3 == 0);
            prop_assert_eq!(h.receiver.delivered_bytes(), h.sent.contiguous_from_zero());
        }
        prop_assert_eq!(h.receiver.delivered_bytes(), n);
        prop_assert_eq!(h.receiver.rcv_nxt(), n);
        prop_assert_eq!(h.receiver.ooo_ranges().count(), 0);
    }

    /// Whatever the window and the bound on held ranges (segments beyond the window or over
    /// the bound are dropped), a sender that keeps resending the same covering set gets all N
    /// bytes delivered, each once: every round delivers the rest of the piece holding RCV.NXT,
    /// or a window of it.
    #[test]
    fn resending_a_covering_sequence_delivers_exactly_n_bytes_under_any_window(
        setup in setup(),
        (n, segments) in covering(10_000, 24, 10),
    ) {
        let mut h = Harness::new(setup);
        let mut rounds = 0;
        while h.receiver.delivered_bytes() < n {
            let before = h.receiver.delivered_bytes();
            for &(s, e) in &segments {
                h.deliver(s, e, None, 1_000, false);
            }
            prop_assert!(h.receiver.delivered_bytes() > before, "a round without progress");
            // Each round completes the piece holding RCV.NXT or advances a whole window.
            rounds += 1;
            prop_assert!(rounds <= segments.len() as u64 + n.div_ceil(h.window));
        }
        prop_assert_eq!(h.receiver.delivered_bytes(), n);
        prop_assert_eq!(h.receiver.rcv_nxt(), n);
    }
}
