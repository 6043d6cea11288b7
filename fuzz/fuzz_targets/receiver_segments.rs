//! Arbitrary sequences of segments, placed around the receive window (retransmissions,
//! overlaps, duplicates, holes, data beyond the right edge), fed to a `Receiver` at increasing
//! times. After every step the receiver must hold its invariants:
//!
//! * the delivered count never decreases, equals `RCV.NXT`, and never exceeds the highest
//!   byte up to which everything was received (a reference model of the bytes sent to it);
//! * the out-of-order ranges are non-empty, sorted, disjoint and not touching, above
//!   `RCV.NXT`, inside the window, within their bound, and made of bytes that were received;
//! * every ACK acknowledges `RCV.NXT`, carries only held ranges as SACK blocks (distinct, no
//!   more than fit beside the options) and, for a segment stored out of order, reports the
//!   block holding it first (RFC 2018 section 4);
//!
//! and never panic.

#![no_main]

use arbitrary::Arbitrary;
use farlink_core::tcp::receiver::{DelayedAck, Receiver, ReceiverConfig};
use farlink_core::tcp::segment::{
    max_sack_blocks, Flags, Options, SackBlock, Segment, Timestamps, MAX_OPTIONS_BYTES,
};
use farlink_core::tcp::{Negotiated, TcpOptions};
use farlink_core::time::{SimDuration, SimTime};
use libfuzzer_sys::fuzz_target;

/// MSS bounds the scenario accepts, and the largest window TCP can announce.
const MSS_RANGE: (u32, u32) = (64, 65_495);
const MAX_BUFFER_BYTES: u64 = 65_535 << 14;

#[derive(Arbitrary, Debug)]
struct Setup {
    mss: u16,
    sack: bool,
    timestamps: bool,
    window_scaling: bool,
    /// Delayed-ACK timeout in milliseconds, or none for an ACK per segment.
    delayed_ack_ms: Option<u16>,
    receive_buffer_bytes: u32,
    max_ooo_ranges: u8,
}

/// Where a segment starts, before its byte offset is added.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Anchor {
    RcvNxt,
    /// The start or end of the n-th held out-of-order range (modulo their number).
    RangeStart(u8),
    RangeEnd(u8),
    RightEdge,
    /// Sequence number zero: old data.
    Origin,
}

#[derive(Arbitrary, Debug)]
struct FuzzSegment {
    anchor: Anchor,
    offset: i16,
    /// Multiply the offset by 1024: far before or beyond the window.
    far: bool,
    payload_bytes: u16,
    flags: u8,
    tsval: Option<u32>,
    sack: Vec<(u32, u16)>,
    /// Time since the previous step, in microseconds.
    gap_us: u32,
    /// Let the delayed-ACK timer fire (if due) before this segment arrives.
    timer_first: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    setup: Setup,
    segments: Vec<FuzzSegment>,
}

/// The bytes the receiver was sent, as sorted, disjoint, non-touching `[start, end)` ranges.
#[derive(Default)]
struct Sent(Vec<(u64, u64)>);

impl Sent {
    fn add(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        self.0.retain(|&(a, b)| {
            if b < s || a > e {
                true
            } else {
                s = s.min(a);
                e = e.max(b);
                false
            }
        });
        let i = self.0.partition_point(|&(a, _)| a < s);
        self.0.insert(i, (s, e));
    }
    /// Everything below this was sent at least once.
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

struct Harness {
    receiver: Receiver,
    sent: Sent,
    delivered: u64,
    window: u64,
    max_ooo_ranges: usize,
    sack: bool,
    timestamps: bool,
}

impl Harness {
    fn new(setup: &Setup) -> Harness {
        let (lo, hi) = MSS_RANGE;
        let mss = lo + u32::from(setup.mss) % (hi - lo + 1);
        let options = TcpOptions {
            mss_bytes: mss,
            sack: setup.sack,
            timestamps: setup.timestamps,
            window_scaling: setup.window_scaling,
        };
        let buffer = u64::from(setup.receive_buffer_bytes).clamp(u64::from(mss), MAX_BUFFER_BYTES);
        let config = ReceiverConfig {
            options,
            receive_buffer_bytes: buffer,
            delayed_ack: match setup.delayed_ack_ms {
                None => DelayedAck::Off,
                Some(ms) => DelayedAck::On {
                    timeout: SimDuration::from_millis(u64::from(ms).max(1)),
                    every_segments: 2,
                },
            },
            max_ooo_ranges: usize::from(setup.max_ooo_ranges),
            reads_on_demand: false,
        };
        let negotiated = Negotiated::without_handshake(&options, &options, buffer);
        let receiver = Receiver::new(&config, &negotiated);
        Harness {
            window: receiver.window_bytes(),
            receiver,
            sent: Sent::default(),
            delivered: 0,
            max_ooo_ranges: usize::from(setup.max_ooo_ranges).max(1),
            sack: negotiated.sack,
            timestamps: negotiated.timestamps,
        }
    }

    fn segment(&self, s: &FuzzSegment) -> Segment {
        let r = &self.receiver;
        let ranges: Vec<(u64, u64)> = r.ooo_ranges().collect();
        let pick = |i: u8| ranges.get(usize::from(i) % ranges.len().max(1)).copied();
        let base = match s.anchor {
            Anchor::RcvNxt => r.rcv_nxt(),
            Anchor::RangeStart(i) => pick(i).map_or(r.rcv_nxt(), |(a, _)| a),
            Anchor::RangeEnd(i) => pick(i).map_or(r.rcv_nxt(), |(_, b)| b),
            Anchor::RightEdge => r.rcv_nxt() + r.window_bytes(),
            Anchor::Origin => 0,
        };
        let offset = i64::from(s.offset) * if s.far { 1024 } else { 1 };
        let seq = base.saturating_add_signed(offset);
        let mut flags = Flags::NONE;
        for (bit, flag) in [(0x01, Flags::FIN), (0x02, Flags::SYN), (0x10, Flags::ACK)] {
            if s.flags & bit != 0 {
                flags = flags | flag;
            }
        }
        let mut options = Options {
            timestamps: s.tsval.map(|tsval| Timestamps { tsval, tsecr: 0 }),
            ..Options::default()
        };
        for &(left, len) in s.sack.iter().take(max_sack_blocks(s.tsval.is_some())) {
            let left = u64::from(left);
            options.sack.push(SackBlock {
                left,
                right: left + u64::from(len),
            });
        }
        Segment {
            seq,
            ack: 0,
            flags,
            payload_bytes: u32::from(s.payload_bytes),
            window_field: u16::MAX,
            options,
        }
    }

    /// Checks the receiver after a step, and the ACK it returned. `stored_at` is the first
    /// byte of a segment that arrived out of order inside the window.
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
        assert!(ack.options.len_bytes() <= MAX_OPTIONS_BYTES);
        let blocks = ack.options.sack.as_slice();
        if !self.sack {
            assert!(blocks.is_empty());
        }
        assert!(blocks.len() <= max_sack_blocks(self.timestamps));
        for (i, b) in blocks.iter().enumerate() {
            assert!(
                ranges.contains(&(b.left, b.right)),
                "SACK block {b:?} is not a held range {ranges:?}"
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

fuzz_target!(|input: Input| {
    let mut h = Harness::new(&input.setup);
    let mut now = SimTime::ZERO;
    for s in &input.segments {
        now = SimTime::from_nanos(now.as_nanos().saturating_add(u64::from(s.gap_us) * 1000));
        if s.timer_first {
            if let Some(due) = h.receiver.next_timeout() {
                now = now.max(due);
                let ack = h.receiver.on_timeout(now);
                assert!(ack.is_some(), "the delayed-ACK timer fired without an ACK");
                h.check(ack, None);
                assert_eq!(h.receiver.next_timeout(), None);
            }
        }
        let seg = h.segment(s);
        let rcv_nxt = h.receiver.rcv_nxt();
        let right_edge = rcv_nxt + h.receiver.window_bytes();
        let stored_at =
            (seg.payload_bytes > 0 && seg.seq > rcv_nxt && seg.seq < right_edge).then_some(seg.seq);
        h.sent.add(seg.seq, seg.end_seq());
        let ack = h.receiver.on_segment(now, &seg);
        if seg.payload_bytes == 0 {
            // An empty segment below RCV.NXT is a zero-window probe, answered at once; any
            // other is a pure ACK, which is not acknowledged.
            assert_eq!(ack.is_some(), seg.seq < rcv_nxt, "empty segment at {}", seg.seq);
        }
        h.check(ack, stored_at);
    }
});
