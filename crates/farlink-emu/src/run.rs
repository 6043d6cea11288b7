//! One emulation in its phases: the plan (`plan.rs`: the scenario checked, the senders, the
//! namespaces, the kernel settings), the set-up (`setup.rs`: namespaces, devices, routes, the
//! driver), the run (here: the workload started, the driver run to the end, the outcomes
//! collected; `workload.rs` for the built-in one, `command.rs` for a program), and the report
//! (`report/`: the core's summary filled). Everything made is removed before it returns,
//! whatever happened.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use farlink_core::scenario::Scenario;
use farlink_core::tcp::ecn::EcnMode;
use farlink_core::time::SimTime;

use crate::bulk::{SenderOutcome, SinkOutcome};
use crate::clock::monotonic_ns;
use crate::command::{self, CommandReport};
use crate::connections;
use crate::error::EmuError;
use crate::netns::Netns;
use crate::netns::{self, RunLock};
use crate::options::EmuOptions;
use crate::parity::{self, Recoveries};
use crate::plan::{self, Plan};
use crate::report::{self, EmuResult};
use crate::setup::{self, Made};
use crate::signals::Signals;
use crate::traffic::TrafficOutcome;
use crate::wire_sender::{self, SenderChoice};
use crate::workload;

/// Whether this process may make namespaces and TUN devices.
pub fn check_host() -> Result<(), EmuError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| EmuError::sys("/proc/self/status", e))?;
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_NET_ADMIN: u32 = 12;
    if cap_eff & (1 << CAP_NET_ADMIN) == 0 {
        return Err(EmuError::Unsupported(
            "emulate needs CAP_NET_ADMIN (run as root, or grant the capability) to make network \
             namespaces and TUN devices"
                .into(),
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(EmuError::Unsupported(
            "emulate needs /dev/net/tun (the tun module), which this host lacks".into(),
        ));
    }
    Ok(())
}

/// Runs `sc` on the emulator: real kernel TCP between namespaces, through the scenario's
/// links in real time. Everything this made is removed before it returns, whatever happened.
pub fn emulate(sc: &Scenario, opts: &EmuOptions) -> Result<EmuResult, EmuError> {
    plan::check_scenario(sc)?;
    check_host()?;
    let choices = plan::senders(sc, opts)?;
    // Before anything of ours exists: what a killed run left behind.
    let removed_stale = netns::remove_stale();
    let signals = Signals::install()?;
    let lock = RunLock::acquire()?;
    let plan = Plan::new(sc, choices, &lock.id)?;
    let mut made = setup::make(sc, opts, &plan, &lock.id)?;
    let measured = match &opts.command {
        Some(argv) => run_command(sc, opts, &plan, &mut made, &signals, argv)?,
        None => run_builtin(sc, opts, &plan, &mut made, &signals)?,
    };
    let mut result = report::build(
        sc,
        &made.driver,
        report::Outcomes {
            t0_ns: made.driver.t0_ns(),
            end_ns: measured.end_ns,
            senders: &measured.senders,
            sinks: &measured.sinks,
            congestion: &plan.congestion,
            farlink: &measured.farlink,
            expected_digests: &measured.expected_digests,
            settings: plan.settings.clone(),
            interrupted: signals.interrupted(),
            run_id: lock.id.clone(),
            removed_stale,
            spin_us: opts.spin_us,
            kernel: made.kernel.clone(),
            recoveries: measured.recoveries,
            ce_received: &measured.ce_received,
            program: measured.command.is_some(),
            traffic: &measured.traffic,
        },
    );
    result.command = measured.command;
    drop(made);
    Ok(result)
}

/// What a run measured besides the driver.
struct Measured {
    end_ns: u64,
    senders: Vec<SenderOutcome>,
    sinks: Vec<SinkOutcome>,
    /// Per flow: farlink's sender (else the kernel's).
    farlink: Vec<bool>,
    expected_digests: Vec<Option<u64>>,
    recoveries: Recoveries,
    /// Per flow with `tcp.ecn` on: CE-marked packets its receiver's namespace took in, where
    /// it is the only flow received there (`nstat::ce_received`).
    ce_received: Vec<Option<u64>>,
    /// The program that was the workload, and how it ended.
    command: Option<CommandReport>,
    /// Per flow, what a UDP flow's or short-flow class's ends saw (`traffic.rs`).
    traffic: Vec<TrafficOutcome>,
}

/// The workload is a program (and perhaps its server) on the first flow (`command.rs`); its
/// connections make the flow's figures (`connections.rs`).
fn run_command(
    sc: &Scenario,
    opts: &EmuOptions,
    plan: &Plan,
    made: &mut Made,
    signals: &Signals,
    argv: &[String],
) -> Result<Measured, EmuError> {
    let stop = Arc::new(AtomicBool::new(false));
    let f0 = &sc.flows()[0];
    let ns = |n: usize| &made.namespaces[plan.tun_of(n)];
    let programs_plan = command::Plan {
        argv,
        server: opts.server.as_deref(),
        sender_ns: ns(f0.from),
        receiver_ns: ns(f0.to),
        peer: SocketAddrV4::new(plan.addr(f0.to), plan.ports[0]),
        congestion: &plan.congestion[0],
        sinks: sc
            .flows()
            .iter()
            .zip(&plan.ports)
            .map(|(f, &port)| {
                let at = SocketAddrV4::new(plan.addr(f.to), port);
                (ns(f.to), at, Some(f.tcp.receive_buffer_bytes))
            })
            .collect(),
        stdout: &opts.command_stdout,
        mptcp: plan.mptcp.carries(0),
    };
    let programs =
        command::Programs::start(programs_plan, &stop, || signals.interrupted(), monotonic_ns)?;
    let driver = &mut made.driver;
    let t0 = driver.t0_ns();
    // The links count the program's segments by the port it was told.
    driver.set_flow_port(0, programs.port());
    let end = if opts.command_bounded {
        SimTime::ZERO + sc.duration()
    } else {
        SimTime::MAX
    };
    let ran = driver.run(end, opts.realtime, |_| {
        signals.interrupted() || programs.done()
    });
    let end_ns = monotonic_ns().saturating_sub(t0);
    driver.finish_captures();
    let (sinks, mut report_of_command, conns) = programs.finish(&stop, signals.interrupted());
    ran?;
    let last_data_ns = driver.stats.flow_last_data_at[0].map(|t| t0 + t.as_nanos());
    let iw = f0.tcp.initial_window_segments;
    report_of_command.connections = connections::reports(&conns, iw);
    let exited = report_of_command.ended_by == "exit";
    let (senders, sinks) = connections::first_flow(&conns, sinks, exited, iw, last_data_ns);
    let sender_ns = std::iter::once(plan.tun_of(f0.from));
    let recoveries = parity::recoveries(&made.namespaces, &[false], sender_ns, &senders);
    Ok(Measured {
        end_ns,
        senders,
        sinks,
        farlink: Vec::new(),
        expected_digests: Vec::new(),
        recoveries,
        ce_received: Vec::new(),
        command: Some(report_of_command),
        traffic: Vec::new(),
    })
}

/// The built-in workload: a bulk transfer per flow, the kernel's or farlink's sender
/// (`workload.rs`), run until every sender is done or the scenario's duration ends.
fn run_builtin(
    sc: &Scenario,
    opts: &EmuOptions,
    plan: &Plan,
    made: &mut Made,
    signals: &Signals,
) -> Result<Measured, EmuError> {
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = made.driver.t0_ns();
    let mut w = workload::Workload::default();
    let watch = crate::mptcp::SubflowWatch::start(&plan.mptcp, &made.namespaces)?;
    let keeper = crate::mptcp::keep_endpoints(sc, plan, made);
    let started = w.start(sc, opts, plan, &made.namespaces, t0, &stop);
    let end = SimTime::ZERO + sc.duration();
    let driver = &mut made.driver;
    let ran = started.and_then(|()| {
        driver.run(end, opts.realtime, |users_done| {
            signals.interrupted() || (users_done && w.senders_done())
        })
    });
    let end_ns = monotonic_ns().saturating_sub(t0);
    driver.finish_captures();
    stop.store(true, Ordering::Relaxed);
    let workload::Finished {
        senders,
        sinks,
        traffic,
    } = w.finish(&plan.choices, driver, t0);
    driver.members.notes = None;
    if let Some(k) = keeper {
        made.kernel.mptcp.extend(k.finish());
    }
    if let Some(w) = watch {
        w.finish(&plan.mptcp, &mut made.driver.members);
    }
    ran?;
    let farlink: Vec<bool> = plan.choices.iter().map(SenderChoice::is_farlink).collect();
    let sender_ns = sc.flows().iter().map(|f| plan.tun_of(f.from));
    let recoveries = parity::recoveries(&made.namespaces, &farlink, sender_ns, &senders);
    Ok(Measured {
        end_ns,
        senders,
        sinks,
        farlink,
        expected_digests: wire_sender::expected_digests(sc),
        recoveries,
        ce_received: ce_received(sc, plan, &made.namespaces),
        command: None,
        traffic,
    })
}

/// Each flow's CE-marked packets received, from its receiver's namespace where it is the only
/// flow received there and its `tcp.ecn` is on (pure ACKs are never ECT, so only data is
/// marked); `None` elsewhere.
fn ce_received(sc: &Scenario, plan: &Plan, namespaces: &[Netns]) -> Vec<Option<u64>> {
    let receiver_ns: Vec<usize> = sc.flows().iter().map(|f| plan.tun_of(f.to)).collect();
    sc.flows()
        .iter()
        .zip(&receiver_ns)
        .map(|(f, &ns)| {
            let alone = receiver_ns.iter().filter(|&&n| n == ns).count() == 1;
            if f.tcp.ecn == EcnMode::Off || !alone {
                return None;
            }
            namespaces
                .get(ns)
                .and_then(|n| crate::nstat::ce_received(n).ok().flatten())
        })
        .collect()
}
