//! The connection-level sequence space (RFC 8684 section 3.3).
//!
//! The sender numbers the application's bytes with data sequence numbers (DSN, from 0 here,
//! unwrapped `u64` like the subflows' sequence numbers) and maps ranges of them onto each
//! subflow's own sequence space, as the DSS option's mapping (data sequence number, subflow
//! sequence number, data-level length) tells the receiver. The receiver turns what each
//! subflow delivers in order back into DSN ranges, reassembles them in DSN order and
//! acknowledges at the connection level (DATA_ACK: the next DSN it expects). The sender may
//! have at most the receive window's bytes beyond the DATA_ACK outstanding (section 3.3.4:
//! one window for the connection, shared by its subflows).
//!
//! The sender may also hold a send buffer for the whole connection (Linux's: the MPTCP socket's
//! `sk_sndbuf`, `mptcp_sendmsg` writing while its queued bytes are below it, and
//! `__mptcp_clean_una` freeing them only once the DATA_ACK covers them): the application's
//! bytes not yet covered by the DATA_ACK never exceed it, so data waiting on a slow subflow
//! holds room no other subflow can use.
//!
//! In the simulator the receiver reads the mapping from the sender's [`SubflowMap`] rather
//! than from an option on each segment: a byte reaches the receiver only after its mapping
//! was made, and the DSS option always travels with the bytes it maps, so both give the same
//! answer.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

use super::reinject::ReinjectQueue;

/// One DSS mapping: `len` bytes from subflow sequence number `subflow_seq` carry the
/// connection's bytes from `dsn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub subflow_seq: u64,
    pub dsn: u64,
    pub len: u64,
}

impl Mapping {
    fn subflow_end(&self) -> u64 {
        self.subflow_seq + self.len
    }

    fn dsn_end(&self) -> u64 {
        self.dsn + self.len
    }
}

/// One subflow's mappings, in its sequence order: contiguous, since each chunk is written to
/// the subflow's stream right after the one before.
#[derive(Clone, Debug, Default)]
pub struct SubflowMap {
    maps: VecDeque<Mapping>,
    /// The subflow sequence number after the last byte mapped.
    end_seq: u64,
}

impl SubflowMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps DSN range `dsn` onto the next bytes of the subflow's stream; returns the mapping
    /// (merged with the one before when both sequence spaces continue it).
    pub fn push(&mut self, dsn: Range<u64>) -> Mapping {
        let len = dsn.end - dsn.start;
        let m = Mapping {
            subflow_seq: self.end_seq,
            dsn: dsn.start,
            len,
        };
        self.end_seq += len;
        match self.maps.back_mut() {
            Some(last) if last.subflow_end() == m.subflow_seq && last.dsn_end() == m.dsn => {
                last.len += len;
            }
            _ => self.maps.push_back(m),
        }
        m
    }

    /// The subflow sequence number after the last byte mapped (the bytes written to it).
    pub fn end_seq(&self) -> u64 {
        self.end_seq
    }

    /// Hands `out` the DSN ranges carried by the subflow's bytes `seq` (in order); false if
    /// some byte of `seq` has no mapping (never mapped, or released).
    pub fn translate(&self, seq: Range<u64>, mut out: impl FnMut(Range<u64>)) -> bool {
        if seq.is_empty() {
            return true;
        }
        let mut at = seq.start;
        let first = self.maps.partition_point(|m| m.subflow_end() <= at);
        for m in self.maps.iter().skip(first) {
            if at >= seq.end {
                break;
            }
            if m.subflow_seq > at {
                return false;
            }
            let end = seq.end.min(m.subflow_end());
            let off = at - m.subflow_seq;
            out(m.dsn + off..m.dsn + off + (end - at));
            at = end;
        }
        at >= seq.end
    }

    /// Forgets the mappings the subflow has acknowledged (below `subflow_una`) whose bytes
    /// the connection has acknowledged too (below `data_ack`): nothing can ask for them again.
    pub fn release(&mut self, subflow_una: u64, data_ack: u64) {
        while let Some(m) = self.maps.front() {
            if m.subflow_end() <= subflow_una && m.dsn_end() <= data_ack {
                self.maps.pop_front();
            } else {
                break;
            }
        }
    }

    /// The DSN ranges mapped onto this subflow not yet covered by `data_ack`: what must be
    /// sent again elsewhere if the subflow fails.
    pub fn unacknowledged(&self, data_ack: u64) -> impl Iterator<Item = Range<u64>> + '_ {
        self.maps
            .iter()
            .filter(move |m| m.dsn_end() > data_ack)
            .map(move |m| m.dsn.max(data_ack)..m.dsn_end())
    }

    /// Mappings held.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }
}

/// The sending side of the connection: which data sequence numbers exist, which are
/// acknowledged (DATA_ACK), what may be sent next.
#[derive(Clone, Debug)]
pub struct DataSender {
    /// Bytes the application has written (`u64::MAX`: an unbounded source).
    written: u64,
    /// The next DSN never sent.
    next_dsn: u64,
    /// The highest DATA_ACK received.
    data_ack: u64,
    /// The connection-level receive window (RFC 8684 3.3.4), from the DATA_ACK.
    window_bytes: u64,
    /// The connection's send buffer: bytes written and not yet covered by the DATA_ACK;
    /// `u64::MAX`: unbounded.
    send_buffer_bytes: u64,
    reinject: ReinjectQueue,
    /// Bytes sent again on another subflow (reinjected or redundant copies).
    resent_bytes: u64,
}

/// Where a chunk to send comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub dsn: Range<u64>,
    /// Taken from the reinjection queue: a second copy.
    pub reinjected: bool,
}

impl DataSender {
    /// A sender of `written` bytes (`u64::MAX`: unbounded) with a connection-level window of
    /// `window_bytes`.
    pub fn new(written: u64, window_bytes: u64) -> Self {
        DataSender {
            written,
            next_dsn: 0,
            data_ack: 0,
            window_bytes: window_bytes.max(1),
            send_buffer_bytes: u64::MAX,
            reinject: ReinjectQueue::new(),
            resent_bytes: 0,
        }
    }

    /// The same sender with a connection-level send buffer of `bytes` (`None`: unbounded).
    pub fn with_send_buffer(mut self, bytes: Option<u64>) -> Self {
        self.send_buffer_bytes = bytes.map_or(u64::MAX, |b| b.max(1));
        self
    }

    /// The end of what the application has written into the send buffer: everything, or as
    /// much as fits above the DATA_ACK.
    fn buffered_end(&self) -> u64 {
        self.written
            .min(self.data_ack.saturating_add(self.send_buffer_bytes))
    }

    /// The new data a chunk of at most `max_len` bytes may take, within the window and the
    /// send buffer; `None` if none. The window may cut a chunk short; the send buffer never
    /// does (a segment waits for a whole segment's room, as a subflow's own buffer makes it,
    /// `Sender::new_data_len`), except that an empty buffer always lets one chunk go.
    fn new_data(&self, max_len: u64) -> Option<Range<u64>> {
        let limit = self
            .written
            .min(self.data_ack.saturating_add(self.window_bytes));
        if self.next_dsn >= limit {
            return None;
        }
        let end = limit.min(self.next_dsn.saturating_add(max_len.max(1)));
        if end > self.buffered_end() && self.next_dsn > self.data_ack {
            return None;
        }
        Some(self.next_dsn..end)
    }

    /// The application has bytes it cannot write yet because the send buffer is full of data
    /// the DATA_ACK has not covered: what keeps new data from the subflows (not the window).
    pub fn buffer_full(&self, max_len: u64) -> bool {
        self.reinject.is_empty()
            && self.new_data(max_len).is_none()
            && self.next_dsn
                < self
                    .written
                    .min(self.data_ack.saturating_add(self.window_bytes))
    }

    /// The next chunk of at most `max_len` bytes to map onto a subflow: reinjected data
    /// first, then new data within the window; `None` if there is nothing it may send.
    pub fn next_chunk(&mut self, max_len: u64) -> Option<Chunk> {
        if let Some(r) = self.reinject.pop(max_len, self.data_ack) {
            self.resent_bytes += r.end - r.start;
            return Some(Chunk {
                dsn: r,
                reinjected: true,
            });
        }
        let r = self.new_data(max_len)?;
        self.next_dsn = r.end;
        Some(Chunk {
            dsn: r,
            reinjected: false,
        })
    }

    /// The next chunk as Linux pushes its send queue (`__subflow_push_pending`): at most
    /// `max_len` bytes, never across the end of a send-queue fragment
    /// ([`super::linux::frag_end`]), so that the caller can stop at a fragment's end.
    pub fn next_chunk_in_frag(&mut self, max_len: u64) -> Option<Chunk> {
        let start = self
            .reinject
            .front_start(self.data_ack)
            .unwrap_or(self.next_dsn);
        let len = max_len.max(1).min(super::linux::frag_end(start) - start);
        self.next_chunk(len)
    }

    /// The head of the send queue as Linux's connection-level timer resends it
    /// (`__mptcp_retrans`): from the DATA_ACK to the end of what was sent of the fragment
    /// holding it; `None` if nothing sent is unacknowledged.
    pub fn head_fragment(&self) -> Option<Range<u64>> {
        let end = super::linux::frag_end(self.data_ack).min(self.next_dsn);
        (end > self.data_ack).then_some(self.data_ack..end)
    }

    /// A copy of `dsn`, already sent, is sent again by the connection-level timer.
    pub fn note_resent(&mut self, dsn: &Range<u64>) {
        self.resent_bytes += dsn.end - dsn.start;
    }

    /// Bytes the connection-level window still lets go beyond what was sent.
    pub fn window_room(&self) -> u64 {
        self.data_ack
            .saturating_add(self.window_bytes)
            .saturating_sub(self.next_dsn)
    }

    /// Everything the application wrote into the send buffer was sent and acknowledged
    /// (`__mptcp_clean_una`'s `snd_una == snd_nxt == write_seq`).
    pub fn all_acknowledged(&self) -> bool {
        self.reinject.is_empty()
            && self.data_ack == self.next_dsn
            && self.buffered_end() <= self.next_dsn
    }

    /// Whether [`next_chunk`](Self::next_chunk) would give something for `max_len`.
    pub fn has_data(&self, max_len: u64) -> bool {
        self.new_data(max_len).is_some() || self.reinject.len_bytes() > 0
    }

    /// A DATA_ACK arrived (older ones are ignored).
    pub fn on_data_ack(&mut self, data_ack: u64) {
        if data_ack > self.data_ack {
            self.data_ack = data_ack.min(self.next_dsn);
            self.reinject.discard_below(self.data_ack);
        }
    }

    /// A subflow failed: what it carried and the connection has not acknowledged is sent again
    /// on the others (RFC 8684 3.3.6).
    pub fn reinject_from(&mut self, map: &SubflowMap) {
        for r in map.unacknowledged(self.data_ack) {
            self.reinject.push(r);
        }
    }

    /// Linux's rewind of the send queue (`__mptcp_retransmit_pending_data`, Linux 6.x
    /// `net/mptcp/protocol.c`): everything sent and not yet covered by the DATA_ACK, from the
    /// DATA_ACK to the highest DSN sent, is queued to be sent again ahead of new data, whatever
    /// subflow carried it, copies of what live subflows still have in flight included (Linux
    /// points its send head back at the first unacknowledged fragment and clears every
    /// fragment's `already_sent`; `snd_nxt` stays, as `next_dsn` does here). Linux does this
    /// when a subflow is closed (`__mptcp_close_ssk` with `MPTCP_CF_PUSH`) and when a subflow
    /// is marked stale (`mptcp_pm_subflow_chk_stale`). Returns the bytes queued that were not
    /// queued already.
    pub fn rewind_to_data_ack(&mut self) -> u64 {
        let before = self.reinject.queued_bytes();
        self.reinject.push(self.data_ack..self.next_dsn);
        self.reinject.queued_bytes() - before
    }

    /// A copy of `dsn` already sent is sent on another subflow too (the redundant scheduler).
    pub fn note_copy(&mut self, dsn: &Range<u64>) {
        self.resent_bytes += dsn.end - dsn.start;
    }

    /// The application closed the stream at what it wrote (an unbounded source's stop).
    pub fn end_at(&mut self, written: u64) {
        self.written = written.max(self.next_dsn);
    }

    pub fn data_ack(&self) -> u64 {
        self.data_ack
    }

    pub fn next_dsn(&self) -> u64 {
        self.next_dsn
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn resent_bytes(&self) -> u64 {
        self.resent_bytes
    }

    pub fn reinjection(&self) -> &ReinjectQueue {
        &self.reinject
    }
}

/// The receiving side of the connection: DSN ranges from every subflow, handed to the
/// application once and in order.
#[derive(Clone, Debug, Default)]
pub struct DataReceiver {
    /// The next DSN the application expects: the DATA_ACK.
    rcv_nxt: u64,
    /// Ranges above `rcv_nxt`, disjoint, by start.
    ooo: BTreeMap<u64, u64>,
    /// Bytes that arrived again (a reinjected or redundant copy of what was already here).
    duplicate_bytes: u64,
    max_ooo_bytes: u64,
}

impl DataReceiver {
    pub fn new() -> Self {
        Self::default()
    }

    /// Range `r` arrived on some subflow; returns how many bytes the application can now read
    /// in order (the DATA_ACK moved by that much).
    pub fn on_data(&mut self, r: Range<u64>) -> u64 {
        let before = self.rcv_nxt;
        let mut start = r.start.max(self.rcv_nxt);
        // Bytes below the DATA_ACK were here already.
        self.duplicate_bytes += start.min(r.end) - r.start;
        if start >= r.end {
            return 0;
        }
        let mut end = r.end;
        // Merge with the held ranges it touches, counting what was already here.
        let touching: Vec<(u64, u64)> = self
            .ooo
            .range(..=end)
            .rev()
            .take_while(|(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.duplicate_bytes += e.min(end).saturating_sub(s.max(start));
            self.ooo.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        if start == self.rcv_nxt {
            self.rcv_nxt = end;
        } else {
            self.ooo.insert(start, end);
        }
        self.max_ooo_bytes = self.max_ooo_bytes.max(self.ooo_bytes());
        self.rcv_nxt - before
    }

    /// The DATA_ACK: every byte below it was handed to the application.
    pub fn data_ack(&self) -> u64 {
        self.rcv_nxt
    }

    /// Bytes held above the DATA_ACK.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo.iter().map(|(s, e)| e - s).sum()
    }

    pub fn max_ooo_bytes(&self) -> u64 {
        self.max_ooo_bytes
    }

    pub fn duplicate_bytes(&self) -> u64 {
        self.duplicate_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_subflow_range_translates_across_mappings() {
        let mut m = SubflowMap::new();
        m.push(0..100);
        m.push(300..350);
        m.push(350..400); // continues the one before: merged
        assert_eq!(m.len(), 2);
        let mut got = Vec::new();
        assert!(m.translate(50..180, |r| got.push(r)));
        assert_eq!(got, vec![50..100, 300..380]);
        assert!(!m.translate(150..250, |_| {}), "beyond what was mapped");
        m.release(100, 100);
        assert_eq!(m.len(), 1);
        assert!(!m.translate(0..10, |_| {}), "released");
        assert_eq!(m.unacknowledged(320).collect::<Vec<_>>(), vec![320..400]);
    }

    #[test]
    fn the_receiver_reassembles_in_order_and_counts_copies() {
        let mut r = DataReceiver::new();
        assert_eq!(r.on_data(100..200), 0);
        assert_eq!(r.on_data(150..250), 0);
        assert_eq!(r.duplicate_bytes(), 50);
        assert_eq!(r.on_data(0..100), 250);
        assert_eq!(r.data_ack(), 250);
        assert_eq!(r.on_data(0..10), 0);
        assert_eq!(r.duplicate_bytes(), 60);
    }

    #[test]
    fn the_sender_stays_within_the_connection_window() {
        let mut s = DataSender::new(10_000, 3000);
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 0..1460);
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 1460..2920);
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 2920..3000);
        assert!(s.next_chunk(1460).is_none());
        s.on_data_ack(1460);
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 3000..4460);
    }

    #[test]
    fn the_send_buffer_holds_what_the_data_ack_has_not_covered() {
        // A 3000-byte connection send buffer and a window far larger: the buffer binds.
        let mut s = DataSender::new(10_000, 100_000).with_send_buffer(Some(3000));
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 0..1460);
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 1460..2920);
        // A whole segment no longer fits: nothing, and the buffer (not the window) says so.
        assert!(s.next_chunk(1460).is_none());
        assert!(s.buffer_full(1460) && !s.has_data(1460));
        // Subflow ACKs alone free nothing; the DATA_ACK does.
        s.on_data_ack(1460);
        assert!(!s.buffer_full(1460));
        assert_eq!(s.next_chunk(1460).unwrap().dsn, 2920..4380);
        assert!(s.next_chunk(1460).is_none());
        // A failed subflow's data is in the buffer already: reinjected even when it is full.
        let mut map = SubflowMap::new();
        map.push(1460..2920);
        s.reinject_from(&map);
        assert!(!s.buffer_full(1460) && s.has_data(1460));
        let c = s.next_chunk(1460).unwrap();
        assert!(c.reinjected && c.dsn == (1460..2920), "{c:?}");
        // Unbounded (the default), the same steps map every chunk the window allows.
        let mut u = DataSender::new(10_000, 100_000).with_send_buffer(None);
        for k in 0..5 {
            assert_eq!(u.next_chunk(1460).unwrap().dsn.start, k * 1460);
        }
        assert!(!u.buffer_full(1460));
    }

    #[test]
    fn linux_pushes_to_a_fragments_end_and_resends_its_head() {
        use crate::mptcp::linux::DATA_FRAG_BYTES as F;
        let mut s = DataSender::new(3 * F, 10 * F);
        // Chunks stop at the first fragment's end, whatever the segment size.
        let mut at = 0;
        while at < F - 1000 {
            at = s.next_chunk_in_frag(1460).unwrap().dsn.end;
        }
        assert_eq!(s.next_chunk_in_frag(1460).unwrap().dsn, at..F);
        assert_eq!(s.next_chunk_in_frag(1460).unwrap().dsn, F..F + 1460);
        // The head: from the DATA_ACK to the end of what was sent of its fragment.
        assert_eq!(s.head_fragment(), Some(0..F));
        s.on_data_ack(F - 10);
        assert_eq!(s.head_fragment(), Some(F - 10..F));
        s.on_data_ack(F + 100);
        assert_eq!(s.head_fragment(), Some(F + 100..F + 1460));
        assert_eq!(s.window_room(), F + 100 + 10 * F - (F + 1460));
        // Reinjected data stops at its fragment's end too.
        let mut map = SubflowMap::new();
        map.push(F + 100..F + 1460);
        s.reinject_from(&map);
        let c = s.next_chunk_in_frag(100_000).unwrap();
        assert!(c.reinjected && c.dsn == (F + 100..F + 1460), "{c:?}");
        assert!(!s.all_acknowledged());
        s.on_data_ack(F + 1460);
        assert!(
            s.head_fragment().is_none() && !s.all_acknowledged(),
            "more to write"
        );
        while s.next_chunk_in_frag(1460).is_some() {}
        s.on_data_ack(3 * F);
        assert!(s.all_acknowledged());
    }

    #[test]
    fn a_rewind_sends_everything_unacknowledged_again_once_then_new_data() {
        let mut s = DataSender::new(10_000, 100_000);
        let mut a = SubflowMap::new();
        let mut b = SubflowMap::new();
        for k in 0..4 {
            let c = s.next_chunk(1000).unwrap();
            if k % 2 == 0 {
                a.push(c.dsn)
            } else {
                b.push(c.dsn)
            };
        }
        s.on_data_ack(1500);
        // Everything from the DATA_ACK to the highest DSN sent, whichever subflow carried it.
        assert_eq!(s.rewind_to_data_ack(), 2500);
        // What is queued already is not queued twice; the closed subflow's data is within.
        s.reinject_from(&a);
        assert_eq!(s.rewind_to_data_ack(), 0);
        assert_eq!(s.reinjection().len_bytes(), 2500);
        let c = s.next_chunk(4000).unwrap();
        assert!(c.reinjected && c.dsn == (1500..4000), "{c:?}");
        assert_eq!(s.resent_bytes(), 2500);
        // Then new data, from where it stopped: the rewind moved nothing else.
        assert_eq!(s.next_dsn(), 4000);
        let c = s.next_chunk(1000).unwrap();
        assert!(!c.reinjected && c.dsn == (4000..5000), "{c:?}");
        // What the DATA_ACK covers meanwhile is not sent again.
        s.rewind_to_data_ack();
        s.on_data_ack(4500);
        assert_eq!(s.next_chunk(10_000).unwrap().dsn, 4500..5000);
        // Nothing sent, nothing to rewind.
        let mut idle = DataSender::new(10_000, 100_000);
        assert_eq!(idle.rewind_to_data_ack(), 0);
        assert!(idle.reinjection().is_empty());
    }

    /// One step of the property test's world.
    #[derive(Clone, Debug)]
    enum Op {
        /// Map the next chunk (at most `len` bytes) onto subflow `k`.
        Send { k: usize, len: u64 },
        /// Subflow `k` delivers `n` more of its in-order bytes to the receiver.
        Deliver { k: usize, n: u64 },
        /// The receiver's DATA_ACK reaches the sender.
        DataAck,
        /// Subflow `k` fails (what it has not delivered is lost) and a new one replaces it.
        Fail { k: usize },
        /// Subflow `k` fails and, as Linux does on a close or a stale subflow, the whole
        /// unacknowledged send queue is rewound (`rewind_to_data_ack`).
        FailRewind { k: usize },
        /// The send queue is rewound while every subflow lives on (a stale subflow kept).
        Rewind,
    }

    fn op(subflows: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..subflows, 1u64..3000).prop_map(|(k, len)| Op::Send { k, len }),
            4 => (0..subflows, 1u64..5000).prop_map(|(k, n)| Op::Deliver { k, n }),
            2 => Just(Op::DataAck),
            1 => (0..subflows).prop_map(|k| Op::Fail { k }),
            1 => (0..subflows).prop_map(|k| Op::FailRewind { k }),
            1 => Just(Op::Rewind),
        ]
    }

    /// A subflow of the test: its mappings and how far it has delivered in order.
    struct Sub {
        map: SubflowMap,
        delivered: u64,
    }

    impl Sub {
        fn new() -> Self {
            Sub {
                map: SubflowMap::new(),
                delivered: 0,
            }
        }
    }

    proptest! {
        /// Whatever the subflows deliver, fail, reinject and rewind, the application gets every
        /// byte once, in order, and all of them once the surviving subflows deliver what they
        /// hold.
        #[test]
        fn every_byte_arrives_once_in_order_across_failures(
            total in 1u64..40_000,
            window in 2000u64..30_000,
            send_buffer in proptest::option::of(1460u64..20_000),
            subflows in 1usize..5,
            ops in proptest::collection::vec(op(4), 0..200),
        ) {
            let mut tx = DataSender::new(total, window).with_send_buffer(send_buffer);
            let mut rx = DataReceiver::new();
            let mut subs: Vec<Sub> = (0..subflows).map(|_| Sub::new()).collect();
            let mut read = 0u64;
            let step = |tx: &mut DataSender, rx: &mut DataReceiver, subs: &mut Vec<Sub>,
                            read: &mut u64, op: Op| {
                match op {
                    Op::Send { k, len } => {
                        if let Some(c) = tx.next_chunk(len) {
                            // New data ends within the send buffer above the DATA_ACK, unless
                            // it is the one chunk an empty buffer lets go.
                            let room_end = tx.data_ack().saturating_add(send_buffer.unwrap_or(u64::MAX));
                            prop_assert!(
                                c.reinjected || c.dsn.end <= room_end || c.dsn.start == tx.data_ack(),
                                "{c:?} beyond {room_end}"
                            );
                            subs[k % subflows].map.push(c.dsn);
                        }
                    }
                    Op::Deliver { k, n } => {
                        let s = &mut subs[k % subflows];
                        let to = s.map.end_seq().min(s.delivered + n);
                        let mut ranges = Vec::new();
                        prop_assert!(s.map.translate(s.delivered..to, |r| ranges.push(r)));
                        s.delivered = to;
                        // The subflow's ACK releases what the connection acknowledged.
                        s.map.release(s.delivered, tx.data_ack());
                        for r in ranges {
                            let before = rx.data_ack();
                            let n = rx.on_data(r);
                            prop_assert_eq!(rx.data_ack(), before + n, "in order, never back");
                            *read += n;
                        }
                    }
                    Op::DataAck => tx.on_data_ack(rx.data_ack()),
                    Op::Fail { k } => {
                        let k = k % subflows;
                        tx.reinject_from(&subs[k].map);
                        subs[k] = Sub::new();
                    }
                    Op::FailRewind { k } => {
                        let k = k % subflows;
                        tx.rewind_to_data_ack();
                        subs[k] = Sub::new();
                    }
                    Op::Rewind => {
                        tx.rewind_to_data_ack();
                        // Everything unacknowledged waits to go again.
                        let queued = tx.reinjection().len_bytes();
                        prop_assert!(queued >= tx.next_dsn() - tx.data_ack(), "{queued}");
                    }
                }
                Ok(())
            };
            for o in ops {
                step(&mut tx, &mut rx, &mut subs, &mut read, o)?;
            }
            // Drain on subflow 0: send, deliver and acknowledge until nothing is left.
            for _ in 0..100_000 {
                if rx.data_ack() == total {
                    break;
                }
                step(&mut tx, &mut rx, &mut subs, &mut read, Op::Send { k: 0, len: 1460 })?;
                for k in 0..subflows {
                    step(&mut tx, &mut rx, &mut subs, &mut read, Op::Deliver { k, n: u64::MAX / 4 })?;
                }
                step(&mut tx, &mut rx, &mut subs, &mut read, Op::DataAck)?;
            }
            prop_assert_eq!(rx.data_ack(), total);
            prop_assert_eq!(read, total, "each byte read once");
            prop_assert!(rx.ooo_bytes() == 0);
            prop_assert!(rx.max_ooo_bytes() <= window, "the window bounds what the receiver holds");
        }
    }
}
