//! The competing-traffic applications at run time (`crate::apps`, issue 30).
//!
//! A UDP flow is a [`UdpRt`]: its source, its sink and its route; the source's datagrams are
//! packets in the slab like TCP's (`InFlight::udp`), offered to the same link directions and
//! queues, dropped and counted the same way, and handed to the sink at the route's end. A UDP
//! flow has no TCP connection (`flow_conns` holds an empty range for it); its index in the
//! trace tables' `flow` column is the number of connections plus its place among the UDP
//! flows. Taps do not record datagrams (a pcap of TCP only).
//!
//! A short-flow class (`flows_poisson`) is planned into one TCP connection per arrival
//! (`relay::plan`), each an ordinary connection of the engine with its handshake; the class's
//! summary gathers them ([`World::short_flows_summary`]).

use super::{
    cause_map, dir_index, goodput_bps, normalized_goodput, Event, FlowSummary, InFlight, World,
};
use crate::apps::metrics::{Percentiles, TrafficSummary};
use std::ops::Range;

use crate::apps::exchange::Exchanges;
use crate::apps::short_flows::{self, Completed, UnloadedPath};
use crate::apps::udp::{self, UdpSink, UdpSource};
use crate::links::link::N_DROP_CAUSES;
use crate::rng::StreamRng;
use crate::scenario::{AppSpec, FlowSpec, Hop, Scenario};
use crate::sched::EventQueue;
use crate::time::SimTime;

/// A UDP flow at run time.
#[derive(Debug)]
pub(super) struct UdpRt {
    /// Index of the scenario flow.
    pub spec: u32,
    pub source: UdpSource,
    pub sink: UdpSink,
    /// Link directions of the route.
    pub path: Vec<u32>,
    pub bottleneck_bps: u64,
    pub drops: [u64; N_DROP_CAUSES],
    pub finished: bool,
}

/// The UDP flows of `sc`, their first sends queued.
pub(super) fn build_udp(sc: &Scenario, queue: &mut EventQueue<Event>, end: SimTime) -> Vec<UdpRt> {
    let mut out = Vec::new();
    for (i, f) in sc.flows().iter().enumerate() {
        let AppSpec::Udp(spec) = f.app else { continue };
        let rng = StreamRng::derive(sc.seed(), &format!("flow:{}:app", f.name));
        let source = UdpSource::new(spec, f.start, f.stop, rng);
        let u = out.len() as u32;
        if let Some(at) = source.poll_at().filter(|&t| t <= end) {
            queue.push(at, Event::Udp { flow: u });
        }
        out.push(UdpRt {
            spec: i as u32,
            source,
            sink: UdpSink::default(),
            path: f.path.iter().map(|&h| dir_index(h)).collect(),
            bottleneck_bps: super::flow_bottleneck_bps(sc, &f.path),
            drops: [0; N_DROP_CAUSES],
            finished: false,
        });
    }
    out
}

/// What [`short_flows::unloaded_fct_s`] needs of flow `f`'s route and settings (public: the
/// emulator computes its slowdowns against the same path).
pub fn unloaded_path(sc: &Scenario, f: &FlowSpec) -> UnloadedPath {
    let per_byte = |hops: &mut dyn Iterator<Item = Hop>| -> f64 {
        hops.map(|h| 8.0 / sc.links()[h.link].direction(h.forward).rate.as_bps_f64())
            .sum()
    };
    UnloadedPath {
        propagation_rtt_s: sc.round_trip(&f.path).as_secs_f64(),
        bottleneck_bps: super::flow_bottleneck_bps(sc, &f.path),
        data_s_per_byte: per_byte(&mut f.path.iter().copied()),
        ack_s_per_byte: per_byte(&mut f.path.iter().map(|h| h.reversed())),
        mss_bytes: f.tcp.options.mss_bytes,
        initial_window_segments: f.tcp.initial_window_segments,
        receive_window_bytes: f.tcp.receive_buffer_bytes,
    }
}

impl World<'_> {
    /// UDP flow `u`'s source is due: its datagram goes on the route's first link, and its
    /// next send is queued (none past the run's end).
    pub(super) fn on_udp_timer(&mut self, u: usize) {
        let now = self.now;
        let Some((seq, payload_bytes)) = self.udp[u].source.on_timer(now) else {
            return;
        };
        let seg = udp::datagram_segment(seq, now, payload_bytes);
        let Some(&first) = self.udp[u].path.first() else {
            self.fail(format!("UDP flow {u} has an empty path"));
            return;
        };
        let id = self.slab.insert(InFlight {
            seg,
            flow: u as u32,
            hop: 0,
            ack: false,
            udp: true,
        });
        self.injected += 1;
        self.offer(first as usize, u64::from(id));
        match self.udp[u].source.poll_at().filter(|&t| t <= self.end) {
            Some(at) => {
                self.queue.push(at, Event::Udp { flow: u as u32 });
            }
            None => self.check_udp_finished(u),
        }
    }

    /// A datagram of UDP flow `u` reaches its receiver.
    pub(super) fn on_udp_arrival(&mut self, u: usize, seg: &crate::tcp::segment::Segment) {
        let (_, sent_at, payload_bytes) = udp::datagram_of(seg);
        self.udp[u]
            .sink
            .on_datagram(self.now, sent_at, payload_bytes);
        self.check_udp_finished(u);
    }

    /// A UDP flow is finished once its source sent its last datagram and every datagram
    /// arrived or was dropped.
    pub(super) fn check_udp_finished(&mut self, u: usize) {
        let rt = &mut self.udp[u];
        let dropped: u64 = rt.drops.iter().sum();
        if !rt.finished
            && rt.source.poll_at().is_none()
            && rt.sink.received() + dropped == rt.source.sent()
        {
            rt.finished = true;
            self.unfinished -= 1;
        }
    }

    /// Conservation of each UDP flow: never more received and dropped than sent.
    pub(super) fn check_udp(&mut self) {
        for u in 0..self.udp.len() {
            let rt = &self.udp[u];
            let dropped: u64 = rt.drops.iter().sum();
            if rt.sink.received() + dropped > rt.source.sent() {
                let msg = format!(
                    "UDP flow \"{}\": {} datagrams received and {dropped} dropped of {} sent",
                    self.sc.flows()[rt.spec as usize].name,
                    rt.sink.received(),
                    rt.source.sent()
                );
                self.fail(msg);
            }
        }
    }

    /// The summary of UDP flow `u` (scenario flow `rt.spec`) and its active span.
    pub(super) fn udp_summary(&self, u: usize) -> (FlowSummary, Option<(SimTime, SimTime)>) {
        let rt = &self.udp[u];
        let f = &self.sc.flows()[rt.spec as usize];
        let started = self.now >= f.start || rt.source.sent() > 0;
        let finish = rt
            .finished
            .then(|| rt.sink.last_arrival().unwrap_or(f.start));
        let active_end = f.stop.map_or(self.sim_end, |s| s.min(self.sim_end));
        let delivered = rt.sink.received_bytes();
        let goodput = goodput_bps(delivered, active_end.saturating_since(f.start).as_nanos());
        let dropped: u64 = rt.drops.iter().sum();
        let lost_or_received = rt.sink.received() + dropped;
        let traffic = TrafficSummary {
            packets_sent: Some(rt.source.sent()),
            packets_received: Some(rt.sink.received()),
            loss_rate: (lost_or_received > 0).then(|| dropped as f64 / lost_or_received as f64),
            one_way_delay_s: Percentiles::of_nanos(rt.sink.delays_ns()),
            jitter_s: Percentiles::of(&mut rt.sink.jitters_s()),
            ..TrafficSummary::default()
        };
        let mut summary = FlowSummary::unmeasured(self.sc, rt.spec as usize, rt.bottleneck_bps);
        summary.finished = finish.is_some();
        summary.finish_s = finish.map(SimTime::as_secs_f64);
        summary.transfer_time_s = finish.map(|t| t.saturating_since(f.start).as_secs_f64());
        summary.delivered_bytes = delivered;
        summary.app_bytes = Some(rt.source.sent_bytes());
        summary.goodput_bps = goodput;
        summary.normalized_goodput = normalized_goodput(goodput, rt.bottleneck_bps);
        summary.segments_sent = Some(rt.source.sent());
        summary.bytes_sent = Some(rt.source.sent_bytes());
        // UDP retransmits nothing and acknowledges nothing.
        summary.retransmitted_bytes = Some(0);
        summary.fast_retransmits = Some(0);
        summary.window_probes = Some(0);
        summary.data_segments_delivered = rt.sink.received();
        summary.acks_delivered = Some(0);
        summary.drops = cause_map(rt.drops);
        summary.traffic = Some(traffic);
        (summary, started.then_some((f.start, active_end)))
    }

    /// The summary of short-flow class `i` (its connections together) and its active span;
    /// completion times and slowdowns in `traffic`. Finished once its arrivals ended (a stop
    /// before the run's end) and every connection finished.
    pub(super) fn short_flows_summary(
        &self,
        i: usize,
    ) -> (FlowSummary, Option<(SimTime, SimTime)>) {
        let f = &self.sc.flows()[i];
        let completed: Vec<Completed> = self.flow_conns[i]
            .clone()
            .map(|c| {
                let app = &self.flows[c].app;
                Completed {
                    size_bytes: app.written_bytes(),
                    fct_s: app
                        .finish()
                        .map(|t| t.saturating_since(app.start).as_secs_f64()),
                }
            })
            .collect();
        let traffic = short_flows::summarize(&completed, &unloaded_path(self.sc, f));
        let all_done = completed.iter().all(|c| c.fct_s.is_some())
            && f.stop.is_some_and(|s| s <= self.sim_end);
        self.gathered_summary(i, traffic, all_done)
    }

    /// Scenario flow `i` made of several connections side by side (a short-flow class, a
    /// request/response flow): delivered bytes and counters summed over them, the span from
    /// the flow's start to the end of its last active connection (to its stop or the run's
    /// end without one), `finished` as the caller says, the flow's own figures in `traffic`.
    fn gathered_summary(
        &self,
        i: usize,
        traffic: TrafficSummary,
        finished: bool,
    ) -> (FlowSummary, Option<(SimTime, SimTime)>) {
        let f = &self.sc.flows()[i];
        let range = self.flow_conns[i].clone();
        let conns: Vec<FlowSummary> = range.clone().map(|c| self.conn_summary(c).0).collect();
        let mut end = f.start;
        for c in range.clone() {
            end = end.max(self.flows[c].app.active_end(self.sim_end));
        }
        if range.is_empty() {
            end = f.stop.map_or(self.sim_end, |s| s.min(self.sim_end));
        }
        let delivered: u64 = conns.iter().map(|g| g.delivered_bytes).sum();
        let sum = |get: fn(&FlowSummary) -> u64| conns.iter().map(get).sum::<u64>();
        let sum_of = |get: fn(&FlowSummary) -> Option<u64>| conns.iter().map(get).sum();
        let mut drops = [0u64; N_DROP_CAUSES];
        for c in range.clone() {
            for (d, n) in drops.iter_mut().zip(self.flows[c].counts.drops) {
                *d += n;
            }
        }
        let bottleneck_bps = super::flow_bottleneck_bps(self.sc, &f.path);
        let goodput = goodput_bps(delivered, end.saturating_since(f.start).as_nanos());
        let mut summary = FlowSummary::unmeasured(self.sc, i, bottleneck_bps);
        summary.finished = finished;
        summary.finish_s = finished.then(|| end.as_secs_f64());
        summary.transfer_time_s = finished.then(|| end.saturating_since(f.start).as_secs_f64());
        summary.delivered_bytes = delivered;
        summary.app_bytes = Some(
            range
                .clone()
                .map(|c| self.flows[c].app.written_bytes())
                .sum(),
        );
        summary.goodput_bps = goodput;
        summary.normalized_goodput = normalized_goodput(goodput, bottleneck_bps);
        summary.segments_sent = sum_of(|g| g.segments_sent);
        summary.bytes_sent = sum_of(|g| g.bytes_sent);
        summary.retransmissions = sum(|g| g.retransmissions);
        summary.retransmitted_bytes = sum_of(|g| g.retransmitted_bytes);
        summary.timeouts = sum(|g| g.timeouts);
        summary.fast_retransmits = sum_of(|g| g.fast_retransmits);
        summary.window_probes = sum_of(|g| g.window_probes);
        summary.data_segments_delivered = sum(|g| g.data_segments_delivered);
        summary.acks_sent = sum(|g| g.acks_sent);
        summary.acks_delivered = sum_of(|g| g.acks_delivered);
        summary.drops = cause_map(drops);
        summary.min_rtt_s = conns
            .iter()
            .filter_map(|g| g.min_rtt_s)
            .min_by(f64::total_cmp);
        summary.traffic = Some(traffic);
        let started = self.now >= f.start;
        (summary, started.then_some((f.start, end)))
    }
}

/// A request/response flow at run time: its two connections (indices into `World::flows`)
/// and its exchanges.
#[derive(Debug)]
pub(super) struct ExchangeRt {
    /// The connection carrying requests (the flow's source to its destination) and the one
    /// carrying responses back.
    pub client: u32,
    pub server: u32,
    pub ex: Exchanges,
}

/// The request/response flows of `sc`, with the connections `relay::plan` gave them.
pub(super) fn build_exchanges(sc: &Scenario, flow_conns: &[Range<usize>]) -> Vec<ExchangeRt> {
    sc.flows()
        .iter()
        .zip(flow_conns)
        .filter_map(|(f, r)| match &f.app {
            AppSpec::RequestResponse(spec) => Some(ExchangeRt {
                client: r.start as u32,
                server: r.start as u32 + 1,
                ex: Exchanges::new(spec.clone(), sc.seed(), &f.name),
            }),
            _ => None,
        })
        .collect()
}

impl World<'_> {
    fn exchange_of_client(&self, f: usize) -> Option<usize> {
        self.exchanges.iter().position(|e| e.client as usize == f)
    }

    /// A request/response flow's client connection started: its first request.
    pub(super) fn request_at_start(&mut self, f: usize) {
        if !self.exchanges.is_empty() {
            self.send_request(f);
        }
    }

    /// The client of connection `f` sends its next request, if `f` is a request/response
    /// client; false if it is not one.
    pub(super) fn send_request(&mut self, f: usize) -> bool {
        let Some(e) = self.exchange_of_client(f) else {
            return false;
        };
        if let Some(bytes) = self.exchanges[e].ex.request(self.now) {
            let fl = &mut self.flows[f];
            fl.app.write_bytes(&mut fl.sender, bytes);
            self.transmit(f);
        }
        true
    }

    /// The client of connection `f` stops at the flow's stop: no more requests; the server
    /// ends its stream once no exchange is outstanding.
    pub(super) fn stop_requests(&mut self, f: usize) {
        if let Some(e) = self.exchange_of_client(f) {
            if self.exchanges[e].ex.stop() {
                self.end_responses(e);
            }
        }
    }

    fn end_responses(&mut self, e: usize) {
        let s = self.exchanges[e].server as usize;
        let fl = &mut self.flows[s];
        if fl.app.stop(&mut fl.sender) {
            self.check_finished(s);
        }
    }

    /// Connection `f`'s receiving application has read `read_bytes` in all: a server that
    /// read a whole request answers it; a client that read a whole response thinks, then asks
    /// again.
    pub(super) fn on_exchange_read(&mut self, f: usize, read_bytes: u64) {
        let now = self.now;
        let Some(e) = self
            .exchanges
            .iter()
            .position(|x| x.client as usize == f || x.server as usize == f)
        else {
            return;
        };
        let (client, server) = (
            self.exchanges[e].client as usize,
            self.exchanges[e].server as usize,
        );
        if f == client {
            // The client connection's receiver is the server: requests arrive there.
            if let Some(bytes) = self.exchanges[e].ex.on_server_read(read_bytes) {
                let fl = &mut self.flows[server];
                fl.app.write_bytes(&mut fl.sender, bytes);
                self.transmit(server);
            }
            return;
        }
        match self.exchanges[e].ex.on_client_read(now, read_bytes) {
            Some(think) => {
                let at = now + think;
                let stop = self.sc.flows()[self.flows[client].spec as usize].stop;
                if at <= self.end && stop.is_none_or(|s| at < s) {
                    self.queue.push(
                        at,
                        Event::Message {
                            flow: client as u32,
                        },
                    );
                }
            }
            None if self.exchanges[e].ex.stopped() => self.end_responses(e),
            None => {}
        }
    }

    /// The summary of request/response flow `i` and its active span: both connections'
    /// counters summed, the exchanges and their response times in `traffic`.
    pub(super) fn exchanges_summary(&self, i: usize) -> (FlowSummary, Option<(SimTime, SimTime)>) {
        let range = self.flow_conns[i].clone();
        let e = self
            .exchanges
            .iter()
            .find(|x| x.client as usize == range.start);
        let traffic = e.map(|x| TrafficSummary {
            exchanges: Some(x.ex.started()),
            exchanges_completed: Some(x.ex.response_times_ns().len() as u64),
            response_time_s: Percentiles::of_nanos(x.ex.response_times_ns()),
            ..TrafficSummary::default()
        });
        let all_done = range.clone().all(|c| self.flows[c].app.finish().is_some());
        self.gathered_summary(i, traffic.unwrap_or_default(), all_done)
    }
}
