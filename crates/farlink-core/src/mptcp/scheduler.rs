//! The packet scheduler: which subflow carries the next chunk of the connection's data.
//!
//! - `linux` (the default): Linux's default scheduler (`mptcp_subflow_get_send`,
//!   [`super::linux`]): the subflow whose queued bytes drain soonest at its pacing rate, whatever
//!   its window's room, given a burst of up to 64 KB that waits in its send queue.
//! - `minrtt`: the subflow with the lowest smoothed RTT among those whose congestion window
//!   has room for a segment, one segment at a time: nothing waits beyond a subflow's window (with
//!   equal pacing rates Linux's pick is the lowest `srtt` too). A subflow without an RTT sample
//!   yet counts as slowest, ties go to the lowest index.
//! - `roundrobin`: the next subflow with room after the one used last.
//! - `redundant`: every subflow with room carries the same chunk (Frömmgen et al.'s redundant
//!   scheduler for low latency); the receiver keeps the first copy.
//!
//! The scheduler sees each subflow as a [`SubflowView`]: whether it may carry data (up and
//! established), the room its window leaves, its smoothed RTT.

use std::fmt;
use std::str::FromStr;

use super::linux::{LingerScheduler, LingerView};
use crate::tcp::UnknownName;

/// The schedulers, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SchedulerKind {
    #[default]
    Linux,
    MinRtt,
    RoundRobin,
    Redundant,
}

impl SchedulerKind {
    pub const NAMES: &'static [&'static str] = &["linux", "minrtt", "roundrobin", "redundant"];

    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Linux => "linux",
            SchedulerKind::MinRtt => "minrtt",
            SchedulerKind::RoundRobin => "roundrobin",
            SchedulerKind::Redundant => "redundant",
        }
    }
}

impl FromStr for SchedulerKind {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "linux" => Ok(SchedulerKind::Linux),
            "minrtt" => Ok(SchedulerKind::MinRtt),
            "roundrobin" => Ok(SchedulerKind::RoundRobin),
            "redundant" => Ok(SchedulerKind::Redundant),
            _ => Err(UnknownName {
                what: "MPTCP scheduler",
                name: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A subflow as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubflowView {
    /// Up and established: it may carry data.
    pub usable: bool,
    /// Bytes its congestion window leaves for new data.
    pub room_bytes: u64,
    /// Its segment size: a subflow with less room than this gets nothing.
    pub smss_bytes: u64,
    /// Smoothed RTT in nanoseconds, `None` before the first sample.
    pub srtt_ns: Option<u64>,
    /// What Linux's scheduler reads: bytes in its send queue (unsent or unacknowledged), its
    /// pacing rate, whether its own send buffer has room ([`LingerView`]).
    pub queued_bytes: u64,
    pub pacing_bytes_per_s: u64,
    pub memory_free: bool,
}

impl SubflowView {
    /// The subflow as Linux's scheduler sees it.
    pub fn linger(&self) -> LingerView {
        LingerView {
            usable: self.usable,
            queued_bytes: self.queued_bytes,
            pacing_bytes_per_s: self.pacing_bytes_per_s,
            memory_free: self.memory_free,
        }
    }
}

impl SubflowView {
    fn has_room(&self) -> bool {
        self.usable && self.room_bytes >= self.smss_bytes.max(1)
    }
}

/// Where the next chunk goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pick {
    /// On this one subflow.
    One(usize),
    /// The same chunk on each of these (redundant).
    All(Vec<usize>),
}

/// A scheduler and the little state it keeps (round robin's last choice).
#[derive(Clone, Debug, Default)]
pub struct Scheduler {
    kind: SchedulerKind,
    last: Option<usize>,
    linger: LingerScheduler,
    /// The subflows as Linux's scheduler sees them, refilled at each pick (kept so that a
    /// pick allocates nothing).
    lingers: Vec<LingerView>,
}

impl Scheduler {
    pub fn new(kind: SchedulerKind) -> Self {
        Scheduler {
            kind,
            last: None,
            linger: LingerScheduler::new(),
            lingers: Vec::new(),
        }
    }

    /// Subflow `k` was replaced by a new one (Linux's scheduler forgets its smoothed rate).
    pub fn forget(&mut self, k: usize) {
        self.linger.forget(k);
    }

    /// The subflow(s) for the next data and how much: `Some(bytes)`, a burst to push into the
    /// one subflow's send queue whatever its window (`linux`, within `window_room_bytes`, the
    /// room the connection-level window leaves); `None`, one chunk that its window has room for
    /// (the others).
    pub fn pick_burst(
        &mut self,
        subflows: &[SubflowView],
        window_room_bytes: u64,
    ) -> Option<(Pick, Option<u64>)> {
        if self.kind == SchedulerKind::Linux {
            self.lingers.clear();
            self.lingers
                .extend(subflows.iter().map(SubflowView::linger));
            let (k, burst) = self.linger.pick(&self.lingers, window_room_bytes)?;
            self.last = Some(k);
            return Some((Pick::One(k), Some(burst)));
        }
        self.pick(subflows).map(|p| (p, None))
    }

    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// The subflow(s) for the next chunk; `None` when no subflow has room.
    pub fn pick(&mut self, subflows: &[SubflowView]) -> Option<Pick> {
        let with_room = || (0..subflows.len()).filter(|&i| subflows[i].has_room());
        let pick = match self.kind {
            SchedulerKind::Linux => return self.pick_burst(subflows, u64::MAX).map(|(p, _)| p),
            SchedulerKind::MinRtt => Pick::One(
                with_room().min_by_key(|&i| (subflows[i].srtt_ns.unwrap_or(u64::MAX), i))?,
            ),
            SchedulerKind::RoundRobin => {
                let n = subflows.len();
                let from = self.last.map_or(0, |l| l + 1);
                let i = (0..n)
                    .map(|k| (from + k) % n)
                    .find(|&i| subflows[i].has_room())?;
                Pick::One(i)
            }
            SchedulerKind::Redundant => {
                let all: Vec<usize> = with_room().collect();
                if all.is_empty() {
                    return None;
                }
                Pick::All(all)
            }
        };
        if let Pick::One(i) = pick {
            self.last = Some(i);
        }
        Some(pick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(usable: bool, room_segments: u64, srtt_ms: Option<u64>) -> SubflowView {
        SubflowView {
            usable,
            room_bytes: room_segments * 1000,
            smss_bytes: 1000,
            srtt_ns: srtt_ms.map(|ms| ms * 1_000_000),
            queued_bytes: 0,
            pacing_bytes_per_s: 0,
            memory_free: true,
        }
    }

    /// The scheduler table: subflows (usable, room in segments, srtt), the scheduler, what it
    /// picks (three picks in a row, each with the same subflows).
    #[test]
    fn scheduler_table() {
        let a = view(true, 4, Some(300));
        let b = view(true, 4, Some(100));
        let c = view(true, 0, Some(50)); // fastest but full
        let down = view(false, 10, Some(10));
        let fresh = view(true, 10, None); // no RTT sample yet
        let half = SubflowView {
            room_bytes: 999,
            ..b
        };
        use Pick::{All, One};
        use SchedulerKind::{MinRtt, Redundant, RoundRobin};
        let table: Vec<(Vec<SubflowView>, SchedulerKind, [Option<Pick>; 3])> = vec![
            // minrtt: lowest srtt with room; a full or down subflow is passed over.
            (
                vec![a, b, c, down],
                MinRtt,
                [Some(One(1)), Some(One(1)), Some(One(1))],
            ),
            // a subflow without a sample is tried only when none with one has room.
            (
                vec![fresh, a],
                MinRtt,
                [Some(One(1)), Some(One(1)), Some(One(1))],
            ),
            (
                vec![fresh, c],
                MinRtt,
                [Some(One(0)), Some(One(0)), Some(One(0))],
            ),
            // less room than a segment is no room.
            (vec![half, c], MinRtt, [None, None, None]),
            // roundrobin: in turn, skipping those without room.
            (
                vec![a, c, b, down],
                RoundRobin,
                [Some(One(0)), Some(One(2)), Some(One(0))],
            ),
            (vec![c, down], RoundRobin, [None, None, None]),
            // redundant: every subflow with room at once.
            (
                vec![a, b, c, down],
                Redundant,
                [
                    Some(All(vec![0, 1])),
                    Some(All(vec![0, 1])),
                    Some(All(vec![0, 1])),
                ],
            ),
            (vec![c], Redundant, [None, None, None]),
        ];
        for (row, (subflows, kind, want)) in table.into_iter().enumerate() {
            let mut s = Scheduler::new(kind);
            for (k, w) in want.into_iter().enumerate() {
                assert_eq!(s.pick(&subflows), w, "row {row} ({kind}), pick {k}");
            }
        }
    }

    #[test]
    fn names_parse_and_unknown_ones_list_the_known() {
        for n in SchedulerKind::NAMES {
            assert_eq!(n.parse::<SchedulerKind>().unwrap().name(), *n);
        }
        let e = "fastest".parse::<SchedulerKind>().unwrap_err().to_string();
        assert!(e.contains("linux, minrtt, roundrobin, redundant"), "{e}");
    }
}
