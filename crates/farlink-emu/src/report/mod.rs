//! The emulator's result: the core's run summary types ([`FlowSummary`] per flow, the
//! [`AggregateSummary`]) filled from what the kernel and the links measured, the same keys as
//! `simulate`'s, plus what only an emulation has: the kernel settings applied, the
//! departure-time error of delivered packets, the packets moved, and the TCP_INFO samples.
//!
//! `flows.rs` fills the flows, `links.rs` the links, `emulator.rs` the emulator's own figures.

mod emulator;
mod flows;
mod links;
mod traffic;

use farlink_core::scenario::Scenario;
use farlink_core::trace::{GoodputTrace, MemberStateTrace};
use farlink_core::world::AggregateSummary;
use serde::Serialize;

use crate::bulk::{SenderOutcome, SinkOutcome};
use crate::command::CommandReport;
use crate::driver::Driver;
use crate::parity::Recoveries;
use crate::settings::{FlowSettings, Kernel};
use crate::traffic::TrafficOutcome;

pub use emulator::Emulator;
pub use flows::{Flow, TcpInfoTrace};
pub use links::Link;

#[derive(Clone, Debug, Serialize)]
pub struct EmuResult {
    pub engine: &'static str,
    pub scenario_name: Option<String>,
    pub seed: u64,
    /// Emulated (wall) time from the start to the end of the run.
    pub sim_time_s: f64,
    pub all_finished: bool,
    pub interrupted: bool,
    pub aggregate: AggregateSummary,
    pub flows: Vec<Flow>,
    pub links: Vec<Link>,
    pub emulator: Emulator,
    pub tcp_info: TcpInfoTrace,
    /// Bytes each flow's receiving application had read, at its reads (one row per 10 ms
    /// bucket at most, `goodput.rs`), counted from the run's start: simulate's `goodput`
    /// columns.
    pub goodput: GoodputTrace,
    /// Every state change of every bundle member, as simulate's `member_state` trace.
    pub member_state: MemberStateTrace,
    /// The program that was the workload (`-- COMMAND`, `--shell`), and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandReport>,
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
    pub(crate) kernel: Kernel,
    /// Entries into fast recovery, per flow and in all (`parity.rs`).
    pub(crate) recoveries: Recoveries,
    /// Per flow: CE-marked packets its receiver took in, where the kernel says (`run.rs`).
    pub(crate) ce_received: &'a [Option<u64>],
    /// The first flow is a program's (`-- COMMAND`): what it wrote is what its connections
    /// moved, whatever the scenario's application says.
    pub(crate) program: bool,
    /// Per flow, what a UDP flow's or short-flow class's ends saw (`report/traffic.rs`).
    pub(crate) traffic: &'a [TrafficOutcome],
}

/// The result of a run of `sc` that `driver` drove and `o` tells the rest of.
pub(crate) fn build(sc: &Scenario, driver: &Driver, o: Outcomes<'_>) -> EmuResult {
    let (mut flows, span, tcp_info) = flows::flows(sc, &driver.stats, &o);
    let end = farlink_core::time::SimTime::from_nanos(o.end_ns);
    crate::mptcp::fill_subflows(sc, &driver.members, end, &mut flows);
    let aggregate = AggregateSummary::of(
        sc,
        flows.iter().map(|f| &f.summary),
        span,
        o.recoveries.total,
        driver.stats.drops,
    );
    let links = links::links(sc, driver.links(), driver.lost_ordinals.as_ref());
    let goodput = goodput(o.sinks, o.t0_ns);
    EmuResult {
        engine: "emulate",
        scenario_name: sc.name().map(str::to_owned),
        seed: sc.seed(),
        sim_time_s: o.end_ns as f64 / 1e9,
        all_finished: flows.iter().all(|f| f.summary.finished),
        interrupted: o.interrupted,
        aggregate,
        flows,
        links,
        emulator: Emulator::of(driver, o),
        tcp_info,
        goodput,
        member_state: driver.member_states.clone(),
        command: None,
    }
}

/// Every flow's reads as the `goodput` trace, flow by flow.
fn goodput(sinks: &[SinkOutcome], t0_ns: u64) -> GoodputTrace {
    let mut trace = GoodputTrace::default();
    for (k, sink) in sinks.iter().enumerate() {
        crate::goodput::append(&mut trace, k as u32, &sink.reads, t0_ns);
    }
    trace
}
