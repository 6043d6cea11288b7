//! Multipath TCP flows at run time (`transport = "mptcp"`, `crate::mptcp`).
//!
//! A Multipath TCP flow over a bundle link runs one TCP connection (a subflow) per member of
//! the bundle, each over a link of its own: one member of the bundle in each direction, with
//! the member's rate, delay, transmit queue, ARQ and error stream (the same draws as that
//! member under MLPPP), built as a bundle of that one member without a multilink header, so
//! that the bundle's control plane ([`crate::path::BundleDriver`]: call drops, detection,
//! redial) drives it exactly as it drives the MLPPP bundle's members. The driver reports
//! each change it applies ([`MemberChange`]); the engine applies it to the member's own links
//! and, as Linux's in-kernel path manager does with `subflow` endpoints, closes the subflow
//! once the drop is noticed (its interface goes down: the member leaves, `Usable(false)`)
//! and opens a new one, with a handshake of its own (MP_JOIN), when the member is back.
//!
//! The connection level is `crate::mptcp`'s: the scheduler picks a subflow with room for each
//! chunk of the application's bytes, which is mapped (DSN to subflow sequence) and written
//! into that subflow's sender; what each subflow's receiver delivers in order is mapped back
//! and reassembled; each subflow ACK carries the DATA_ACK current when the receiver sent it
//! (kept beside the packet's slot); when a subflow is closed, what it carried and the
//! DATA_ACK has not covered is sent again, or (Linux's, `[flows.mptcp] close_resends =
//! "queue"`) the whole unacknowledged send queue; a subflow silent over several expiries of
//! Linux's connection-level timer is marked stale and the send queue rewound the same way
//! (`mptcp::linux::StaleState`).
//! A closed subflow's connection stays in the engine, inert: it sends nothing, and what
//! still reaches it is discarded, as after a reset. Each reopened subflow is a connection of
//! its own (a new index), so no packet of the old one can reach the new.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::{
    cause_map, goodput_bps, grid_at_or_after, normalized_goodput, ConnCounts, Dir, Flow,
    FlowSummary, RunError, Timer, Traced, World,
};
use crate::apps::stream::App;
use crate::mptcp::coupled::{Coupled, Coupling, CouplingGroup};
use crate::mptcp::linux::{self, CloseResends, RetransmitTimer, StaleState};
use crate::mptcp::{DataReceiver, DataSender, Pick, Scheduler, SubflowMap, SubflowView};
use crate::path::{dir_index, member_link_dir, MemberChange};
use crate::scenario::{AppSpec, ScenarioError, Transport};
use crate::tcp::cc::ControllerInit;
use crate::tcp::{Negotiated, State};
use crate::time::{SimDuration, SimTime};

/// A bundle link whose members carry subflows: each member's own link directions.
#[derive(Debug)]
pub(super) struct MemberLinks {
    pub link: usize,
    /// Per member, its forward and reverse directions (indices into `World::dirs`).
    pub dirs: Vec<[u32; 2]>,
}

/// One member's subflow of a Multipath TCP connection.
#[derive(Debug)]
struct Member {
    /// The current subflow's connection (index into `World::flows`); the closed ones before
    /// it in `history`.
    conn: u32,
    history: Vec<u32>,
    /// The member is up (its link usable).
    up: bool,
    /// The current subflow was closed (its member went down) and not yet replaced.
    closed: bool,
    /// The current subflow carried anything (a subflow never used is kept on reopening).
    used: bool,
    /// The coupled controller is in place (once established).
    coupled: bool,
    map: SubflowMap,
    /// Linux's stale-subflow state of the current subflow (counted only with the
    /// connection-level timer).
    stale: StaleState,
    /// The round trip of the subflow's path with empty queues: what a handshake's SYN would
    /// have sampled. Linux's subflows always have that sample before they carry data (their
    /// pacing rate is set from it); the simulator's first subflows start without a handshake,
    /// so Linux's scheduler reads this until their first sample.
    handshake_rtt_ns: u64,
    /// When the member was up: [start, end) spans, the last open.
    up_spans: Vec<(SimTime, Option<SimTime>)>,
}

/// A Multipath TCP connection at run time.
#[derive(Debug)]
pub(super) struct MptcpRt {
    spec: u32,
    /// Index into `World::member_links`.
    links: usize,
    /// The flow's path index of the bundle hop.
    bundle_hop: usize,
    scheduler: Scheduler,
    coupling: Coupling,
    group: Arc<Mutex<CouplingGroup>>,
    tx: DataSender,
    rx: DataReceiver,
    /// Linux's connection-level retransmission timer, if on (`linux.rs`; its event is
    /// `Event::MptcpTimer`).
    retransmit_timer: bool,
    rtx: RetransmitTimer,
    /// `[flows.mptcp] keep_first_subflow`: member 0's subflow is not closed on its drop.
    keep_first_subflow: bool,
    /// `[flows.mptcp] close_resends`: what a subflow's close sends again.
    close_resends: CloseResends,
    /// `[flows.mptcp] stale_loss_count` (Linux's `net.mptcp.stale_loss_cnt`).
    stale_loss_count: u8,
    /// Subflows marked stale (Linux's `MPTcpExtSubflowStale`).
    stale_marks: u64,
    /// Each subflow's own send buffer (the flow's `tcp.send_buffer`; `None`: unbounded), which
    /// Linux's scheduler fills at most.
    subflow_send_buffer: Option<u64>,
    members: Vec<Member>,
    /// Bytes the application writes: a bulk transfer's size; an unbounded source's `u64::MAX`
    /// until it stops, then what it had handed to the subflows.
    size_bytes: u64,
    /// An unbounded source still writing.
    writing: bool,
    started: bool,
    start: SimTime,
    read_bytes: u64,
    last_read: Option<SimTime>,
    finish: Option<SimTime>,
    /// Scratch for the scheduler (reused).
    views: Vec<SubflowView>,
}

/// One subflow (a member's subflows over the run) in a flow's summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubflowSummary {
    /// The bundle link and member it runs over, `link/member<k>`.
    pub route: String,
    pub member: u32,
    /// Subflows opened over it (the first, then one per redial that brought it back).
    pub established: u32,
    /// Payload bytes sent (retransmissions included) and delivered in order to the
    /// connection level, over its subflows.
    pub bytes_sent: u64,
    pub bytes: u64,
    pub retransmissions: u64,
    /// `None` where the engine cannot see them (the emulator: the kernel's subflows are gone
    /// by the end of the run).
    pub timeouts: Option<u64>,
    /// When the member was up (carrying a subflow) and down, `[start_s, end_s]`, to the run's
    /// end.
    pub up_intervals_s: Vec<[f64; 2]>,
    pub down_intervals_s: Vec<[f64; 2]>,
    /// What limited its subflows, in seconds by cause, as the flow's `limited_s` (summed over
    /// its subflows, to the flow's end); `None` where the engine cannot see it (the emulator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_s: Option<std::collections::BTreeMap<String, Option<f64>>>,
}

/// The connection level of a Multipath TCP flow in its summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MptcpSummary {
    pub scheduler: &'static str,
    pub coupling: &'static str,
    /// Bytes mapped again onto another subflow after theirs failed, copied by the redundant
    /// scheduler, or sent again by the connection-level retransmission timer.
    pub reinjected_bytes: u64,
    /// Bytes that reached the connection level more than once.
    pub duplicate_bytes: u64,
    /// The most bytes the connection-level receiver held out of order.
    pub max_out_of_order_bytes: u64,
    /// Expiries of the connection-level retransmission timer that sent the head of the
    /// unacknowledged data again on another subflow (`None`: the timer is off).
    pub timer_retransmissions: Option<u64>,
    /// Subflows marked stale after going silent over more than `[flows.mptcp]
    /// stale_loss_count` expiries of the connection-level timer, each time the send queue was
    /// rewound (`None`: the timer is off).
    pub stale_subflows: Option<u64>,
}

impl World<'_> {
    /// Builds the member links and the subflows of every Multipath TCP flow. Runs before the
    /// bundles start, so that their first commands bring the members' links up too.
    pub(super) fn build_mptcp(&mut self) -> Result<(), RunError> {
        let sc = self.sc;
        for (i, f) in sc.flows().iter().enumerate() {
            let Transport::Mptcp(spec) = f.transport else {
                continue;
            };
            let (size_bytes, writing) = match f.app {
                AppSpec::Bulk { size_bytes } => (size_bytes, false),
                AppSpec::Unbounded => (u64::MAX, true),
                // The scenario refuses the others (`scenario/mptcp.rs`).
                _ => {
                    return Err(ScenarioError::new(
                        format!("flows[{i}].transport"),
                        "Multipath TCP carries bulk and unbounded applications only",
                    )
                    .into())
                }
            };
            let link = f.path[spec.bundle_hop].link;
            let links = self.member_links_of(link)?;
            let n = self.member_links[links].dirs.len();
            let first = self.flow_conns[i].start;
            let mut members = Vec::with_capacity(n);
            for k in 0..n {
                let flow = self.new_subflow(i, links, spec.bundle_hop, k, false);
                // The flow's own connection becomes member 0's subflow; the others follow.
                let conn = if k == 0 {
                    self.flows[first] = flow;
                    first
                } else {
                    self.flows.push(flow);
                    self.flows.len() - 1
                };
                members.push(Member {
                    conn: conn as u32,
                    history: Vec::new(),
                    up: false,
                    closed: false,
                    used: false,
                    coupled: false,
                    map: SubflowMap::new(),
                    stale: StaleState::default(),
                    handshake_rtt_ns: self.member_round_trip(i, spec.bundle_hop, k).as_nanos(),
                    up_spans: Vec::new(),
                });
            }
            self.mptcp.push(MptcpRt {
                spec: i as u32,
                links,
                bundle_hop: spec.bundle_hop,
                scheduler: Scheduler::new(spec.scheduler),
                coupling: spec.coupling,
                group: CouplingGroup::shared(),
                // One send buffer for the connection, as Linux's MPTCP socket has: the
                // flow's `tcp.send_buffer` (each subflow keeps one of the same size too, as
                // Linux's SO_SNDBUF on the MPTCP socket sets every subflow's).
                tx: DataSender::new(size_bytes, f.tcp.receive_buffer_bytes)
                    .with_send_buffer(f.tcp.send_buffer_bytes),
                rx: DataReceiver::new(),
                retransmit_timer: spec.retransmit_timer,
                rtx: RetransmitTimer::new(),
                keep_first_subflow: spec.keep_first_subflow,
                close_resends: spec.close_resends,
                stale_loss_count: spec.stale_loss_count,
                stale_marks: 0,
                subflow_send_buffer: f.tcp.send_buffer_bytes,
                members,
                size_bytes,
                writing,
                started: false,
                start: f.start,
                read_bytes: 0,
                last_read: None,
                finish: None,
                views: Vec::with_capacity(n),
            });
            let m = self.mptcp.len() - 1;
            for k in 0..n {
                let c = self.mptcp[m].members[k].conn as usize;
                self.flows[c].sub = Some((m as u32, k as u32));
                self.install_coupling(m, k);
            }
        }
        Ok(())
    }

    /// The round trip of flow `i`'s path through member `k` of its bundle hop `bundle_hop`, with
    /// empty queues: every hop's delay both ways, the member's in place of the bundle's.
    fn member_round_trip(&self, i: usize, bundle_hop: usize, k: usize) -> SimDuration {
        let sc = self.sc;
        let path = &sc.flows()[i].path;
        let others = path
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != bundle_hop)
            .map(|(_, h)| *h)
            .collect::<Vec<_>>();
        let member = sc.links()[path[bundle_hop].link]
            .bundle
            .as_ref()
            .map_or(SimDuration::ZERO, |b| b.members[k].delay);
        sc.round_trip(&others) + member + member
    }

    /// The index into `member_links` of bundle link `link`'s member links, built on first use.
    fn member_links_of(&mut self, link: usize) -> Result<usize, RunError> {
        if let Some(i) = self.member_links.iter().position(|m| m.link == link) {
            return Ok(i);
        }
        let sc = self.sc;
        let l = &sc.links()[link];
        let Some(b) = &l.bundle else {
            return Err(RunError::Conservation(format!(
                "link {} carries Multipath TCP subflows but is not a bundle",
                l.name
            )));
        };
        let mut dirs = Vec::with_capacity(b.members.len());
        for k in 0..b.members.len() {
            let mut pair = [0u32; 2];
            for (slot, forward) in [(0, true), (1, false)] {
                let dir = member_link_dir(sc.seed(), link, l, forward, k)?;
                pair[slot] = self.dirs.len() as u32;
                self.dirs.push(Dir {
                    link: dir,
                    timer: Timer::default(),
                    link_index: link as u32,
                    forward,
                    depart_taps: Vec::new(),
                    arrive_taps: Vec::new(),
                    traced_queue: (0, 0),
                });
            }
            dirs.push(pair);
        }
        self.member_links.push(MemberLinks { link, dirs });
        Ok(self.member_links.len() - 1)
    }

    /// A subflow of scenario flow `i` over member `k` of `member_links[links]`: established
    /// from the start, or (`handshake`, a subflow reopened after a redial) opening with a SYN.
    fn new_subflow(
        &self,
        i: usize,
        links: usize,
        bundle_hop: usize,
        k: usize,
        handshake: bool,
    ) -> Flow {
        let sc = self.sc;
        let f = &sc.flows()[i];
        let tcp = &f.tcp;
        // Written by the connection level chunk by chunk, as a relay writes.
        let (app, source) = App::new(f, false, sc.seed());
        let sender_config = tcp.sender_config(source);
        let receiver_config = tcp.receiver_config(false);
        let negotiated =
            Negotiated::without_handshake(&tcp.options, &tcp.options, tcp.receive_buffer_bytes);
        let (sender, receiver) = super::endpoints(
            tcp,
            &negotiated,
            (&sender_config, &receiver_config),
            handshake || tcp.handshake,
            sc.round_trip(&f.path),
        );
        let member = self.member_links[links].dirs[k];
        let dir_of = |h: crate::scenario::Hop, at: usize| {
            if at == bundle_hop {
                member[usize::from(!h.forward)]
            } else {
                dir_index(h) as u32
            }
        };
        let path = (0..f.path.len()).map(|j| dir_of(f.path[j], j)).collect();
        let ack_path = (0..f.path.len())
            .rev()
            .map(|j| dir_of(f.path[j].reversed(), j))
            .collect();
        let member_bps = sc.links()[f.path[bundle_hop].link]
            .bundle
            .as_ref()
            .map_or(0, |b| b.members[k].rate.bps());
        Flow {
            spec: i as u32,
            segment: k as u32,
            relay_in: None,
            relay_out: None,
            app,
            sender,
            receiver,
            negotiated,
            sender_timer: Timer::default(),
            receiver_timer: Timer::default(),
            path,
            ack_path,
            bottleneck_bps: member_bps,
            counts: ConnCounts::default(),
            traced: Traced {
                cwnd: (0, 0, 0),
                una: 0,
                rtt_samples: 0,
                rto: 0,
                goodput_next: grid_at_or_after(self.now.max(f.start), sc.trace().goodput_interval),
            },
            sub: None,
        }
    }

    /// Puts member `k`'s coupled controller in place once its subflow is established.
    fn install_coupling(&mut self, m: usize, k: usize) {
        let rt = &self.mptcp[m];
        let mem = &rt.members[k];
        let c = mem.conn as usize;
        if mem.coupled
            || rt.coupling == Coupling::None
            || self.flows[c].sender.state() != State::Established
        {
            return;
        }
        let s = &self.flows[c].sender;
        let init = ControllerInit {
            smss_bytes: s.smss_bytes(),
            initial_window_bytes: s.cwnd_bytes(),
        };
        let cc = Coupled::new(rt.coupling, k, rt.group.clone(), &init);
        self.flows[c].sender.set_controller(Box::new(cc));
        self.mptcp[m].members[k].coupled = true;
    }

    /// Whether connection `f` is a closed subflow: it sends nothing more.
    pub(super) fn mptcp_closed(&self, f: usize) -> bool {
        self.flows[f].sub.is_some_and(|(m, k)| {
            let mem = &self.mptcp[m as usize].members[k as usize];
            mem.conn as usize != f || mem.closed
        })
    }

    /// The flow's application starts (the Start event of its first subflow): every subflow
    /// starts, and the scheduler fills them.
    pub(super) fn mptcp_start(&mut self, m: usize) {
        self.mptcp[m].started = true;
        for k in 0..self.mptcp[m].members.len() {
            self.start_subflow(m, k);
        }
        self.mptcp_pump(m);
    }

    /// An unbounded source stops (its Stop event): the stream ends at what it handed to the
    /// subflows, finished once that is read.
    pub(super) fn mptcp_stop(&mut self, m: usize) {
        let now = self.now;
        let rt = &mut self.mptcp[m];
        if !rt.writing {
            return;
        }
        rt.writing = false;
        let end = rt.tx.next_dsn();
        rt.tx.end_at(end);
        rt.size_bytes = end;
        if rt.finish.is_none() && rt.read_bytes >= rt.size_bytes {
            rt.finish = Some(rt.last_read.unwrap_or(now));
            self.unfinished -= 1;
        }
    }

    fn start_subflow(&mut self, m: usize, k: usize) {
        let mem = &self.mptcp[m].members[k];
        if mem.closed {
            return;
        }
        let c = mem.conn as usize;
        if !self.flows[c].app.started() {
            self.flows[c].app.start();
        }
        // A connecting subflow sends its SYN.
        self.transmit(c);
    }

    /// Maps chunks onto the subflows the scheduler picks while any has room and there is data
    /// (within the connection's send buffer); then tells each subflow whether that buffer is
    /// what keeps it idle.
    fn mptcp_pump(&mut self, m: usize) {
        if !self.mptcp[m].started {
            return;
        }
        self.mptcp_map_chunks(m);
        self.mark_send_buffer_starved(m);
    }

    /// Maps chunks onto the subflows the scheduler picks while any has room and the
    /// connection has data it may send; with Linux's scheduler, bursts into the picked
    /// subflow's send queue (`__mptcp_push_pending`). Arms the connection-level timer if data
    /// went out and it is not running.
    fn mptcp_map_chunks(&mut self, m: usize) {
        let linux = self.mptcp[m].scheduler.kind() == crate::mptcp::SchedulerKind::Linux;
        let mut pushed = false;
        loop {
            if linux && !self.mptcp[m].tx.has_data(1) {
                break;
            }
            let mut views = std::mem::take(&mut self.mptcp[m].views);
            views.clear();
            for mem in &self.mptcp[m].members {
                views.push(self.subflow_view(m, mem));
            }
            // `mptcp_subflow_get_send` takes the timer's interval from the active subflows.
            self.set_rtx_interval(m, &views);
            let rt = &mut self.mptcp[m];
            let room = rt.tx.window_room();
            let pick = rt.scheduler.pick_burst(&views, room);
            rt.views = views;
            let Some((pick, burst)) = pick else { break };
            if let (Pick::One(k), Some(burst)) = (&pick, burst) {
                if self.push_burst(m, *k, burst) == 0 {
                    break;
                }
                pushed = true;
                continue;
            }
            let rt = &mut self.mptcp[m];
            let targets: &[usize] = match &pick {
                Pick::One(k) => std::slice::from_ref(k),
                Pick::All(ks) => ks,
            };
            let smss = targets
                .iter()
                .map(|&k| rt.views[k].smss_bytes)
                .min()
                .unwrap_or(1);
            let Some(chunk) = rt.tx.next_chunk(smss) else {
                break;
            };
            pushed = true;
            let len = chunk.dsn.end - chunk.dsn.start;
            for (j, &k) in targets.iter().enumerate() {
                let rt = &mut self.mptcp[m];
                if j > 0 {
                    rt.tx.note_copy(&chunk.dsn);
                }
                self.write_to_subflow(m, k, chunk.dsn.clone(), len);
            }
        }
        let rt = &self.mptcp[m];
        if pushed && rt.retransmit_timer && !rt.rtx.pending() {
            self.reset_rtx_timer(m);
        }
    }

    /// Maps DSN range `dsn` (`len` bytes) onto member `k`'s subflow and lets it send.
    fn write_to_subflow(&mut self, m: usize, k: usize, dsn: std::ops::Range<u64>, len: u64) {
        let mem = &mut self.mptcp[m].members[k];
        mem.map.push(dsn);
        mem.used = true;
        let c = mem.conn as usize;
        let fl = &mut self.flows[c];
        fl.app.relay_write(&mut fl.sender, len);
        self.transmit(c);
    }

    /// `__subflow_push_pending`: whole send-queue fragments into member `k`'s subflow, however
    /// full its window, until `burst_bytes` are spent, its own send buffer is full or it is no
    /// longer usable; returns the bytes pushed.
    fn push_burst(&mut self, m: usize, k: usize, burst_bytes: u64) -> u64 {
        let mut pushed = 0u64;
        loop {
            // One fragment, in segment-sized chunks (its skbs).
            loop {
                let c = self.mptcp[m].members[k].conn as usize;
                let smss = self.flows[c].sender.smss_bytes();
                let Some(chunk) = self.mptcp[m].tx.next_chunk_in_frag(smss) else {
                    return pushed;
                };
                let len = chunk.dsn.end - chunk.dsn.start;
                let at_frag_end = chunk.dsn.end == linux::frag_end(chunk.dsn.start);
                self.write_to_subflow(m, k, chunk.dsn, len);
                pushed += len;
                if at_frag_end {
                    break;
                }
            }
            let view = self.subflow_view(m, &self.mptcp[m].members[k]);
            // `mptcp_set_timeout` after each fragment.
            let mut views = std::mem::take(&mut self.mptcp[m].views);
            views.clear();
            for mem in &self.mptcp[m].members {
                views.push(self.subflow_view(m, mem));
            }
            self.set_rtx_interval(m, &views);
            self.mptcp[m].views = views;
            if pushed >= burst_bytes || !view.memory_free || !view.usable {
                return pushed;
            }
        }
    }

    /// `mptcp_set_timeout`: the connection-level timer's interval from the usable subflows'
    /// own timers.
    fn set_rtx_interval(&mut self, m: usize, views: &[SubflowView]) {
        let now = self.now;
        let flows = &self.flows;
        let rt = &mut self.mptcp[m];
        if !rt.retransmit_timer {
            return;
        }
        let remaining = rt.members.iter().zip(views).map(|(mem, v)| {
            // `mptcp_timeout_from_subflow`: a subflow counting silent expiries leaves the
            // interval to the others.
            if !v.usable || mem.stale.count() != 0 {
                return None;
            }
            let s = &flows[mem.conn as usize].sender;
            s.next_timeout().map(|t| t.saturating_since(now))
        });
        rt.rtx.set_interval(remaining);
    }

    /// `mptcp_reset_rtx_timer`: the connection-level timer runs from now for its interval.
    fn reset_rtx_timer(&mut self, m: usize) {
        let at = self.mptcp[m].rtx.reset(self.now);
        self.queue
            .push(at, super::Event::MptcpTimer { conn: m as u32 });
    }

    /// The connection-level timer expired (`mptcp_retransmit_timer`, `__mptcp_retrans`): the
    /// head of the unacknowledged data goes again on a subflow with nothing outstanding, if
    /// one is usable; the timer runs again while anything written is unacknowledged; pending
    /// data is pushed.
    pub(super) fn mptcp_rtx_expired(&mut self, m: usize) {
        let now = self.now;
        if !self.mptcp[m].rtx.fire(now) || !self.mptcp[m].started {
            return;
        }
        self.check_stale(m);
        let views: Vec<SubflowView> = self.mptcp[m]
            .members
            .iter()
            .map(|mem| self.subflow_view(m, mem))
            .collect();
        let lingers: Vec<_> = views.iter().map(SubflowView::linger).collect();
        let idle = linux::pick_retrans(&lingers);
        let head = self.mptcp[m].tx.head_fragment();
        if let (Some(k), Some(head)) = (idle, head.clone()) {
            let smss = views[k].smss_bytes.max(1);
            let mut at = head.start;
            while at < head.end {
                let end = head.end.min(at + smss);
                self.write_to_subflow(m, k, at..end, end - at);
                at = end;
            }
            let rt = &mut self.mptcp[m];
            rt.tx.note_resent(&head);
            rt.rtx.note_retransmission();
        }
        // `reset_timer`: unless a push (the stale check's) armed it already.
        let rt = &self.mptcp[m];
        if (head.is_some() || !rt.tx.all_acknowledged()) && !rt.rtx.pending() {
            self.reset_rtx_timer(m);
        }
        self.mptcp_pump(m);
    }

    /// `mptcp_pm_chk_stale`, at each expiry of the connection-level timer: each open subflow
    /// with data outstanding or queued counts the expiry ([`StaleState`]); one silent over more
    /// than `stale_loss_cnt` of them is marked stale if another open subflow is not losing,
    /// and the send queue is rewound and pushed onto the others.
    fn check_stale(&mut self, m: usize) {
        for k in 0..self.mptcp[m].members.len() {
            let mem = &self.mptcp[m].members[k];
            // `__mptcp_subflow_active` (the stale flag aside) and not
            // `tcp_rtx_and_write_queues_empty`.
            if !self.subflow_open(mem) || self.subflow_queued_bytes(mem) == 0 {
                continue;
            }
            let limit = self.mptcp[m].stale_loss_count;
            if !self.mptcp[m].members[k].stale.on_expiry(limit) {
                continue;
            }
            let rt = &self.mptcp[m];
            let alternative = rt.members.iter().enumerate().any(|(j, other)| {
                j != k && self.subflow_open(other) && other.stale.an_alternative(limit)
            });
            if !alternative {
                continue;
            }
            let rt = &mut self.mptcp[m];
            rt.members[k].stale.mark_stale();
            rt.stale_marks += 1;
            rt.tx.rewind_to_data_ack();
            self.mptcp_pump(m);
        }
    }

    /// A subflow whose window has room while the connection's send buffer is full of data
    /// waiting on the others is held back by that buffer (the starvation Linux's subflows show
    /// as `sndbuf_limited`); the scheduler's last views are current after the pump.
    fn mark_send_buffer_starved(&mut self, m: usize) {
        let now = self.now;
        let rt = &self.mptcp[m];
        for (k, mem) in rt.members.iter().enumerate() {
            let Some(view) = rt.views.get(k) else {
                continue;
            };
            let starved = view.usable
                && view.room_bytes >= view.smss_bytes.max(1)
                && rt.tx.buffer_full(view.smss_bytes);
            self.flows[mem.conn as usize]
                .sender
                .set_writer_blocked(now, starved);
        }
    }

    /// Whether member `mem`'s subflow may carry data, stale or not (`__mptcp_subflow_active`):
    /// its member up, the subflow not closed and established.
    fn subflow_open(&self, mem: &Member) -> bool {
        mem.up && !mem.closed && self.flows[mem.conn as usize].sender.state() == State::Established
    }

    /// Bytes in member `mem`'s subflow's send queue, sent and not acknowledged or not yet sent
    /// (`sk_wmem_queued`).
    fn subflow_queued_bytes(&self, mem: &Member) -> u64 {
        let s = &self.flows[mem.conn as usize].sender;
        s.app_limit_bytes().unwrap_or(0).saturating_sub(s.snd_una())
    }

    /// Member `mem`'s subflow of connection `m` as the scheduler sees it.
    fn subflow_view(&self, m: usize, mem: &Member) -> SubflowView {
        let s = &self.flows[mem.conn as usize].sender;
        // `mptcp_subflow_active`: open, and not stale.
        let usable = self.subflow_open(mem) && !mem.stale.is_stale();
        let unsent = s.app_limit_bytes().unwrap_or(0).saturating_sub(s.snd_max());
        let room = s
            .effective_cwnd_bytes()
            .saturating_sub(s.in_flight_bytes())
            .saturating_sub(unsent);
        let srtt_ns = s.rtt().srtt().map(|d| d.as_nanos());
        let pacing_srtt_ns = srtt_ns.or(Some(mem.handshake_rtt_ns));
        let queued_bytes = self.subflow_queued_bytes(mem);
        let memory_free = self.mptcp[m]
            .subflow_send_buffer
            .is_none_or(|b| queued_bytes < b);
        SubflowView {
            usable,
            room_bytes: room,
            smss_bytes: s.smss_bytes(),
            srtt_ns,
            queued_bytes,
            pacing_bytes_per_s: linux::pacing_rate_bytes_per_s(
                s.cwnd_bytes(),
                s.cc().metrics().ssthresh_bytes,
                s.in_flight_bytes(),
                pacing_srtt_ns,
            ),
            memory_free,
        }
    }

    /// A subflow ACK left its receiver as packet `id`: it carries the current DATA_ACK.
    pub(super) fn mptcp_note_ack(&mut self, f: usize, id: u64) {
        let Some((m, _)) = self.flows[f].sub else {
            return;
        };
        let Ok(slot) = usize::try_from(id) else {
            return;
        };
        if slot >= self.slab.slots.len() {
            // Never put on a link (`inject` refused it).
            return;
        }
        let data_ack = self.mptcp[m as usize].rx.data_ack();
        if self.mptcp_dack.len() <= slot {
            self.mptcp_dack.resize(slot + 1, 0);
        }
        self.mptcp_dack[slot] = data_ack;
    }

    /// Subflow ACK `id` reaches its sender: the DATA_ACK it carries.
    pub(super) fn mptcp_ack_arrives(&mut self, f: usize, id: u64) {
        let Some((m, k)) = self.flows[f].sub else {
            return;
        };
        let m = m as usize;
        // The subflow heard an ACK (its `rcv_tstamp` moves): not stale any more.
        if !self.mptcp_closed(f) {
            self.mptcp[m].members[k as usize].stale.heard_ack();
        }
        let Some(&data_ack) = self.mptcp_dack.get(id as usize) else {
            return;
        };
        let rt = &mut self.mptcp[m];
        let before = rt.tx.data_ack();
        rt.tx.on_data_ack(data_ack);
        // `__mptcp_clean_una`: the DATA_ACK moved; the timer stops once everything written is
        // acknowledged, else runs again from now.
        if rt.retransmit_timer && rt.tx.data_ack() > before {
            if rt.tx.all_acknowledged() {
                rt.rtx.stop();
            } else {
                self.reset_rtx_timer(m);
            }
        }
    }

    /// After a subflow's sender took an ACK: its coupled controller once established, the
    /// mappings nobody can ask for again, and more data for the room it made.
    pub(super) fn mptcp_after_ack(&mut self, f: usize) {
        let Some((m, k)) = self.flows[f].sub else {
            return;
        };
        let (m, k) = (m as usize, k as usize);
        if self.mptcp_closed(f) {
            return;
        }
        self.install_coupling(m, k);
        let una = self.flows[f].sender.snd_una();
        let rt = &mut self.mptcp[m];
        let data_ack = rt.tx.data_ack();
        rt.members[k].map.release(una, data_ack);
        self.mptcp_pump(m);
    }

    /// Subflow `f`'s receiver delivered its bytes `[before, after)`: to the connection level.
    pub(super) fn mptcp_delivered(&mut self, f: usize, before: u64, after: u64) {
        let Some((m, k)) = self.flows[f].sub else {
            return;
        };
        if self.mptcp_closed(f) {
            // A reset subflow's late bytes: discarded, their data sent again elsewhere.
            return;
        }
        let now = self.now;
        let (m, k) = (m as usize, k as usize);
        let rt = &mut self.mptcp[m];
        let (map, rx) = (&rt.members[k].map, &mut rt.rx);
        let mut newly = 0;
        let complete = map.translate(before..after, |r| newly += rx.on_data(r));
        if !complete {
            self.fail(format!(
                "subflow {f}: bytes {before}..{after} delivered without a mapping"
            ));
            return;
        }
        if newly > 0 {
            let (spec, before) = (rt.spec as usize, rt.read_bytes);
            if self.tr.goodput {
                // The flow's goodput is the connection level's, under its own connection.
                let own = self.flow_conns[spec].start;
                self.fill_goodput(own, now, false, before);
            }
            let rt = &mut self.mptcp[m];
            rt.read_bytes += newly;
            rt.last_read = Some(now);
            if rt.finish.is_none() && rt.read_bytes >= rt.size_bytes {
                rt.finish = Some(now);
                self.unfinished -= 1;
            }
        }
    }

    /// The bytes connection `f`'s goodput trace counts: its application's, the connection
    /// level's for a Multipath TCP flow's own connection, none for its other subflows.
    pub(super) fn goodput_delivered(&self, f: usize) -> Option<u64> {
        let Some((m, _)) = self.flows[f].sub else {
            return Some(self.flows[f].app.read_bytes());
        };
        let rt = &self.mptcp[m as usize];
        (self.flow_conns[rt.spec as usize].start == f).then_some(rt.read_bytes)
    }

    /// The bundle driver changed member `member` of `link`: its own links follow, and the
    /// subflows over it close or open.
    pub(super) fn mptcp_member_change(&mut self, link: usize, member: u32, change: MemberChange) {
        let Some(l) = self.member_links.iter().position(|ml| ml.link == link) else {
            return;
        };
        let now = self.now;
        let k = member as usize;
        let pair = self.member_links[l].dirs[k];
        for d in pair {
            if let Some(b) = self.dirs[d as usize].link.bundle_mut() {
                match change {
                    MemberChange::CarrierUp => b.member_up(now, 0),
                    MemberChange::CarrierLost => b.member_lost(now, 0),
                    MemberChange::Usable(u) => b.set_usable(now, 0, u),
                }
            }
        }
        for d in pair {
            self.take_departures(d as usize);
            self.after_link(d as usize);
        }
        let MemberChange::Usable(up) = change else {
            return;
        };
        for m in 0..self.mptcp.len() {
            if self.mptcp[m].links != l {
                continue;
            }
            if k == 0 && self.mptcp[m].keep_first_subflow {
                self.first_member_change(m, up);
            } else if up {
                self.open_subflow(m, k);
            } else {
                self.close_subflow(m, k);
            }
        }
    }

    /// Member 0 went down or came back under `keep_first_subflow`: its subflow, the
    /// connection's first, stays open through the drop (its own retransmissions, backing off,
    /// carry it over the redial), as the emulator leaves it to the kernel: Linux's in-kernel
    /// path manager closes a subflow when its `subflow` endpoint is removed, and the first
    /// subflow's address (the node's own) is not one.
    fn first_member_change(&mut self, m: usize, up: bool) {
        let now = self.now;
        if up && !self.mptcp[m].members[0].up {
            // Up for the first time: its subflow opens as any member's.
            self.open_subflow(m, 0);
            return;
        }
        let mem = &mut self.mptcp[m].members[0];
        let was_up = mem.up_spans.last().is_some_and(|s| s.1.is_none());
        if was_up == up {
            return;
        }
        // The subflow stays usable to the scheduler, as the kernel's does: nothing tells it
        // the path is gone. Only the member's up and down spans follow.
        if up {
            mem.up_spans.push((now, None));
            let c = mem.conn as usize;
            self.transmit(c);
            self.mptcp_pump(m);
        } else if let Some(span) = mem.up_spans.last_mut() {
            span.1 = Some(now);
        }
    }

    /// Member `k` left: its subflow is closed and its unacknowledged data reinjected.
    fn close_subflow(&mut self, m: usize, k: usize) {
        let now = self.now;
        let rt = &mut self.mptcp[m];
        let mem = &mut rt.members[k];
        mem.up = false;
        if let Some(span) = mem.up_spans.last_mut() {
            span.1.get_or_insert(now);
        }
        if mem.closed {
            return;
        }
        mem.closed = true;
        match rt.close_resends {
            CloseResends::Subflow => rt.tx.reinject_from(&mem.map),
            // `__mptcp_close_ssk` with `MPTCP_CF_PUSH`: the whole send queue again, the
            // closed subflow's data within it; even with no subflow left, for the next.
            CloseResends::Queue => {
                rt.tx.rewind_to_data_ack();
            }
        }
        mem.map = SubflowMap::new();
        mem.stale = StaleState::default();
        if let Ok(mut g) = rt.group.lock() {
            g.remove(k);
        }
        self.mptcp_pump(m);
    }

    /// Member `k` is back (or up for the first time): a subflow over it, a new one with its
    /// own handshake if the last was closed or used.
    fn open_subflow(&mut self, m: usize, k: usize) {
        let now = self.now;
        let mem = &mut self.mptcp[m].members[k];
        mem.up = true;
        mem.up_spans.push((now, None));
        if mem.closed || mem.used {
            let (i, links, hop) = {
                let rt = &self.mptcp[m];
                (rt.spec as usize, rt.links, rt.bundle_hop)
            };
            let mut flow = self.new_subflow(i, links, hop, k, true);
            flow.sub = Some((m as u32, k as u32));
            self.flows.push(flow);
            let c = (self.flows.len() - 1) as u32;
            let mem = &mut self.mptcp[m].members[k];
            let old = std::mem::replace(&mut mem.conn, c);
            mem.history.push(old);
            mem.closed = false;
            mem.used = false;
            mem.coupled = false;
            mem.map = SubflowMap::new();
            mem.stale = StaleState::default();
            self.mptcp[m].scheduler.forget(k);
        }
        if self.mptcp[m].started {
            self.start_subflow(m, k);
            self.mptcp_pump(m);
        }
    }

    /// Conservation at the connection level: every byte read once and in order, never more
    /// than the application wrote.
    pub(super) fn check_mptcp(&mut self) {
        for m in 0..self.mptcp.len() {
            let rt = &self.mptcp[m];
            let name = &self.sc.flows()[rt.spec as usize].name;
            let problem = if rt.read_bytes != rt.rx.data_ack() {
                Some(format!(
                    "read {} bytes but the DATA_ACK is {}",
                    rt.read_bytes,
                    rt.rx.data_ack()
                ))
            } else if rt.read_bytes > rt.size_bytes {
                Some(format!(
                    "read {} bytes of the {} written",
                    rt.read_bytes, rt.size_bytes
                ))
            } else if rt.finish.is_some() != (rt.read_bytes == rt.size_bytes) {
                Some(format!(
                    "finished {} with {} bytes read of {}",
                    rt.finish.is_some(),
                    rt.read_bytes,
                    rt.size_bytes
                ))
            } else {
                None
            };
            if let Some(p) = problem {
                let msg = format!("Multipath TCP flow \"{name}\": {p}");
                self.fail(msg);
            }
        }
    }

    /// The name of subflow connection `c`: `flow/member<k>`, `#n` for the n-th reopened.
    pub(super) fn subflow_name(&self, c: usize) -> Option<String> {
        let (m, k) = self.flows[c].sub?;
        let rt = &self.mptcp[m as usize];
        let mem = &rt.members[k as usize];
        let name = &self.sc.flows()[rt.spec as usize].name;
        let nth = mem
            .history
            .iter()
            .chain(std::iter::once(&mem.conn))
            .position(|&x| x as usize == c)
            .unwrap_or(0);
        Some(if nth == 0 {
            format!("{name}/member{k}")
        } else {
            format!("{name}/member{k}#{nth}")
        })
    }

    /// The summary of scenario flow `i` if it is a Multipath TCP flow: the connection level's
    /// figures, counters summed over every subflow, and each member's subflows.
    pub(super) fn mptcp_flow_summary(
        &self,
        i: usize,
    ) -> Option<(FlowSummary, Option<(SimTime, SimTime)>)> {
        let rt = self.mptcp.iter().find(|r| r.spec as usize == i)?;
        let sc = self.sc;
        let spec = &sc.flows()[i];
        let nodes = sc.nodes();
        let conns: Vec<usize> = rt
            .members
            .iter()
            .flat_map(|mem| mem.history.iter().chain(std::iter::once(&mem.conn)))
            .map(|&c| c as usize)
            .collect();
        let (mut s, _) = self.conn_summary(rt.members[0].conn as usize);
        let start = rt.start;
        // As a TCP flow's (`App::active_end_with`): a bulk source to its last byte, an
        // unbounded one to its stop at least.
        let active_end = match (rt.finish, &spec.app) {
            (Some(t), AppSpec::Bulk { .. }) => t,
            (Some(t), _) => t.max(spec.stop.unwrap_or(t)),
            (None, _) => self.sim_end,
        };
        s.name = spec.name.clone();
        s.from = nodes[spec.from].clone();
        s.to = nodes[spec.to].clone();
        s.start_s = start.as_secs_f64();
        s.finished = rt.finish.is_some();
        s.finish_s = rt.finish.map(SimTime::as_secs_f64);
        s.transfer_time_s = rt.finish.map(|t| t.saturating_since(start).as_secs_f64());
        s.delivered_bytes = rt.read_bytes;
        s.app_bytes = (!rt.writing).then_some(rt.size_bytes);
        s.goodput_bps = goodput_bps(rt.read_bytes, active_end.saturating_since(start).as_nanos());
        // The members' summed rate: what the subflows together could carry.
        s.bottleneck_bps = rt
            .members
            .iter()
            .map(|mem| self.flows[mem.conn as usize].bottleneck_bps)
            .sum();
        s.normalized_goodput = normalized_goodput(s.goodput_bps, s.bottleneck_bps);
        let summed = |get: &dyn Fn(&Flow) -> u64| conns.iter().map(|&c| get(&self.flows[c])).sum();
        s.segments_sent = Some(summed(&|fl| fl.sender.stats().segments_sent));
        s.bytes_sent = Some(summed(&|fl| fl.sender.stats().bytes_sent));
        s.retransmissions = summed(&|fl| fl.sender.stats().retransmitted_segments);
        s.retransmitted_bytes = Some(summed(&|fl| fl.sender.stats().retransmitted_bytes));
        s.timeouts = summed(&|fl| fl.sender.stats().timeouts);
        s.fast_retransmits = Some(summed(&|fl| fl.sender.stats().fast_retransmits));
        s.window_probes = Some(summed(&|fl| fl.sender.stats().window_probes));
        s.data_segments_delivered = summed(&|fl| fl.counts.data_delivered);
        s.acks_sent = summed(&|fl| fl.counts.acks_sent);
        s.acks_delivered = Some(summed(&|fl| fl.counts.acks_delivered));
        let mut drops = [0u64; crate::links::link::N_DROP_CAUSES];
        for &c in &conns {
            for (d, n) in drops.iter_mut().zip(self.flows[c].counts.drops) {
                *d += n;
            }
        }
        s.drops = cause_map(drops);
        // What limited the subflows, in subflow-seconds summed over them.
        let mut nanos = [0u64; 5];
        for &c in &conns {
            for (sum, ns) in nanos
                .iter_mut()
                .zip(self.flows[c].sender.limited_nanos(active_end))
            {
                *sum += ns;
            }
        }
        let (limited_s, limited_by) = super::summary::limit_fields(nanos);
        s.limited_s = Some(limited_s);
        s.limited_by = limited_by;
        let link_name = &sc.links()[spec.path[rt.bundle_hop].link].name;
        s.subflows = rt
            .members
            .iter()
            .enumerate()
            .map(|(k, mem)| self.subflow_summary(link_name, k, mem, active_end))
            .collect();
        s.mptcp = Some(MptcpSummary {
            scheduler: rt.scheduler.kind().name(),
            coupling: rt.coupling.name(),
            reinjected_bytes: rt.tx.resent_bytes(),
            duplicate_bytes: rt.rx.duplicate_bytes(),
            max_out_of_order_bytes: rt.rx.max_ooo_bytes(),
            timer_retransmissions: rt.retransmit_timer.then(|| rt.rtx.retransmissions()),
            stale_subflows: rt.retransmit_timer.then_some(rt.stale_marks),
        });
        let active = rt.started.then_some((start, active_end));
        Some((s, active))
    }

    fn subflow_summary(
        &self,
        link_name: &str,
        k: usize,
        mem: &Member,
        active_end: SimTime,
    ) -> SubflowSummary {
        let conns = || {
            mem.history
                .iter()
                .chain(std::iter::once(&mem.conn))
                .map(|&c| &self.flows[c as usize])
        };
        let end = self.sim_end;
        let secs = SimTime::as_secs_f64;
        let up: Vec<[f64; 2]> = mem
            .up_spans
            .iter()
            .filter(|(a, _)| *a <= end)
            .map(|&(a, b)| [secs(a), secs(b.unwrap_or(end).min(end))])
            .collect();
        let mut down = Vec::new();
        let mut at = 0.0;
        for span in &up {
            if span[0] > at {
                down.push([at, span[0]]);
            }
            at = span[1];
        }
        if at < secs(end) {
            down.push([at, secs(end)]);
        }
        let mut nanos = [0u64; 5];
        for fl in conns() {
            for (sum, ns) in nanos.iter_mut().zip(fl.sender.limited_nanos(active_end)) {
                *sum += ns;
            }
        }
        SubflowSummary {
            limited_s: Some(super::summary::limit_fields(nanos).0),
            route: format!("{link_name}/member{k}"),
            member: k as u32,
            established: conns()
                .filter(|fl| fl.sender.state() == State::Established || fl.app.read_bytes() > 0)
                .count() as u32,
            bytes_sent: conns().map(|fl| fl.sender.stats().bytes_sent).sum(),
            bytes: conns().map(|fl| fl.app.read_bytes()).sum(),
            retransmissions: conns()
                .map(|fl| fl.sender.stats().retransmitted_segments)
                .sum(),
            timeouts: Some(conns().map(|fl| fl.sender.stats().timeouts).sum()),
            up_intervals_s: up,
            down_intervals_s: down,
        }
    }
}
