//! Split-connection relays at run time (seed 002's relay entity; a PEP in today's words).
//!
//! A flow with relays runs as one TCP connection per segment of its route: the source's
//! connection ends at the first relay, whose receiver reads on demand
//! ([`crate::tcp::receiver::ReceiverConfig::reads_on_demand`]); the relay moves in-order bytes
//! from that receiver into the sender of the next connection, as long as it holds fewer than
//! its buffer's bytes (read and not yet acknowledged downstream, what a proxy keeps in its
//! outgoing socket). When its buffer is full it stops reading, the unread bytes fill the
//! incoming receive buffer and the window advertised upstream closes: back-pressure by TCP's
//! own flow control, nothing else. The relay pumps when data reaches its receiver and when an
//! ACK frees room downstream; its outgoing connection stops writing once the incoming one has
//! finished and every byte has been moved.
//!
//! Connections are numbered in flow order, so without split flows connection `i` is flow `i`.
//! Conservation across a relay: every byte read upstream was written downstream exactly once,
//! never more than the buffer is held, and the receiver read no byte it had not delivered.

use std::borrow::Cow;
use std::ops::Range;

use super::{cause_map, goodput_bps, normalized_goodput, FlowSummary, RelaySummary, World};
use crate::apps::short_flows::{self, Arrival};
use crate::scenario::{AppSpec, Hop, Scenario, TcpSpec};
use crate::time::SimTime;

/// A relay between connection `upstream` (whose receiver it reads) and `downstream` (whose
/// sender it writes).
#[derive(Clone, Debug)]
pub(super) struct Relay {
    pub node: usize,
    pub upstream: u32,
    pub downstream: u32,
    pub buffer_bytes: u64,
    /// Bytes read upstream and written downstream.
    pub moved_bytes: u64,
    pub max_held_bytes: u64,
    pub max_unread_bytes: u64,
}

/// What the engine builds one connection from.
pub(super) struct ConnPlan<'s> {
    /// Index of the scenario flow, and the connection's place in it.
    pub spec: usize,
    pub segment: u32,
    /// The flow's own connection (its application writes into it).
    pub first: bool,
    pub tcp: &'s TcpSpec,
    /// Its route (a request/response flow's response connection: the flow's, reversed).
    pub path: Cow<'s, [Hop]>,
    pub relay_in: Option<u32>,
    pub relay_out: Option<u32>,
    /// A connection of a short-flow class: its arrival and size (`apps::short_flows`).
    pub arrival: Option<Arrival>,
}

/// The connections of every flow, the relays joining them, and each flow's connections.
pub(super) fn plan(sc: &Scenario) -> (Vec<ConnPlan<'_>>, Vec<Relay>, Vec<Range<usize>>) {
    let mut conns = Vec::with_capacity(sc.flows().len());
    let mut relays = Vec::new();
    let mut ranges = Vec::with_capacity(sc.flows().len());
    for (i, f) in sc.flows().iter().enumerate() {
        let first_conn = conns.len();
        if f.app.is_udp() {
            // No TCP connection: `traffic.rs` runs it.
        } else if let AppSpec::RequestResponse(_) = f.app {
            // Requests from the flow's source, responses back on a connection of their own.
            let back: Vec<Hop> = f.path.iter().rev().map(|h| h.reversed()).collect();
            for (k, path) in [Cow::Borrowed(&f.path[..]), Cow::Owned(back)]
                .into_iter()
                .enumerate()
            {
                conns.push(ConnPlan {
                    spec: i,
                    segment: k as u32,
                    // The server's connection is written by the engine as requests arrive
                    // (as a relay's is), and ends when the client stops.
                    first: k == 0,
                    tcp: &f.tcp,
                    path,
                    relay_in: None,
                    relay_out: None,
                    arrival: None,
                });
            }
        } else if let Some(plan) = short_flows::plan_of(sc, i) {
            for (k, a) in plan.into_iter().enumerate() {
                conns.push(ConnPlan {
                    spec: i,
                    segment: k as u32,
                    first: true,
                    tcp: &f.tcp,
                    path: Cow::Borrowed(&f.path),
                    relay_in: None,
                    relay_out: None,
                    arrival: Some(a),
                });
            }
        } else if f.segments.is_empty() {
            conns.push(ConnPlan {
                spec: i,
                segment: 0,
                first: true,
                tcp: &f.tcp,
                path: Cow::Borrowed(&f.path),
                relay_in: None,
                relay_out: None,
                arrival: None,
            });
        } else {
            let n = f.segments.len();
            for (k, seg) in f.segments.iter().enumerate() {
                let c = conns.len() as u32;
                // Relay k sits between connections k and k + 1.
                let relay_in = (k > 0).then(|| (relays.len() - 1) as u32);
                let relay_out = (k + 1 < n).then_some(relays.len() as u32);
                if let Some(r) = relay_out {
                    let spec = &f.relays[k];
                    debug_assert_eq!(r as usize, relays.len());
                    relays.push(Relay {
                        node: spec.node,
                        upstream: c,
                        downstream: c + 1,
                        buffer_bytes: spec.buffer_bytes,
                        moved_bytes: 0,
                        max_held_bytes: 0,
                        max_unread_bytes: 0,
                    });
                }
                conns.push(ConnPlan {
                    spec: i,
                    segment: k as u32,
                    first: k == 0,
                    tcp: &seg.tcp,
                    path: Cow::Borrowed(&seg.path),
                    relay_in,
                    relay_out,
                    arrival: None,
                });
            }
        }
        ranges.push(first_conn..conns.len());
    }
    (conns, relays, ranges)
}

impl World<'_> {
    /// Moves what relay `r` can from its incoming receiver to its outgoing sender, sends the
    /// window update the read earns, and ends the outgoing stream once the incoming one is
    /// finished and drained.
    pub(super) fn pump_relay(&mut self, r: usize) {
        let now = self.now;
        let (up, down, buffer) = {
            let rl = &self.relays[r];
            (
                rl.upstream as usize,
                rl.downstream as usize,
                rl.buffer_bytes,
            )
        };
        let held = self.flows[down].app.held_bytes(&self.flows[down].sender);
        let unread = self.flows[up].receiver.unread_bytes();
        let moved = self.flows[up].receiver.read(buffer.saturating_sub(held));
        {
            let rl = &mut self.relays[r];
            rl.max_unread_bytes = rl.max_unread_bytes.max(unread);
            rl.max_held_bytes = rl.max_held_bytes.max(held + moved);
            rl.moved_bytes += moved;
        }
        if moved > 0 {
            let d = &mut self.flows[down];
            d.app.relay_write(&mut d.sender, moved);
            self.transmit(down);
        }
        if let Some(update) = self.flows[up].receiver.window_update(now) {
            self.send_ack(up, update);
            self.arm_receiver(up);
        }
        let drained =
            self.flows[up].app.finish().is_some() && self.flows[up].receiver.unread_bytes() == 0;
        let d = &mut self.flows[down];
        // The relay closes its outgoing stream: a short last segment held by Nagle goes.
        if drained && d.app.relay_end(&mut d.sender) {
            self.transmit(down);
            self.check_finished(down);
        }
    }

    /// Conservation across every relay.
    pub(super) fn check_relays(&mut self) {
        for r in 0..self.relays.len() {
            let rl = &self.relays[r];
            let up = &self.flows[rl.upstream as usize];
            let down = &self.flows[rl.downstream as usize];
            let read = up.receiver.read_bytes();
            let written = down.sender.app_limit_bytes().unwrap_or(u64::MAX);
            let held = written.saturating_sub(down.sender.snd_una());
            let problem = if read != rl.moved_bytes {
                Some(format!(
                    "read {read} bytes upstream but moved {}",
                    rl.moved_bytes
                ))
            } else if written != rl.moved_bytes || down.app.written_bytes() != rl.moved_bytes {
                Some(format!(
                    "moved {} bytes but wrote {written} downstream",
                    rl.moved_bytes
                ))
            } else if read > up.receiver.delivered_bytes() {
                Some(format!(
                    "read {read} bytes of the {} delivered to it",
                    up.receiver.delivered_bytes()
                ))
            } else if held > rl.buffer_bytes {
                Some(format!(
                    "holds {held} bytes in a buffer of {}",
                    rl.buffer_bytes
                ))
            } else if down.app.finish().is_some()
                && (up.app.finish().is_none() || read != up.app.written_bytes())
            {
                Some(format!(
                    "the outgoing connection finished with {read} bytes read of {} sent",
                    up.app.written_bytes()
                ))
            } else {
                None
            };
            if let Some(p) = problem {
                let node = &self.sc.nodes()[rl.node];
                self.fail(format!("relay at \"{node}\": {p}"));
            }
        }
    }

    /// The name of connection `c`: its flow's, with `#k` for connection k of a split flow.
    pub(super) fn conn_name(&self, c: usize) -> String {
        if let Some(name) = self.subflow_name(c) {
            return name;
        }
        let fl = &self.flows[c];
        let spec = &self.sc.flows()[fl.spec as usize];
        let several = matches!(
            spec.app,
            AppSpec::FlowsPoisson(_) | AppSpec::RequestResponse(_)
        );
        if spec.segments.is_empty() && !several {
            spec.name.clone()
        } else {
            format!("{}#{}", spec.name, fl.segment)
        }
    }

    /// Sender node, receiver node and TCP settings of connection `c`.
    pub(super) fn conn_ends(&self, c: usize) -> (usize, usize, &TcpSpec) {
        let fl = &self.flows[c];
        let spec = &self.sc.flows()[fl.spec as usize];
        match spec.segments.get(fl.segment as usize) {
            Some(seg) => (seg.from, seg.to, &seg.tcp),
            // A request/response flow's responses go back from its destination.
            None if matches!(spec.app, AppSpec::RequestResponse(_)) && fl.segment == 1 => {
                (spec.to, spec.from, &spec.tcp)
            }
            None => (spec.from, spec.to, &spec.tcp),
        }
    }

    /// The summary of scenario flow `i` and its active span: its connection's, or for a split
    /// flow the end-to-end figures with each connection beside them.
    pub(super) fn flow_summary(&self, i: usize) -> (FlowSummary, Option<(SimTime, SimTime)>) {
        if let Some(s) = self.mptcp_flow_summary(i) {
            return s;
        }
        let spec = &self.sc.flows()[i];
        if spec.app.is_udp() {
            let u = self.udp.iter().position(|rt| rt.spec as usize == i);
            return self.udp_summary(u.unwrap_or_default());
        }
        if let AppSpec::FlowsPoisson(_) = spec.app {
            return self.short_flows_summary(i);
        }
        if let AppSpec::RequestResponse(_) = spec.app {
            return self.exchanges_summary(i);
        }
        let range = self.flow_conns[i].clone();
        if range.len() == 1 {
            return self.conn_summary(range.start);
        }
        let nodes = self.sc.nodes();
        let segments: Vec<FlowSummary> = range.clone().map(|c| self.conn_summary(c).0).collect();
        let (first, last) = (&self.flows[range.start], &self.flows[range.end - 1]);
        // The source's connection gives the source's state; the span runs from its start to
        // the last byte at the destination.
        let (mut s, active) = self.conn_summary(range.start);
        let (start, finish) = (first.app.start, last.app.finish());
        let active_end = first.app.active_end_with(finish, self.sim_end);
        s.name = spec.name.clone();
        s.from = nodes[spec.from].clone();
        s.to = nodes[spec.to].clone();
        s.finished = finish.is_some();
        s.finish_s = finish.map(SimTime::as_secs_f64);
        s.transfer_time_s = finish.map(|t| t.saturating_since(start).as_secs_f64());
        s.delivered_bytes = last.app.read_bytes();
        s.goodput_bps = goodput_bps(
            last.app.read_bytes(),
            active_end.saturating_since(start).as_nanos(),
        );
        s.bottleneck_bps = segments.iter().map(|g| g.bottleneck_bps).min().unwrap_or(0);
        s.normalized_goodput = normalized_goodput(s.goodput_bps, s.bottleneck_bps);
        let sum = |get: fn(&FlowSummary) -> u64| segments.iter().map(get).sum::<u64>();
        let sum_of = |get: fn(&FlowSummary) -> Option<u64>| segments.iter().map(get).sum();
        s.segments_sent = sum_of(|g| g.segments_sent);
        s.bytes_sent = sum_of(|g| g.bytes_sent);
        s.retransmissions = sum(|g| g.retransmissions);
        s.retransmitted_bytes = sum_of(|g| g.retransmitted_bytes);
        s.timeouts = sum(|g| g.timeouts);
        s.fast_retransmits = sum_of(|g| g.fast_retransmits);
        s.window_probes = sum_of(|g| g.window_probes);
        s.data_segments_delivered = sum(|g| g.data_segments_delivered);
        s.acks_sent = sum(|g| g.acks_sent);
        s.acks_delivered = sum_of(|g| g.acks_delivered);
        // Over the connections with ECN on; absent if none has it.
        let sum_present = |get: fn(&FlowSummary) -> Option<u64>| {
            segments.iter().filter_map(get).reduce(|a, b| a + b)
        };
        s.ce_marked = sum_present(|g| g.ce_marked);
        s.ecn_reductions = sum_present(|g| g.ecn_reductions);
        let mut drops = [0u64; crate::links::link::N_DROP_CAUSES];
        for c in range.clone() {
            for (d, n) in drops.iter_mut().zip(self.flows[c].counts.drops) {
                *d += n;
            }
        }
        s.drops = cause_map(drops);
        s.relays = self
            .relays
            .iter()
            .filter(|rl| range.contains(&(rl.upstream as usize)))
            .map(|rl| RelaySummary {
                node: nodes[rl.node].clone(),
                buffer_bytes: rl.buffer_bytes,
                relayed_bytes: rl.moved_bytes,
                max_held_bytes: rl.max_held_bytes,
                max_unread_bytes: rl.max_unread_bytes,
                window_updates: self.flows[rl.upstream as usize]
                    .receiver
                    .stats()
                    .window_updates,
            })
            .collect();
        s.segments = segments;
        let active = active.map(|(a, _)| (a, active_end));
        (s, active)
    }
}
