//! The built-in workload of a run: a sink per flow in the receiver's namespace, then a kernel
//! sender per flow in the sender's (farlink's senders run inside the driver); and, once the
//! run ends, what each of them saw.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use farlink_core::scenario::{AppSpec, Scenario};

use crate::bulk::{self, SenderOutcome, SenderPlan, SinkOutcome};
use crate::clock::monotonic_ns;
use crate::driver::Driver;
use crate::error::EmuError;
use crate::netns::Netns;
use crate::options::EmuOptions;
use crate::plan::Plan;
use crate::traffic::{Running, TrafficOutcome};
use crate::wire_sender::{self, SenderChoice};

/// The threads of the built-in workload while it runs, each with its flow's index.
#[derive(Default)]
pub(crate) struct Workload {
    sinks: Vec<(usize, JoinHandle<Option<SinkOutcome>>)>,
    senders: Vec<(usize, JoinHandle<Option<SenderOutcome>>)>,
    /// The UDP flows and short-flow classes (`traffic.rs`).
    traffic: Vec<(usize, Running)>,
}

impl Workload {
    /// Starts the sinks (each listening before the next starts) and the kernel senders, each
    /// writing from its flow's start, `t0_ns` being the run's time zero.
    pub(crate) fn start(
        &mut self,
        sc: &Scenario,
        opts: &EmuOptions,
        plan: &Plan,
        namespaces: &[Netns],
        t0_ns: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), EmuError> {
        for (k, f) in sc.flows().iter().enumerate() {
            // Only a traffic flow's ends are sure to be namespaces (`traffic::choices`).
            if !is_traffic(&f.app) {
                continue;
            }
            let ends = (
                &namespaces[plan.tun_of(f.from)],
                &namespaces[plan.tun_of(f.to)],
            );
            // Each end's address with the flow's port (a request/response client listens
            // there for the responses' connection).
            let at = |n: usize| SocketAddrV4::new(plan.addr(n), plan.ports[k]);
            let addrs = (at(f.from), at(f.to));
            let congestion = &plan.congestion[k];
            if let Some(r) = Running::start(sc, k, ends, addrs, congestion, t0_ns, stop)? {
                self.traffic.push((k, r));
            }
        }
        if opts.listen {
            for k in 0..sc.flows().len() {
                if !is_traffic(&sc.flows()[k].app) {
                    self.start_sink(sc, plan, namespaces, k, stop)?;
                }
            }
        }
        for (k, f) in sc.flows().iter().enumerate() {
            if plan.choices[k].is_farlink() || is_traffic(&f.app) {
                continue;
            }
            let size_bytes = match f.app {
                AppSpec::Bulk { size_bytes } => size_bytes,
                _ => u64::MAX,
            };
            let sender = SenderPlan {
                peer: SocketAddrV4::new(plan.addr(f.to), plan.ports[k]),
                size_bytes,
                start_ns: t0_ns + f.start.as_nanos(),
                stop_ns: f.stop.map(|s| t0_ns + s.as_nanos()),
                congestion: plan.congestion[k].clone(),
                send_buffer_bytes: f.tcp.send_buffer_bytes,
                payload_seed: matches!(f.app, AppSpec::Bulk { .. })
                    .then(|| wire_sender::payload_seed(sc, k)),
                mptcp: plan.mptcp.carries(k),
                shutdown: f.shutdown,
            };
            let s = Arc::clone(stop);
            self.senders.push((
                k,
                namespaces[plan.tun_of(f.from)].spawn("farlink-sender", move || {
                    bulk::sender(sender, s, monotonic_ns)
                })?,
            ));
        }
        Ok(())
    }

    /// Flow `k`'s sink, started and waited for until it listens (or ended).
    fn start_sink(
        &mut self,
        sc: &Scenario,
        plan: &Plan,
        namespaces: &[Netns],
        k: usize,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), EmuError> {
        let f = &sc.flows()[k];
        let ready = Arc::new(AtomicBool::new(false));
        let at = SocketAddrV4::new(plan.addr(f.to), plan.ports[k]);
        let (r, s) = (Arc::clone(&ready), Arc::clone(stop));
        let rcvbuf = Some(f.tcp.receive_buffer_bytes);
        // Only a bulk transfer's bytes are checked (`verified`): an unbounded one's sink and
        // sender skip the digest and the payload stream, whose cost at several Gbit/s would
        // be the workload's, not the path's (`make bench-emu`).
        let verify = matches!(f.app, AppSpec::Bulk { .. });
        let mptcp = plan.mptcp.carries(k);
        let sink = namespaces[plan.tun_of(f.to)].spawn("farlink-sink", move || {
            bulk::sink(at, rcvbuf, r, s, monotonic_ns, verify, mptcp)
        })?;
        while !ready.load(Ordering::Acquire) && !sink.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.sinks.push((k, sink));
        Ok(())
    }

    /// Every kernel sender and traffic source has ended.
    pub(crate) fn senders_done(&self) -> bool {
        self.senders.iter().all(|(_, h)| h.is_finished())
            && self.traffic.iter().all(|(_, r)| r.sender_done())
    }

    /// What each flow's sender (the kernel's thread, or farlink's in the driver), sink and
    /// traffic ends saw, once the run is told to stop; defaults where a flow has none.
    pub(crate) fn finish(self, choices: &[SenderChoice], driver: &Driver, t0_ns: u64) -> Finished {
        let n = choices.len();
        let mut out = Finished {
            senders: (0..n).map(|_| SenderOutcome::default()).collect(),
            sinks: (0..n).map(|_| SinkOutcome::default()).collect(),
            traffic: (0..n).map(|_| TrafficOutcome::None).collect(),
        };
        for (k, h) in self.sinks {
            out.sinks[k] = h.join().ok().flatten().unwrap_or_default();
        }
        for (k, h) in self.senders {
            out.senders[k] = h.join().ok().flatten().unwrap_or_default();
        }
        for (k, r) in self.traffic {
            out.traffic[k] = r.finish();
        }
        for w in driver.wire_flows() {
            if choices.get(w.flow).is_some_and(SenderChoice::is_farlink) {
                out.senders[w.flow] = w.outcome(t0_ns);
            }
        }
        out
    }
}

/// What the built-in workload saw, per flow.
pub(crate) struct Finished {
    pub(crate) senders: Vec<SenderOutcome>,
    pub(crate) sinks: Vec<SinkOutcome>,
    pub(crate) traffic: Vec<TrafficOutcome>,
}

/// A flow whose ends are `traffic.rs`'s rather than a bulk transfer's.
pub(crate) fn is_traffic(app: &AppSpec) -> bool {
    matches!(
        app,
        AppSpec::Udp(_) | AppSpec::FlowsPoisson(_) | AppSpec::RequestResponse(_)
    )
}
