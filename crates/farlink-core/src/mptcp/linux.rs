//! What Linux's Multipath TCP does beyond RFC 8684's minimum, as `net/mptcp/protocol.c` (Linux
//! 6.x) does it: its default packet scheduler, which queues data on a subflow beyond the
//! subflow's congestion window, and its connection-level retransmission timer.
//!
//! **The scheduler** (`mptcp_subflow_get_send`, the `default` of `net.mptcp.scheduler`): among
//! the active subflows, the one whose queued bytes (`sk_wmem_queued`: unsent and
//! unacknowledged) would drain soonest at its pacing rate (the "linger time", queued bytes over
//! the subflow's smoothed pacing rate `avg_pacing_rate`), whatever room its congestion window
//! has; if that subflow's own send buffer is full (`sk_stream_memory_free`), nothing is sent.
//! The pick is given a burst of at most `MPTCP_SEND_BURST_SIZE` bytes and the connection-level
//! window's room (`msk->snd_burst`), and `__subflow_push_pending` moves whole send-queue
//! fragments into that subflow's write queue until the burst is spent or the subflow's buffer
//! is full. TCP then sends from the write queue what the subflow's window allows: data waits
//! there, mapped to that subflow, and if the subflow's path dies it waits until the subflow is
//! closed and its data reinjected, or until the connection-level timer sends it again.
//!
//! **The connection-level retransmission timer** (`mptcp_retransmit_timer`): armed when data is
//! pushed and the timer is not running (`__mptcp_push_pending`), rearmed whenever the
//! DATA_ACK moves and stopped once everything written is acknowledged (`__mptcp_clean_una`),
//! its interval (`timer_ival`) the longest time any subflow's own retransmission timer still
//! has to run, or `TCP_RTO_MIN` when none runs (`mptcp_set_timeout`,
//! `mptcp_timeout_from_subflow`), taken whenever the scheduler runs. On expiry
//! (`__mptcp_retrans`) the head of the send queue (the fragment holding the first byte the
//! DATA_ACK has not covered, from that byte to the end of what was pushed of it) is sent again
//! on the first active subflow with nothing outstanding (`mptcp_subflow_get_retrans`); with none
//! the timer is only rearmed.
//!
//! Send-queue fragments (`struct mptcp_data_frag`) are carved from the writer's page fragment
//! (`mptcp_sendmsg`, `mptcp_carve_data_frag`): a write extends the last fragment while its page
//! has room, so a writer that keeps the send buffer full fills one 32 KB page
//! (`SKB_FRAG_PAGE_ORDER`) per fragment, less the fragment's header. Here the connection's data
//! sequence space is cut into fragments of that size ([`DATA_FRAG_BYTES`]); a writer that
//! leaves the send queue empty between writes makes shorter ones in Linux, which this does
//! not follow.

use std::fmt;
use std::str::FromStr;

use super::scheduler::SchedulerKind;
use crate::tcp::UnknownName;
use crate::time::{SimDuration, SimTime};

/// What a subflow's close sends again on the others (`[flows.mptcp] close_resends`).
///
/// Linux closes a subflow when the path manager removes its endpoint (`ip mptcp endpoint
/// delete`, `mptcp_pm_nl_del_addr_doit` → `mptcp_pm_rm_subflow` → `mptcp_close_ssk`), and
/// `__mptcp_close_ssk` with `MPTCP_CF_PUSH` then rewinds the whole connection-level send queue
/// (`__mptcp_retransmit_pending_data`: "the closing socket has some data untransmitted and/or
/// unacked [...] keep it simple and re-inject the whole mptcp level rtx queue"), whether or
/// not the subflow was the connection's last, and pushes it through the scheduler again.
/// It is neither the scheduler's nor the timer's in Linux: it belongs to Linux's send queue
/// (`rtx_queue`, `first_pending`), which farlink models with `scheduler = "linux"` (bursts of
/// whole fragments queued beyond a subflow's window, which a dead call then holds unsent:
/// the reason Linux gives for the rewind). So `Queue` is the default with that scheduler and
/// `Subflow`, RFC 8684 3.3.6's reinjection of what the closed subflow carried, with farlink's
/// own schedulers, which map a segment only where a window has room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloseResends {
    /// What the closed subflow carried and the DATA_ACK has not covered.
    Subflow,
    /// Everything from the DATA_ACK to the highest data sequence number sent
    /// ([`super::DataSender::rewind_to_data_ack`]).
    Queue,
}

impl CloseResends {
    pub const NAMES: &'static [&'static str] = &["subflow", "queue"];

    pub fn name(self) -> &'static str {
        match self {
            CloseResends::Subflow => "subflow",
            CloseResends::Queue => "queue",
        }
    }

    /// The default with `scheduler`: Linux's rewind with Linux's scheduler (above).
    pub fn default_for(scheduler: SchedulerKind) -> Self {
        if scheduler == SchedulerKind::Linux {
            CloseResends::Queue
        } else {
            CloseResends::Subflow
        }
    }
}

impl FromStr for CloseResends {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "subflow" => Ok(CloseResends::Subflow),
            "queue" => Ok(CloseResends::Queue),
            _ => Err(UnknownName {
                what: "close_resends",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

impl fmt::Display for CloseResends {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `net.mptcp.stale_loss_cnt`'s default in Linux: a subflow silent over more than this many
/// expiries of the connection-level timer may be marked stale (`[flows.mptcp]
/// stale_loss_count`, whose default in farlink is 0, never, as with the sysctl at 0:
/// `scenario/mptcp.rs` says why).
pub const STALE_LOSS_CNT: u8 = 4;

/// One subflow's stale state (`stale_count`, `stale_rcv_tstamp` and `stale` of Linux's
/// `mptcp_subflow_context`).
///
/// At each expiry of the connection-level timer (Linux 6.18: `mptcp_pm_chk_stale` at the start
/// of `__mptcp_retrans`; before, the same count from `mptcp_subflow_get_retrans`), every
/// active subflow with data outstanding or queued is looked at: the first time its count
/// starts at 1 and the time of the last ACK it heard (`rcv_tstamp`) is noted; each later
/// expiry with no ACK heard since adds one, and an ACK heard resets the count to 0 (and makes
/// a stale subflow active). Once the count exceeds `stale_loss_cnt` ([`STALE_LOSS_CNT`] by
/// default; 0 marks none, the count goes on) and another active subflow's count is below
/// `max(stale_loss_cnt - 1, 1)` (`mptcp_pm_subflow_chk_stale`), the
/// subflow is marked stale: left out of the scheduling (`mptcp_subflow_active`) until it hears
/// an ACK, and the connection's send queue is rewound ([`super::DataSender::rewind_to_data_ack`],
/// `__mptcp_retransmit_pending_data`). A subflow with a nonzero count leaves the timer's
/// interval to the others (`mptcp_timeout_from_subflow`). This is the connection timer's
/// (`[flows.mptcp] retransmit_timer`): without the timer's expiries nothing counts, and 6.18
/// counts outside the scheduler, whichever scheduler runs.
///
/// Linux compares ACK timestamps in jiffies; here an ACK counter stands for them: "heard an
/// ACK since" is the same question.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaleState {
    /// ACKs the subflow heard (its `rcv_tstamp`).
    acks_heard: u64,
    /// `acks_heard` when the count started (`stale_rcv_tstamp`).
    mark: u64,
    count: u8,
    stale: bool,
}

impl StaleState {
    /// The subflow heard an ACK: a stale subflow is active again (`mptcp_subflow_active` sees
    /// a new `rcv_tstamp`, `mptcp_subflow_set_active`); its count is reset at the next expiry.
    pub fn heard_ack(&mut self) {
        self.acks_heard += 1;
        self.stale = false;
    }

    /// Left out of the scheduling.
    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Expiries counted without an ACK heard (`stale_count`): nonzero, the subflow's own timer
    /// does not set the connection timer's interval.
    pub fn count(&self) -> u8 {
        self.count
    }

    /// One expiry of the connection-level timer while the subflow has data outstanding or
    /// queued; true if the subflow is to be marked stale (silent over more than
    /// `stale_loss_cnt` expiries, 0: never) should another subflow be
    /// [`an_alternative`](Self::an_alternative).
    pub fn on_expiry(&mut self, stale_loss_cnt: u8) -> bool {
        if self.count == 0 {
            self.mark = self.acks_heard;
            self.count = 1;
            false
        } else if self.mark == self.acks_heard {
            self.count = self.count.saturating_add(1);
            !self.stale && stale_loss_cnt > 0 && self.count > stale_loss_cnt
        } else {
            self.count = 0;
            self.stale = false;
            false
        }
    }

    /// Whether this (active) subflow lets another be marked stale: not itself losing
    /// (`stale_count < max(stale_loss_cnt - 1, 1)`).
    pub fn an_alternative(&self, stale_loss_cnt: u8) -> bool {
        !self.stale && self.count < stale_loss_cnt.saturating_sub(1).max(1)
    }

    /// Marked stale (`subflow->stale = 1`).
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }
}

/// `TCP_RTO_MIN` (200 ms): the connection-level timer's interval when no subflow timer runs.
pub const LINUX_TCP_RTO_MIN: SimDuration = SimDuration::from_millis(200);

/// `MPTCP_SEND_BURST_SIZE`: 64 KiB less a TCP header, the most TCP options, an IPv6 header and
/// a fragment header (20 + 40 + 40 + 8 bytes).
pub const SEND_BURST_BYTES: u64 = (1 << 16) - 20 - 40 - 40 - 8;

/// One send-queue fragment: a 32 KB page fragment less the 40-byte `mptcp_data_frag` header
/// carved at its start.
pub const DATA_FRAG_BYTES: u64 = 32_768 - 40;

/// The end of the send-queue fragment holding data sequence number `dsn`.
pub fn frag_end(dsn: u64) -> u64 {
    (dsn / DATA_FRAG_BYTES + 1) * DATA_FRAG_BYTES
}

/// A subflow's pacing rate in bytes per second, as `tcp_update_pacing_rate` sets
/// `sk_pacing_rate`: its window (or what is in flight, if more) per smoothed RTT, times 2 in
/// slow start's first half (`tcp_pacing_ss_ratio`, 200 %) and 1.2 after
/// (`tcp_pacing_ca_ratio`, 120 %). Without an RTT sample Linux's rate is unbounded
/// (`sk_pacing_rate` starts at `~0`): `u64::MAX`.
pub fn pacing_rate_bytes_per_s(
    cwnd_bytes: u64,
    ssthresh_bytes: u64,
    in_flight_bytes: u64,
    srtt_ns: Option<u64>,
) -> u64 {
    let Some(srtt_ns) = srtt_ns.filter(|&s| s > 0) else {
        return u64::MAX;
    };
    let ratio_percent: u128 = if cwnd_bytes < ssthresh_bytes / 2 {
        200
    } else {
        120
    };
    let window = u128::from(cwnd_bytes.max(in_flight_bytes));
    let rate = window * ratio_percent * 1_000_000_000 / 100 / u128::from(srtt_ns);
    rate.min(u128::from(u64::MAX)) as u64
}

/// The default scheduler's own state: each subflow's smoothed pacing rate
/// (`subflow->avg_pacing_rate`), by subflow index; 0 until first used.
#[derive(Clone, Debug, Default)]
pub struct LingerScheduler {
    avg_pacing: Vec<u64>,
}

/// A subflow as the default scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LingerView {
    /// Up and established (`mptcp_subflow_active`).
    pub usable: bool,
    /// Bytes in its send queue, sent and not acknowledged or not yet sent (`sk_wmem_queued`).
    pub queued_bytes: u64,
    /// Its current pacing rate ([`pacing_rate_bytes_per_s`]).
    pub pacing_bytes_per_s: u64,
    /// Its own send buffer has room (`sk_stream_memory_free`).
    pub memory_free: bool,
}

impl LingerScheduler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Subflow `k` was replaced by a new one (a new subflow context): its smoothed rate starts
    /// again from the socket's.
    pub fn forget(&mut self, k: usize) {
        if let Some(r) = self.avg_pacing.get_mut(k) {
            *r = 0;
        }
    }

    /// `mptcp_subflow_get_send`: the subflow for the next burst and the burst's bytes, given
    /// the room the connection-level window leaves; `None` if no subflow is active, or the one
    /// with the shortest linger time has no room in its own send buffer.
    pub fn pick(
        &mut self,
        subflows: &[LingerView],
        window_room_bytes: u64,
    ) -> Option<(usize, u64)> {
        if self.avg_pacing.len() < subflows.len() {
            self.avg_pacing.resize(subflows.len(), 0);
        }
        let mut best: Option<(usize, u64)> = None;
        for (k, s) in subflows.iter().enumerate() {
            if !s.usable {
                continue;
            }
            if self.avg_pacing[k] == 0 {
                self.avg_pacing[k] = s.pacing_bytes_per_s;
            }
            let pace = self.avg_pacing[k];
            if pace == 0 {
                continue;
            }
            let linger = ((u128::from(s.queued_bytes) << 32) / u128::from(pace)) as u64;
            if best.is_none_or(|(_, b)| linger < b) {
                best = Some((k, linger));
            }
        }
        let (k, _) = best?;
        let s = subflows[k];
        if !s.memory_free {
            return None;
        }
        let burst = SEND_BURST_BYTES.min(window_room_bytes);
        if burst > 0 {
            // The smoothed rate leans toward the current one by the burst's share of what
            // the subflow will have queued.
            let (avg, wmem) = (u128::from(self.avg_pacing[k]), u128::from(s.queued_bytes));
            let b = u128::from(burst);
            let now = u128::from(s.pacing_bytes_per_s);
            self.avg_pacing[k] =
                ((avg * wmem + now * b) / (b + wmem)).min(u128::from(u64::MAX)) as u64;
        }
        Some((k, burst))
    }
}

/// `mptcp_subflow_get_retrans`: the first active subflow with nothing outstanding and nothing
/// waiting in its send queue (`tcp_rtx_and_write_queues_empty`), if any.
pub fn pick_retrans(subflows: &[LingerView]) -> Option<usize> {
    subflows
        .iter()
        .position(|s| s.usable && s.queued_bytes == 0)
}

/// The connection-level retransmission timer's state (`timer_ival` and the timer itself);
/// the engine keeps the event.
#[derive(Clone, Debug)]
pub struct RetransmitTimer {
    interval: SimDuration,
    deadline: Option<SimTime>,
    /// Expiries that sent data again.
    retransmissions: u64,
}

impl Default for RetransmitTimer {
    fn default() -> Self {
        RetransmitTimer {
            interval: LINUX_TCP_RTO_MIN,
            deadline: None,
            retransmissions: 0,
        }
    }
}

impl RetransmitTimer {
    pub fn new() -> Self {
        Self::default()
    }

    /// `mptcp_set_timeout`: the interval from what each subflow's own timer still has to run
    /// (`None`: not running), the longest, or `TCP_RTO_MIN` if none runs.
    pub fn set_interval(&mut self, remaining: impl IntoIterator<Item = Option<SimDuration>>) {
        let longest = remaining
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(SimDuration::ZERO);
        self.interval = if longest > SimDuration::ZERO {
            longest
        } else {
            LINUX_TCP_RTO_MIN
        };
    }

    pub fn interval(&self) -> SimDuration {
        self.interval
    }

    /// `mptcp_reset_rtx_timer`: runs from `now` for the current interval; returns its deadline.
    pub fn reset(&mut self, now: SimTime) -> SimTime {
        let at = now + self.interval;
        self.deadline = Some(at);
        at
    }

    /// `mptcp_stop_rtx_timer`.
    pub fn stop(&mut self) {
        self.deadline = None;
    }

    pub fn pending(&self) -> bool {
        self.deadline.is_some()
    }

    pub fn deadline(&self) -> Option<SimTime> {
        self.deadline
    }

    /// The timer fired at `now`: true if it was due then (not stopped or moved since).
    pub fn fire(&mut self, now: SimTime) -> bool {
        if self.deadline == Some(now) {
            self.deadline = None;
            true
        } else {
            false
        }
    }

    pub fn note_retransmission(&mut self) {
        self.retransmissions += 1;
    }

    pub fn retransmissions(&self) -> u64 {
        self.retransmissions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(queued: u64, pace: u64) -> LingerView {
        LingerView {
            usable: true,
            queued_bytes: queued,
            pacing_bytes_per_s: pace,
            memory_free: true,
        }
    }

    #[test]
    fn the_shortest_linger_time_wins_whatever_the_window() {
        let mut s = LingerScheduler::new();
        // 30 KB queued at 10 KB/s lingers 3 s; 8 KB at 2 KB/s 4 s; a down subflow is skipped.
        let down = LingerView {
            usable: false,
            ..view(0, 1_000_000)
        };
        let views = [view(30_000, 10_000), view(8_000, 2_000), down];
        assert_eq!(s.pick(&views, 1 << 20), Some((0, SEND_BURST_BYTES)));
        // The connection's window bounds the burst.
        let mut s = LingerScheduler::new();
        assert_eq!(s.pick(&views, 5000), Some((0, 5000)));
        // The best subflow's own buffer is full: nothing, not the second best.
        let full = LingerView {
            memory_free: false,
            ..views[0]
        };
        let mut s = LingerScheduler::new();
        assert_eq!(s.pick(&[full, views[1]], 1 << 20), None);
    }

    #[test]
    fn the_smoothed_rate_follows_the_bursts() {
        let mut s = LingerScheduler::new();
        let v = [view(10_000, 1000)];
        s.pick(&v, 1 << 20).unwrap();
        assert_eq!(s.avg_pacing[0], 1000);
        // The rate doubles: the average moves by the burst's share of burst plus queue.
        let v = [view(10_000, 2000)];
        s.pick(&v, 10_000).unwrap();
        assert_eq!(s.avg_pacing[0], 1500);
        s.forget(0);
        s.pick(&[view(0, 7000)], 1 << 20).unwrap();
        assert_eq!(s.avg_pacing[0], 7000);
    }

    #[test]
    fn linux_pacing_rate_doubles_in_early_slow_start() {
        // 10 segments of 1000 bytes over 100 ms: 100 KB/s, times 2 or 1.2.
        assert_eq!(
            pacing_rate_bytes_per_s(10_000, 100_000, 0, Some(100_000_000)),
            200_000
        );
        assert_eq!(
            pacing_rate_bytes_per_s(10_000, 15_000, 0, Some(100_000_000)),
            120_000
        );
        assert_eq!(
            pacing_rate_bytes_per_s(10_000, 15_000, 20_000, Some(100_000_000)),
            240_000
        );
        assert_eq!(pacing_rate_bytes_per_s(10_000, 15_000, 0, None), u64::MAX);
    }

    #[test]
    fn a_subflow_silent_over_four_expiries_goes_stale_and_an_ack_brings_it_back() {
        const N: u8 = STALE_LOSS_CNT;
        let mut s = StaleState::default();
        // The first expiry notes the last ACK heard; four more without one exceed the count.
        for n in 1..=N {
            assert!(!s.on_expiry(N), "expiry {n}");
            assert!(s.count() == n && s.an_alternative(N) == (n < N - 1));
        }
        assert!(s.on_expiry(N), "silent over {N} expiries after the first");
        s.mark_stale();
        assert!(s.is_stale() && !s.an_alternative(N));
        // Marked once: later expiries do not ask again.
        assert!(!s.on_expiry(N));
        // An ACK makes it active at once; the next expiry resets its count.
        s.heard_ack();
        assert!(!s.is_stale() && s.count() > 0);
        assert!(!s.on_expiry(N));
        assert_eq!(s.count(), 0);
        // A subflow that hears an ACK between expiries never gets there.
        let mut busy = StaleState::default();
        for _ in 0..20 {
            assert!(!busy.on_expiry(N));
            busy.heard_ack();
        }
        assert!(busy.count() <= 1 && busy.an_alternative(N));
        // stale_loss_cnt = 0: counted (the count still leaves the timer to the others), never
        // marked.
        let mut off = StaleState::default();
        for _ in 0..20 {
            assert!(!off.on_expiry(0));
        }
        assert_eq!(off.count(), 20);
    }

    #[test]
    fn close_resends_names_and_defaults() {
        for n in CloseResends::NAMES {
            assert_eq!(n.parse::<CloseResends>().unwrap().name(), *n);
        }
        let e = "all".parse::<CloseResends>().unwrap_err().to_string();
        assert!(
            e.contains("close_resends \"all\"") && e.contains("subflow, queue"),
            "{e}"
        );
        assert_eq!(
            CloseResends::default_for(SchedulerKind::Linux),
            CloseResends::Queue
        );
        assert_eq!(
            CloseResends::default_for(SchedulerKind::MinRtt),
            CloseResends::Subflow
        );
    }

    #[test]
    fn the_retransmission_goes_to_an_idle_subflow() {
        let busy = view(1, 1000);
        let idle = view(0, 1000);
        let down = LingerView {
            usable: false,
            ..idle
        };
        assert_eq!(pick_retrans(&[busy, down, idle, idle]), Some(2));
        assert_eq!(pick_retrans(&[busy, down]), None);
    }

    #[test]
    fn the_timer_interval_is_the_longest_subflow_timer_left() {
        let ms = SimDuration::from_millis;
        let mut t = RetransmitTimer::new();
        t.set_interval([Some(ms(300)), None, Some(ms(1200))]);
        assert_eq!(t.interval(), ms(1200));
        t.set_interval([None, None]);
        assert_eq!(t.interval(), LINUX_TCP_RTO_MIN);
        let at = t.reset(SimTime::from_nanos(1_000));
        assert_eq!(at, SimTime::from_nanos(1_000) + LINUX_TCP_RTO_MIN);
        assert!(!t.fire(SimTime::from_nanos(5)), "not due then");
        assert!(t.fire(at) && !t.pending());
        assert_eq!(frag_end(0), DATA_FRAG_BYTES);
        assert_eq!(frag_end(DATA_FRAG_BYTES), 2 * DATA_FRAG_BYTES);
    }
}
