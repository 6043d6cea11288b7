//! farlink's own TCP sender as a flow's sending end: which flows get it, and the connection
//! the driver runs for each of them.
//!
//! A flow whose sender is farlink's has no kernel at its sending end: the driver holds the
//! flow's [`WireClient`] (the simulator's `tcp` sender with the wire codec around it,
//! `farlink_core::tcp::wire_client`), calls it with the wall clock, offers the packets it
//! writes to the first link of the flow's route as if a TUN had produced them, and hands it
//! the packets the links deliver to its node. The receiving end is the kernel's, in its
//! namespace, behind the sink's plain listening socket.
//!
//! Which sender (`--sender`, `--tcp`): the kernel's where the kernel has the controller,
//! farlink's otherwise; a loss-recovery name (`tahoe`, `newreno`, `sack`, `rack`) selects farlink's
//! sender with that recovery and the flow's own controller (`reno` names the controller).

use farlink_core::pcap::{default_isn, Endpoints, FIRST_DYNAMIC_PORT};
use farlink_core::scenario::{AppSpec, FlowSpec, Scenario, TcpSpec};
use farlink_core::tcp::cc::CcConfig;
use farlink_core::tcp::payload::PayloadStream;
use farlink_core::tcp::recovery::LossRecovery;
use farlink_core::tcp::sender::AppSource;
use farlink_core::tcp::wire_client::{WireClient, WireClientConfig};
use farlink_core::time::{SimDuration, SimTime};

use crate::bulk::{Sample, SenderOutcome, SAMPLE_INTERVAL};
use crate::error::EmuError;
use crate::kernel::kernel_controllers;
use crate::options::EmuOptions;
use crate::sender_timing::{SenderTiming, WireSummary};
use crate::settings::FlowSettings;
use crate::tcpinfo::TcpInfo;

/// The sending end of one flow.
#[derive(Clone, Debug)]
pub(crate) enum SenderChoice {
    /// Kernel TCP in the sender's namespace with this `TCP_CONGESTION`.
    Kernel(String),
    /// farlink's sender with these settings (the flow's, with `--tcp` applied).
    Farlink(Box<TcpSpec>),
}

impl SenderChoice {
    /// The controller's name, for the result's `congestion`.
    pub(crate) fn congestion(&self) -> String {
        match self {
            SenderChoice::Kernel(name) => name.clone(),
            SenderChoice::Farlink(t) => t.cc.name().to_owned(),
        }
    }
    pub(crate) fn is_farlink(&self) -> bool {
        matches!(self, SenderChoice::Farlink(_))
    }
}

/// The payload's seed of flow `k`: the scenario's seed and the flow's index, so two flows
/// never carry the same bytes and a run is repeatable.
pub(crate) fn payload_seed(sc: &Scenario, k: usize) -> u64 {
    sc.seed()
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(k as u64 + 1)
}

/// Recovery names that are not also a controller's name.
fn recovery_only(name: &str) -> Option<LossRecovery> {
    if CcConfig::NAMES.contains(&name) {
        return None;
    }
    name.parse().ok()
}

/// Each flow's sending end, from `--sender` and `--tcp` (see the module documentation).
pub(crate) fn plan(sc: &Scenario, opts: &EmuOptions) -> Result<Vec<SenderChoice>, EmuError> {
    let forced = match opts.sender.as_deref() {
        None => None,
        Some("kernel") => Some(false),
        Some("farlink") => Some(true),
        Some(other) => {
            return Err(EmuError::Usage(format!(
                "--sender: \"{other}\" is not a sender; expected kernel or farlink"
            )))
        }
    };
    let have = kernel_controllers();
    sc.flows()
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let origin = if opts.tcp.is_some() {
                "--tcp".to_owned()
            } else {
                format!("flows[{k}].tcp")
            };
            let name = opts
                .tcp
                .clone()
                .unwrap_or_else(|| f.tcp.cc.name().to_owned());
            let mut tcp = f.tcp;
            if let Some(recovery) = recovery_only(&name) {
                if forced == Some(false) {
                    return Err(EmuError::Usage(format!(
                        "{origin}: \"{name}\" is a loss recovery, which only farlink's sender \
                         lets one choose (not --sender kernel)"
                    )));
                }
                tcp.recovery = recovery;
                return Ok(SenderChoice::Farlink(Box::new(tcp)));
            }
            let ours = CcConfig::NAMES.contains(&name.as_str());
            // A model of a kernel module (cubic-linux) runs as that module.
            let module = CcConfig::linux_module(&name).to_owned();
            let in_kernel = have.contains(&module);
            match forced {
                Some(true) | None if ours && (forced == Some(true) || !in_kernel) => {
                    // Named by --tcp: the controller and recovery the flow's profile runs for
                    // the name (cubic-linux for cubic under `linux`), as `simulate --tcp` does.
                    if opts.tcp.is_some() {
                        tcp = tcp
                            .with_named_controller(&name)
                            .map_err(|e| EmuError::Usage(format!("{origin}: {e}")))?;
                    }
                    Ok(SenderChoice::Farlink(Box::new(tcp)))
                }
                Some(true) => Err(EmuError::Usage(format!(
                    "{origin}: farlink's sender has no congestion control \"{name}\" \
                     (it has: {})",
                    CcConfig::NAMES.join(", ")
                ))),
                _ if in_kernel => Ok(SenderChoice::Kernel(module)),
                // A host limitation, not a bad option: another kernel may have it.
                _ => Err(EmuError::Unsupported(format!(
                    "{origin}: congestion control \"{name}\" is not in this kernel (it has: {}); \
                     farlink's sender has {}",
                    have.join(", "),
                    CcConfig::NAMES.join(", ")
                ))),
            }
        })
        .collect()
}

/// The nodes whose only part is to send with farlink's sender: they get no namespace. A node
/// that also receives, or sends with the kernel, cannot: refused, naming the flow.
pub(crate) fn user_nodes(sc: &Scenario, choices: &[SenderChoice]) -> Result<Vec<usize>, EmuError> {
    let mut users: Vec<usize> = Vec::new();
    for (k, (f, c)) in sc.flows().iter().zip(choices).enumerate() {
        if !c.is_farlink() || users.contains(&f.from) {
            continue;
        }
        let kernel_too = sc
            .flows()
            .iter()
            .zip(choices)
            .any(|(g, d)| g.to == f.from || (g.from == f.from && !d.is_farlink()));
        if kernel_too {
            return Err(farlink_core::ScenarioError::new(
                format!("flows[{k}].from"),
                format!(
                    "node {} sends with farlink's sender and also has a kernel TCP end (it \
                     receives, or another flow sends from it with the kernel's sender); give \
                     farlink's sender a node of its own",
                    sc.nodes()[f.from]
                ),
            )
            .into());
        }
        users.push(f.from);
    }
    users.sort_unstable();
    Ok(users)
}

/// The farlink senders of each user node (in `users`' order): flow `k` from sender port
/// `FIRST_DYNAMIC_PORT + k` to the sink's port `ports[k]`.
pub(crate) fn wire_flows(
    sc: &Scenario,
    choices: &[SenderChoice],
    users: &[usize],
    ports: &[u16],
    addr: impl Fn(usize) -> std::net::Ipv4Addr,
) -> Vec<Vec<WireFlow>> {
    let mut out: Vec<Vec<WireFlow>> = users.iter().map(|_| Vec::new()).collect();
    for (k, (f, c)) in sc.flows().iter().zip(choices).enumerate() {
        let SenderChoice::Farlink(tcp) = c else {
            continue;
        };
        let Some(u) = users.iter().position(|&n| n == f.from) else {
            continue;
        };
        let endpoints = Endpoints {
            src_ip: addr(f.from).octets(),
            dst_ip: addr(f.to).octets(),
            src_port: FIRST_DYNAMIC_PORT + k as u16,
            dst_port: ports[k],
        };
        out[u].push(WireFlow::new(sc, k, tcp, endpoints));
    }
    out
}

/// Per flow: the digest of the bytes a bulk transfer sends (both senders write the same
/// stream, `farlink_core::tcp::payload`).
pub(crate) fn expected_digests(sc: &Scenario) -> Vec<Option<u64>> {
    sc.flows()
        .iter()
        .enumerate()
        .map(|(k, f)| match f.app {
            AppSpec::Bulk { size_bytes } => {
                Some(PayloadStream::new(payload_seed(sc, k)).digest_of_prefix(size_bytes))
            }
            _ => None,
        })
        .collect()
}

/// What the result says of a farlink sender's settings: all of the scenario's TCP is its own.
pub(crate) fn flow_settings(t: &TcpSpec) -> FlowSettings {
    let mut s = FlowSettings::default();
    let mut put = |k: &str, v: String| {
        s.applied.insert(k.to_owned(), v);
    };
    put(
        "sender",
        "farlink's user-space TCP (the simulator's sender on the wire); the receiver is the \
         kernel's"
            .into(),
    );
    put("congestion", format!("farlink {}", t.cc.name()));
    put("recovery", t.recovery.name().to_owned());
    put("cwnd_reduction", t.window_reduction.name().to_owned());
    put(
        "mss_bytes",
        format!("{} offered in the SYN", t.options.mss_bytes),
    );
    for (k, on) in [
        ("sack", t.options.sack),
        ("timestamps", t.options.timestamps),
        ("window_scaling", t.options.window_scaling),
    ] {
        put(k, format!("offered in the SYN: {on}"));
    }
    put(
        "initial_window_segments",
        t.initial_window_segments.to_string(),
    );
    put("min_rto", format!("{}", t.rtt.min_rto));
    put("initial_rto", format!("{}", t.rtt.initial_rto));
    put("max_rto", format!("{}", t.rtt.max_rto));
    put("dup_thresh", t.dup_thresh.to_string());
    put("limited_transmit", t.limited_transmit.to_string());
    put(
        "handshake",
        "always (a real connection); transfer time runs from the first data segment".into(),
    );
    s.not_applied.insert(
        "receive_buffer_bytes".to_owned(),
        format!(
            "SO_RCVBUF {} on the kernel's listener, the kernel's own window",
            t.receive_buffer_bytes
        ),
    );
    s.not_applied.insert(
        "max_ooo_ranges".to_owned(),
        crate::kernel::ooo_ranges_note(t),
    );
    s
}

/// One flow's farlink sender as the driver runs it, with its `TCP_INFO`-like samples.
pub(crate) struct WireFlow {
    pub(crate) flow: usize,
    conn: WireClient,
    start: SimTime,
    next_sample: SimTime,
    /// `TCP_INFO`-like samples, their `at_ns` in emulated time until [`WireFlow::outcome`].
    samples: Vec<Sample>,
    unbounded: bool,
    timing: SenderTiming,
}

impl WireFlow {
    pub(crate) fn new(sc: &Scenario, k: usize, tcp: &TcpSpec, endpoints: Endpoints) -> WireFlow {
        let f: &FlowSpec = &sc.flows()[k];
        let app = match f.app {
            AppSpec::Bulk { size_bytes } => AppSource::Bulk {
                total_bytes: size_bytes,
            },
            _ => AppSource::Unbounded,
        };
        let conn = WireClient::new(&WireClientConfig {
            sender: tcp.sender_config(app),
            endpoints,
            isn: default_isn(&endpoints),
            payload_seed: payload_seed(sc, k),
            start: f.start,
            stop: f.stop,
        });
        WireFlow {
            flow: k,
            conn,
            start: f.start,
            next_sample: f.start,
            samples: Vec::with_capacity(4096),
            unbounded: app == AppSource::Unbounded,
            timing: SenderTiming::new(),
        }
    }

    /// The local port its packets come from: how the driver hands it its packets.
    pub(crate) fn local_port(&self) -> u16 {
        self.conn.endpoints().src_port
    }

    pub(crate) fn next_wakeup(&self) -> Option<SimTime> {
        let conn = self.conn.next_wakeup()?;
        Some(conn.min(self.next_sample.max(self.start)))
    }

    pub(crate) fn on_timeout(&mut self, now: SimTime) {
        let conn = &mut self.conn;
        self.timing.timed(|| conn.on_timeout(now));
        if now >= self.next_sample && !self.conn.is_finished() {
            self.samples.push(Sample {
                at_ns: now.as_nanos(),
                info: self.info(),
            });
            let step = SimDuration::from_nanos(SAMPLE_INTERVAL.as_nanos() as u64);
            while self.next_sample <= now {
                self.next_sample += step;
            }
        }
    }

    /// The next segment to write, if any; the driver writes it to the link at once.
    pub(crate) fn poll_transmit(&mut self, now: SimTime, buf: &mut [u8]) -> Option<usize> {
        let conn = &mut self.conn;
        let (len, _, written_ns) = self.timing.timed(|| conn.poll_transmit(now, buf));
        match len {
            Some(_) => self.timing.wrote(written_ns),
            None => self.timing.idle(),
        }
        len
    }

    pub(crate) fn on_packet(&mut self, now: SimTime, bytes: &[u8]) {
        let conn = &mut self.conn;
        // The clock starts as the sender begins to read the packet.
        let ((), read_ns, _) = self.timing.timed(|| conn.on_packet(now, bytes));
        self.timing.received(read_ns);
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.conn.is_finished()
    }

    /// The sender's state in `TCP_INFO`'s terms, so the trace has the same columns.
    fn info(&self) -> TcpInfo {
        let s = self.conn.sender();
        let st = s.stats();
        let mss = s.smss_bytes().max(1);
        let us = |d: SimDuration| (d.as_nanos() / 1000).min(u64::from(u32::MAX)) as u32;
        let m = s.cc().metrics();
        TcpInfo {
            rto_us: us(s.rtt().rto()),
            snd_mss: mss as u32,
            rtt_us: s.rtt().srtt().map_or(0, us),
            rttvar_us: us(s.rtt().rttvar()),
            snd_ssthresh_pkts: (m.ssthresh_bytes / mss).min(u64::from(u32::MAX)) as u32,
            // The window the sender sends against, as Linux's snd_cwnd is: PRR's in a recovery
            // that reduces by it (the controller's own window is already ssthresh then).
            snd_cwnd_pkts: (s.effective_cwnd_bytes() / mss).min(u64::from(u32::MAX)) as u32,
            total_retrans: st.retransmitted_segments.min(u64::from(u32::MAX)) as u32,
            bytes_acked: st.bytes_acked,
            bytes_received: 0,
            bytes_sent: Some(st.bytes_sent),
            bytes_retrans: Some(st.retransmitted_bytes),
            total_rto: Some(st.timeouts.min(u64::from(u16::MAX)) as u16),
            data_segs_out: Some(st.segments_sent.min(u64::from(u32::MAX)) as u32),
            min_rtt_us: s.rtt().min_rtt().map(us),
            // farlink's sender keeps no kernel chronographs (its limits are its own).
            chrono_us: None,
        }
    }

    /// What the flow's sender saw, as the kernel sender reports it (monotonic ns, emulated
    /// time zero at `t0_ns`).
    pub(crate) fn outcome(&self, t0_ns: u64) -> SenderOutcome {
        let at = |t: SimTime| t0_ns + t.as_nanos();
        let s = self.conn.sender();
        let written = s.app_limit_bytes().unwrap_or(s.snd_max());
        let error = self.conn.error().map(|e| format!("farlink sender: {e}"));
        SenderOutcome {
            first_write_ns: self.conn.first_data_at().map(at),
            connected_ns: self.conn.established_at().map(at),
            connect_started_ns: at(self.start),
            written_bytes: written,
            // An unbounded source that reached its stop time closed its stream there.
            stopped: self.unbounded && s.app_limit_bytes().is_some(),
            samples: self
                .samples
                .iter()
                .map(|x| Sample {
                    at_ns: t0_ns + x.at_ns,
                    info: x.info,
                })
                .collect(),
            last: Some(self.info()),
            fast_retransmits: Some(s.stats().fast_retransmits),
            error,
            wire: Some(WireSummary::new(
                self.conn.stats(),
                s.stats().window_probes,
                self.timing.summary(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(tcp: &str) -> Scenario {
        farlink_core::parse_scenario_json(&format!(
            r#"{{"duration": "10s", "nodes": ["S", "D"],
                "links": [{{"a": "S", "b": "D", "rate": "1Mbps", "delay": "10ms"}}],
                "flows": [{{"from": "S", "to": "D", "app": {{"kind": "unbounded"}},
                            "tcp": {tcp}}}]}}"#
        ))
        .unwrap()
    }

    fn farlink_sender(sc: &Scenario, tcp: Option<&str>) -> TcpSpec {
        let opts = EmuOptions {
            tcp: tcp.map(str::to_owned),
            sender: Some("farlink".into()),
            ..EmuOptions::default()
        };
        match plan(sc, &opts).unwrap().remove(0) {
            SenderChoice::Farlink(t) => *t,
            SenderChoice::Kernel(name) => panic!("the kernel's {name}"),
        }
    }

    #[test]
    fn tcp_names_a_linux_module_under_the_linux_profile() {
        let linux = scenario(r#"{"profile": "linux", "recovery": "reno"}"#);
        let t = farlink_sender(&linux, Some("cubic"));
        assert_eq!(t.cc.name(), "cubic-linux");
        assert_eq!(t.recovery, LossRecovery::Rack);
        // Without --tcp the scenario's own settings run.
        let t = farlink_sender(&linux, None);
        assert_eq!((t.cc.name(), t.recovery), ("reno", LossRecovery::Reno));
        // rfc: the controller by its own name, the scenario's recovery kept, as before.
        let rfc = scenario(r#"{"recovery": "reno"}"#);
        let t = farlink_sender(&rfc, Some("cubic"));
        assert_eq!((t.cc.name(), t.recovery), ("cubic", LossRecovery::Reno));
    }
}
