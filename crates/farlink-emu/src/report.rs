//! The emulator's result, in the shape of `simulate`'s summary (the same keys per flow and in
//! the aggregate), plus what only an emulation has: the kernel settings applied, the
//! departure-time error of delivered packets, the packets moved, and the TCP_INFO samples.

use std::collections::BTreeMap;

use farlink_core::path::{self, LinkDir};
use farlink_core::scenario::{AppSpec, Hop, Scenario};
use farlink_core::world::{aggregate_capacity_bps, cause_map, BundleCalls};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::bulk::{SenderOutcome, SinkOutcome};
use crate::driver::Driver;
use crate::sender_timing::SenderTimingSummary;

/// Kernel settings the run applied, as written.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Kernel {
    /// Per-namespace sysctls.
    pub sysctls: BTreeMap<String, String>,
    /// Routes to the peer in each end node (`initcwnd`, `rto_min`, `quickack`).
    pub routes: Vec<String>,
    /// `TCP_CONGESTION` per flow.
    pub congestion: Vec<String>,
}

/// Which of a flow's TCP settings the kernel was given (and how), and which it could not take
/// (and why).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowSettings {
    pub applied: BTreeMap<String, String>,
    pub not_applied: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Aggregate {
    pub delivered_bytes: u64,
    pub goodput_bps: f64,
    pub bottleneck_bps: Option<u64>,
    pub normalized_goodput: Option<f64>,
    pub retransmissions: u64,
    pub timeouts: u64,
    /// All flows' entries into fast recovery (their namespaces' counters); `null` where a
    /// namespace's could not be read.
    pub fast_retransmits: Option<u64>,
    pub data_segments_delivered: u64,
    pub drops: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Flow {
    pub name: String,
    pub from: String,
    pub to: String,
    pub app: &'static str,
    pub congestion: String,
    pub start_s: f64,
    pub finished: bool,
    pub transfer_time_s: Option<f64>,
    /// Time from the sender's connect() to the connection being up.
    pub setup_time_s: Option<f64>,
    pub delivered_bytes: u64,
    pub app_bytes: Option<u64>,
    pub goodput_bps: f64,
    pub bottleneck_bps: u64,
    pub normalized_goodput: f64,
    pub bytes_sent: Option<u64>,
    pub retransmissions: u64,
    pub retransmitted_bytes: Option<u64>,
    /// Retransmission timeouts (TCP_INFO `tcpi_total_rto`, Linux 6.7 on); SYN's included.
    pub timeouts: u64,
    pub drops: BTreeMap<String, u64>,
    pub final_cwnd_bytes: Option<u64>,
    pub final_srtt_s: Option<f64>,
    pub final_rto_s: Option<f64>,
    pub kernel_settings: FlowSettings,
    pub error: Option<String>,
    /// Whose TCP sent: "kernel" (in the sender's namespace) or "farlink" (farlink's own
    /// sender on the wire, `wire_sender.rs`).
    pub sender: &'static str,
    /// A bulk transfer: whether the sink read exactly the bytes sent, in order (its digest
    /// against the payload stream's); null for other applications.
    pub verified: Option<bool>,
    /// What farlink's sender counted on the wire; absent for a kernel sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireSummary>,
    /// The keys `simulate`'s summary has beside these (`parity.rs`).
    #[serde(flatten)]
    pub parity: crate::parity::FlowParity,
}

/// What farlink's sender counted on the wire.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct WireSummary {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub dsack_blocks: u64,
    pub out_of_window: u64,
    pub malformed: u64,
    pub window_probes: u64,
    pub fin_transmissions: u64,
    /// The sender's ACK-to-send latency and busy time (`sender_timing.rs`).
    pub timing: SenderTimingSummary,
}

impl WireSummary {
    pub(crate) fn new(
        w: &farlink_core::tcp::wire_client::WireStats,
        window_probes: u64,
        timing: SenderTimingSummary,
    ) -> Self {
        WireSummary {
            packets_sent: w.packets_sent,
            packets_received: w.packets_received,
            dsack_blocks: w.dsack_blocks,
            out_of_window: w.out_of_window,
            malformed: w.malformed,
            window_probes,
            fin_transmissions: w.fin_transmissions,
            timing,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Direction {
    pub offered_pkts: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub drops: BTreeMap<String, u64>,
    pub max_queue_pkts: u64,
    /// Packets inside the link when the run ended.
    pub in_flight_pkts: u64,
    /// Loss-model outcome ordinals of the packets lost on this direction (recorded on request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_ordinals: Option<Vec<u64>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Link {
    pub name: String,
    pub a: String,
    pub b: String,
    pub fwd: Direction,
    pub rev: Direction,
    /// A bundle's control plane: call drops and redials (simulate's keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleCalls>,
    /// A radio hop's RLP give-ups, per direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rlp: Option<RlpGiveUps>,
}

/// Frames and packets a radio hop's RLP gave up on, per direction (simulate's keys).
#[derive(Clone, Debug, Serialize)]
pub struct RlpGiveUps {
    pub fwd: RlpDirGiveUps,
    pub rev: RlpDirGiveUps,
}

#[derive(Clone, Debug, Serialize)]
pub struct RlpDirGiveUps {
    pub frames_given_up: u64,
    pub packets_given_up: u64,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub count: u64,
}

/// A histogram of durations in ns: 1 ns to an hour, three significant digits. Allocated once;
/// recording allocates nothing.
pub(crate) fn ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("constant, valid bounds")
}

impl Percentiles {
    /// The median, 99th percentile and maximum of a histogram of ns, in µs.
    pub(crate) fn of_ns(h: &Histogram<u64>) -> Percentiles {
        let us = |ns: u64| ns as f64 / 1e3;
        Percentiles {
            p50: us(h.value_at_quantile(0.5)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
            count: h.len(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Emulator {
    /// Delivered packets' write instant minus the link model's delivery instant, µs.
    pub departure_error_us: Percentiles,
    pub packets_read: u64,
    pub bytes_read: u64,
    pub packets_written: u64,
    pub bytes_written: u64,
    pub unroutable_pkts: u64,
    pub write_errors: u64,
    pub pcap_errors: u64,
    pub in_links_at_end: u64,
    pub slab_growths: u64,
    pub spin_us: u64,
    pub timer_wakeups: u64,
    pub spins: u64,
    /// The driver's thread ran SCHED_FIFO.
    pub realtime: bool,
    /// How the TUN devices were read and written: "per_packet", or "offload" (super-segments
    /// cut into packets on the way in, coalesced on the way out; `offload` says how much).
    pub io_path: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<crate::offload::OffloadStats>,
    /// CPU the driver's thread spent, and that over the run's wall time.
    pub cpu_s: f64,
    pub cpu_fraction: f64,
    pub run_id: String,
    /// Namespaces of killed runs removed at this start.
    pub removed_stale: Vec<String>,
    pub kernel: Kernel,
}

/// TCP_INFO samples of every flow's sender, as columns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TcpInfoTrace {
    pub time_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<u64>,
    pub rtt_us: Vec<u32>,
    pub rto_us: Vec<u32>,
    pub retransmissions: Vec<u32>,
    pub acked_bytes: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct EmuResult {
    pub engine: &'static str,
    pub scenario_name: Option<String>,
    pub seed: u64,
    /// Emulated (wall) time from the start to the end of the run.
    pub sim_time_s: f64,
    pub all_finished: bool,
    pub interrupted: bool,
    pub aggregate: Aggregate,
    pub flows: Vec<Flow>,
    pub links: Vec<Link>,
    pub emulator: Emulator,
    pub tcp_info: TcpInfoTrace,
    /// The program that was the workload (`-- COMMAND`, `--shell`), and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<crate::command::CommandReport>,
}

/// What the run saw besides the driver.
pub(crate) struct Outcomes<'a> {
    pub(crate) t0_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) senders: &'a [SenderOutcome],
    pub(crate) sinks: &'a [SinkOutcome],
    pub(crate) congestion: &'a [String],
    /// Per flow: farlink's sender (else the kernel's).
    pub(crate) farlink: &'a [bool],
    /// Per flow: the digest of the bytes a bulk transfer sends.
    pub(crate) expected_digests: &'a [Option<u64>],
    pub(crate) settings: Vec<FlowSettings>,
    pub(crate) interrupted: bool,
    pub(crate) run_id: String,
    pub(crate) removed_stale: Vec<String>,
    pub(crate) spin_us: u64,
    pub(crate) kernel: crate::report::Kernel,
    /// Entries into fast recovery, per flow and in all (`parity.rs`).
    pub(crate) recoveries: crate::parity::Recoveries,
    /// The first flow is a program's (`-- COMMAND`): what it wrote is what its connections
    /// moved, whatever the scenario's application says.
    pub(crate) program: bool,
}

fn direction(dir: &LinkDir, lost: Option<&Vec<u64>>) -> Direction {
    let st = dir.stats();
    Direction {
        offered_pkts: st.offered_pkts,
        delivered_pkts: st.delivered_pkts,
        delivered_bytes: st.delivered_bytes,
        drops: cause_map(dir.drops_by_cause()),
        max_queue_pkts: st.max_queue_pkts,
        in_flight_pkts: dir.in_flight_pkts(),
        lost_ordinals: lost.cloned(),
    }
}

pub(crate) fn build(sc: &Scenario, driver: &Driver, o: Outcomes<'_>) -> EmuResult {
    let nodes = sc.nodes();
    let s = &driver.stats;
    let secs = |ns: u64| ns as f64 / 1e9;
    let mut flows = Vec::with_capacity(sc.flows().len());
    let mut trace = TcpInfoTrace::default();
    let mut span: Option<(u64, u64)> = None;
    for (k, f) in sc.flows().iter().enumerate() {
        let snd = o.senders.get(k);
        let sink = o.sinks.get(k);
        // What the application wrote: a bulk transfer's size, or what an unbounded source had
        // written when it stopped (unknown while it writes).
        let size = match f.app {
            AppSpec::Bulk { size_bytes } if !o.program => Some(size_bytes),
            _ => snd.filter(|x| x.stopped).map(|x| x.written_bytes),
        };
        let delivered = sink.map_or(0, |x| x.received_bytes);
        let start_ns = snd.and_then(|x| x.first_write_ns);
        let finish_ns = sink
            .filter(|x| x.eof && Some(x.received_bytes) == size)
            .and_then(|x| x.last_byte_ns);
        let active_ns = match (start_ns, finish_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            (Some(a), None) => (o.t0_ns + o.end_ns).saturating_sub(a),
            _ => 0,
        };
        if let Some(a) = start_ns {
            let b = finish_ns.unwrap_or(o.t0_ns + o.end_ns);
            span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
        let goodput_bps = if active_ns > 0 {
            delivered as f64 * 8.0 / secs(active_ns)
        } else {
            0.0
        };
        let bottleneck_bps = f
            .path
            .iter()
            .map(|h| sc.links()[h.link].direction(h.forward).rate.bps())
            .min()
            .unwrap_or(0);
        let last = snd.and_then(|x| x.last);
        let mss = last.map_or(0, |i| u64::from(i.snd_mss));
        if let Some(x) = snd {
            for smp in &x.samples {
                trace.time_s.push(secs(smp.at_ns.saturating_sub(o.t0_ns)));
                trace.flow.push(k as u32);
                let m = u64::from(smp.info.snd_mss);
                trace.cwnd_bytes.push(u64::from(smp.info.snd_cwnd_pkts) * m);
                trace
                    .ssthresh_bytes
                    .push(u64::from(smp.info.snd_ssthresh_pkts).saturating_mul(m));
                trace.rtt_us.push(smp.info.rtt_us);
                trace.rto_us.push(smp.info.rto_us);
                trace.retransmissions.push(smp.info.total_retrans);
                trace.acked_bytes.push(smp.info.bytes_acked);
            }
        }
        let error = [
            snd.and_then(|x| x.error.clone()),
            sink.and_then(|x| x.error.clone()),
        ]
        .into_iter()
        .flatten()
        .reduce(|a, b| format!("{a}; {b}"));
        flows.push(Flow {
            name: f.name.clone(),
            from: nodes[f.from].clone(),
            to: nodes[f.to].clone(),
            app: f.app.kind(),
            congestion: o.congestion.get(k).cloned().unwrap_or_default(),
            start_s: f.start.as_secs_f64(),
            finished: finish_ns.is_some(),
            transfer_time_s: finish_ns
                .zip(start_ns)
                .map(|(b, a)| secs(b.saturating_sub(a))),
            setup_time_s: snd.and_then(|x| x.connected_ns.map(|c| secs(c - x.connect_started_ns))),
            delivered_bytes: delivered,
            app_bytes: size,
            goodput_bps,
            bottleneck_bps,
            normalized_goodput: if bottleneck_bps > 0 {
                goodput_bps / bottleneck_bps as f64
            } else {
                0.0
            },
            bytes_sent: last.and_then(|i| i.bytes_sent),
            retransmissions: last.map_or(0, |i| u64::from(i.total_retrans)),
            retransmitted_bytes: last.and_then(|i| i.bytes_retrans),
            timeouts: last.and_then(|i| i.total_rto).map_or(0, u64::from),
            drops: cause_map(s.flow_drops.get(k).copied().unwrap_or_default()),
            final_cwnd_bytes: last.map(|i| u64::from(i.snd_cwnd_pkts) * mss),
            final_srtt_s: last.map(|i| f64::from(i.rtt_us) / 1e6),
            final_rto_s: last.map(|i| f64::from(i.rto_us) / 1e6),
            kernel_settings: o.settings.get(k).cloned().unwrap_or_default(),
            error,
            sender: if o.farlink.get(k).copied().unwrap_or(false) {
                "farlink"
            } else {
                "kernel"
            },
            verified: o.expected_digests.get(k).copied().flatten().map(|d| {
                sink.is_some_and(|x| x.eof && Some(x.received_bytes) == size && x.digest == d)
            }),
            wire: snd.and_then(|x| x.wire),
            parity: crate::parity::flow(
                snd,
                active_ns,
                s.flow_data_delivered.get(k).copied().unwrap_or(0),
                s.flow_acks_sent.get(k).copied().unwrap_or(0),
                o.recoveries.per_flow.get(k).copied().flatten(),
            ),
        });
    }
    let delivered: u64 = flows.iter().map(|f| f.delivered_bytes).sum();
    let span_s = span.map_or(0.0, |(a, b)| secs(b.saturating_sub(a)));
    let goodput_bps = if span_s > 0.0 {
        delivered as f64 * 8.0 / span_s
    } else {
        0.0
    };
    let bottleneck_bps = aggregate_capacity_bps(sc);
    let aggregate = Aggregate {
        delivered_bytes: delivered,
        goodput_bps,
        bottleneck_bps,
        normalized_goodput: bottleneck_bps
            .filter(|&b| b > 0)
            .map(|b| goodput_bps / b as f64),
        retransmissions: flows.iter().map(|f| f.retransmissions).sum(),
        timeouts: flows.iter().map(|f| f.timeouts).sum(),
        fast_retransmits: o.recoveries.total,
        data_segments_delivered: flows.iter().map(|f| f.parity.data_segments_delivered).sum(),
        drops: cause_map(s.drops),
    };
    let dirs = &driver.links().dirs;
    let lost = driver.lost_ordinals.as_ref();
    let links = sc
        .links()
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let d = |forward: bool| {
                let x = path::dir_index(Hop { link: i, forward });
                direction(&dirs[x], lost.map(|v| &v[x]))
            };
            let bundle = driver
                .links()
                .bundles
                .iter()
                .find(|b| b.link() == i)
                .map(|b| BundleCalls::from(b.control().stats()));
            let given_up = |forward: bool| {
                dirs[path::dir_index(Hop { link: i, forward })]
                    .rlp()
                    .map(|r| RlpDirGiveUps {
                        frames_given_up: r.stats().frames_given_up,
                        packets_given_up: r.stats().units_given_up,
                    })
            };
            let rlp = given_up(true)
                .zip(given_up(false))
                .map(|(fwd, rev)| RlpGiveUps { fwd, rev });
            Link {
                name: l.name.clone(),
                a: nodes[l.a].clone(),
                b: nodes[l.b].clone(),
                fwd: d(true),
                rev: d(false),
                bundle,
                rlp,
            }
        })
        .collect();
    let wall_s = secs(o.end_ns);
    EmuResult {
        engine: "emulate",
        scenario_name: sc.name().map(str::to_owned),
        seed: sc.seed(),
        sim_time_s: wall_s,
        all_finished: flows.iter().all(|f| f.finished),
        interrupted: o.interrupted,
        aggregate,
        flows,
        links,
        emulator: Emulator {
            departure_error_us: Percentiles::of_ns(&driver.departure_error_ns),
            packets_read: s.read_pkts,
            bytes_read: s.read_bytes,
            packets_written: s.written_pkts,
            bytes_written: s.written_bytes,
            unroutable_pkts: s.unroutable_pkts,
            write_errors: s.write_errors,
            pcap_errors: s.pcap_errors,
            in_links_at_end: driver.in_flight(),
            slab_growths: s.slab_growths,
            spin_us: o.spin_us,
            timer_wakeups: s.timer_wakeups,
            spins: s.spins,
            realtime: s.realtime,
            io_path: if driver.offload.is_some() {
                "offload"
            } else {
                "per_packet"
            },
            offload: driver.offload.as_ref().map(|o| o.stats.clone()),
            cpu_s: secs(s.cpu_ns),
            cpu_fraction: if wall_s > 0.0 {
                secs(s.cpu_ns) / wall_s
            } else {
                0.0
            },
            run_id: o.run_id,
            removed_stale: o.removed_stale,
            kernel: o.kernel,
        },
        tcp_info: trace,
        command: None,
    }
}
