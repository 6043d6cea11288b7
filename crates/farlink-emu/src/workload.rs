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
use crate::wire_sender::{self, SenderChoice};

/// The threads of the built-in workload while it runs.
#[derive(Default)]
pub(crate) struct Workload {
    sinks: Vec<JoinHandle<Option<SinkOutcome>>>,
    senders: Vec<JoinHandle<Option<SenderOutcome>>>,
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
        if opts.listen {
            for k in 0..sc.flows().len() {
                self.start_sink(sc, plan, namespaces, k, stop)?;
            }
        }
        for (k, f) in sc.flows().iter().enumerate() {
            if plan.choices[k].is_farlink() {
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
            };
            let s = Arc::clone(stop);
            self.senders.push(
                namespaces[plan.tun_of(f.from)].spawn("farlink-sender", move || {
                    bulk::sender(sender, s, monotonic_ns)
                })?,
            );
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
        self.sinks.push(sink);
        Ok(())
    }

    /// Every kernel sender has ended.
    pub(crate) fn senders_done(&self) -> bool {
        self.senders.iter().all(JoinHandle::is_finished)
    }

    /// What each flow's sender (the kernel's thread, or farlink's in the driver) and sink
    /// saw, once the run is told to stop.
    pub(crate) fn finish(
        self,
        choices: &[SenderChoice],
        driver: &Driver,
        t0_ns: u64,
    ) -> (Vec<SenderOutcome>, Vec<SinkOutcome>) {
        let sinks = self
            .sinks
            .into_iter()
            .map(|h| h.join().ok().flatten().unwrap_or_default())
            .collect();
        let mut kernel = self
            .senders
            .into_iter()
            .map(|h| h.join().ok().flatten().unwrap_or_default());
        let mut wire: Vec<_> = choices.iter().map(|_| None).collect();
        for w in driver.wire_flows() {
            wire[w.flow] = Some(w.outcome(t0_ns));
        }
        let senders = choices
            .iter()
            .zip(wire)
            .map(|(c, w)| if c.is_farlink() { w } else { kernel.next() }.unwrap_or_default())
            .collect();
        (senders, sinks)
    }
}
