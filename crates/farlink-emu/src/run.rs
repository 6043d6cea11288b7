//! One emulation: checks, namespaces and devices, the driver and the workload, the result,
//! and the clean-up, whatever ends the run.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use farlink_core::path;
use farlink_core::pcap::NodeAddresses;
use farlink_core::scenario::{AppSpec, Scenario};
use farlink_core::tcp::receiver::DelayedAck;
use farlink_core::time::SimTime;
use farlink_core::ScenarioError;

use crate::bulk::{self, SenderPlan};
use crate::clock::monotonic_ns;
use crate::command;
use crate::connections;
use crate::driver::{Driver, IoPath, Route};
use crate::kernel;
use crate::netns::{self, Netns, RunLock};
use crate::parity;
use crate::report::{self, EmuResult};
use crate::settings::{FlowSettings, Kernel};
use crate::signals::Signals;
use crate::tun::Tun;
use crate::wire_sender::{self, SenderChoice};
use crate::{EmuError, EmuOptions};

/// The first flow's sink listens on this port, flow `k`'s on `BASE_PORT + k`.
const BASE_PORT: u16 = 5001;

/// Whether this process may make namespaces and TUN devices.
pub(crate) fn check_host() -> Result<(), EmuError> {
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

/// What the emulator cannot run yet, named by the scenario field.
fn check_scenario(sc: &Scenario) -> Result<(), EmuError> {
    for (i, f) in sc.flows().iter().enumerate() {
        if !f.relays.is_empty() {
            return Err(ScenarioError::new(
                format!("flows[{i}].relays"),
                "the emulator does not split connections at relays",
            )
            .into());
        }
        if matches!(f.app, AppSpec::Telnet { .. }) {
            return Err(ScenarioError::new(
                format!("flows[{i}].app"),
                "the emulator's built-in workload is a bulk transfer (app.kind = \"bulk\" or \
                 \"unbounded\")",
            )
            .into());
        }
        if f.from == f.to {
            return Err(ScenarioError::new(
                format!("flows[{i}]"),
                "sender and receiver are the same node",
            )
            .into());
        }
    }
    if sc.flows().len() > 64 {
        return Err(ScenarioError::new("flows", "the emulator runs at most 64 flows").into());
    }
    Ok(())
}

/// A program's sockets are the kernel's, so a command cannot run with farlink's sender (the
/// built-in transfer's): the refusal names the controller and the fixes.
fn refuse_farlink_sender(
    sc: &Scenario,
    opts: &EmuOptions,
    choices: &[SenderChoice],
) -> Result<(), EmuError> {
    let Some((k, choice)) = choices.iter().enumerate().find(|(_, c)| c.is_farlink()) else {
        return Ok(());
    };
    if opts.sender.as_deref() == Some("farlink") {
        return Err(EmuError::Usage(
            "--sender farlink: farlink's sender runs the built-in bulk transfer only; a command \
             (-- COMMAND, --shell) uses the kernel's TCP (drop --sender farlink)"
                .into(),
        ));
    }
    let name = choice.congestion();
    let origin = if opts.tcp.is_some() {
        "--tcp".to_owned()
    } else {
        format!(
            "flows[{k}].tcp.cc of {}",
            sc.name().unwrap_or("the scenario")
        )
    };
    let have = kernel::kernel_controllers().join(" ");
    Err(EmuError::Usage(format!(
        "{origin}: a command (-- COMMAND, --shell) uses the kernel's TCP, and this kernel has no \
         \"{name}\" (it has: {have}); give --tcp with one of those (e.g. --tcp cubic), or run \
         the built-in transfer on farlink's sender (--sender farlink, without the command)"
    )))
}

/// Runs `sc` on the emulator: real kernel TCP between namespaces, through the scenario's
/// links in real time. Everything this made is removed before it returns, whatever happened.
pub fn emulate(sc: &Scenario, opts: &EmuOptions) -> Result<EmuResult, EmuError> {
    check_scenario(sc)?;
    check_host()?;
    let choices = wire_sender::plan(sc, opts)?;
    if opts.command.is_some() {
        refuse_farlink_sender(sc, opts, &choices)?;
    }
    let congestion: Vec<String> = choices.iter().map(SenderChoice::congestion).collect();
    // Before anything of ours exists: what a killed run left behind.
    let removed_stale = netns::remove_stale();
    let signals = Signals::install()?;
    let lock = RunLock::acquire()?;

    let nodes = sc.nodes();
    let addrs = NodeAddresses::new(nodes);
    let addr = |n: usize| Ipv4Addr::from(addrs.get(&nodes[n]).unwrap_or([10, 0, 0, 1]));
    // Nodes where only farlink's senders send have no namespace (`wire_sender.rs`).
    let users = wire_sender::user_nodes(sc, &choices)?;
    let ends: BTreeSet<usize> = sc.flows().iter().flat_map(|f| [f.from, f.to]).collect();
    let ends: Vec<usize> = ends.into_iter().filter(|n| !users.contains(n)).collect();
    let tun_of = |n: usize| {
        ends.iter()
            .position(|&e| e == n)
            .or_else(|| users.iter().position(|&u| u == n).map(|u| ends.len() + u))
            .unwrap_or(0)
    };
    let device = format!("farlink-{}", lock.id);
    let first = &sc.flows()[0].tcp;
    let mtu = sc
        .flows()
        .iter()
        .map(|f| f.tcp.full_packet_bytes())
        .max()
        .unwrap_or(1500);

    let mut namespaces = Vec::with_capacity(ends.len());
    let mut tuns = Vec::with_capacity(ends.len());
    let mut kernel = Kernel::default();
    for &n in &ends {
        let ns = Netns::create(&lock.id, &nodes[n])?;
        let dev = device.clone();
        let offload = opts.offload;
        tuns.push(ns.run(move || Tun::create_with(&dev, offload))??);
        let o = first.options;
        let flag = |b: bool| String::from(if b { "1" } else { "0" });
        let sysctls: Vec<(&'static str, String)> = vec![
            ("net.ipv4.tcp_sack", flag(o.sack)),
            ("net.ipv4.tcp_timestamps", flag(o.timestamps)),
            ("net.ipv4.tcp_window_scaling", flag(o.window_scaling)),
            ("net.ipv4.tcp_reordering", first.dup_thresh.to_string()),
            // Each run starts from nothing the kernel remembered of earlier ones.
            ("net.ipv4.tcp_no_metrics_save", flag(true)),
            // Only the scenario's IPv4 packets cross the links.
            ("net.ipv6.conf.all.disable_ipv6", flag(true)),
            ("net.ipv6.conf.default.disable_ipv6", flag(true)),
        ];
        let written = sysctls.clone();
        ns.run(move || {
            sysctls
                .iter()
                .try_for_each(|(k, v)| netns::write_sysctl(k, v))
        })??;
        let me = addr(n).to_string();
        ns.ip(&["addr", "add", &format!("{me}/32"), "dev", &device])?;
        ns.ip(&["link", "set", &device, "mtu", &mtu.to_string(), "up"])?;
        namespaces.push(ns);
        if kernel.sysctls.is_empty() {
            kernel.sysctls = written
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
        }
    }

    // Routes: each flow's path and its reverse, and a kernel route to the peer in each end.
    let mut routes: Vec<Route> = Vec::new();
    for f in sc.flows() {
        let fwd: Vec<usize> = f.path.iter().map(|&h| path::dir_index(h)).collect();
        let rev: Vec<usize> = f
            .path
            .iter()
            .rev()
            .map(|&h| path::dir_index(h.reversed()))
            .collect();
        for (a, b, dirs) in [(f.from, f.to, fwd), (f.to, f.from, rev)] {
            if routes
                .iter()
                .any(|r| r.from_tun == tun_of(a) && r.to_addr == addr(b).octets())
            {
                continue;
            }
            let mut args = vec![
                "route".to_owned(),
                "add".to_owned(),
                format!("{}/32", addr(b)),
                "dev".to_owned(),
                device.clone(),
                "initcwnd".to_owned(),
                f.tcp.initial_window_segments.to_string(),
                "rto_min".to_owned(),
                format!("{}ms", f.tcp.rtt.min_rto.as_nanos().div_ceil(1_000_000)),
            ];
            if f.tcp.delayed_ack == DelayedAck::Off {
                args.extend(["quickack".to_owned(), "1".to_owned()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if let Some(ns) = namespaces.get(tun_of(a)) {
                ns.ip(&args)?;
                kernel
                    .routes
                    .push(format!("{}: {}", nodes[a], args[2..].join(" ")));
            }
            routes.push(Route {
                from_tun: tun_of(a),
                to_addr: addr(b).octets(),
                to_tun: tun_of(b),
                dirs,
            });
        }
    }
    kernel.congestion = congestion.clone();
    let settings: Vec<FlowSettings> = sc
        .flows()
        .iter()
        .zip(&choices)
        .map(|(f, c)| match c {
            SenderChoice::Kernel(name) => kernel::flow_settings(f, first, name, mtu),
            SenderChoice::Farlink(tcp) => wire_sender::flow_settings(tcp),
        })
        .collect();

    let links = path::build(sc)?;
    let ports: Vec<u16> = (0..sc.flows().len())
        .map(|k| BASE_PORT + k as u16)
        .collect();
    let slot_bytes = (mtu as usize).max(2048);
    let mut captures = Vec::with_capacity(ends.len() + users.len());
    for &n in ends.iter().chain(&users) {
        captures.push(match &opts.pcap_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| EmuError::sys(dir, e))?;
                let path = std::path::Path::new(dir).join(format!("{}.pcap", nodes[n]));
                Some(std::fs::File::create(&path).map_err(|e| EmuError::sys(path.display(), e))?)
            }
            None => None,
        });
    }
    let wire_flows = wire_sender::wire_flows(sc, &choices, &users, &ports, addr);
    let mut driver = Driver::new(
        links,
        routes,
        tuns,
        wire_flows,
        captures,
        slot_bytes,
        ports.clone(),
        opts.spin_us * 1000,
        opts.record_deliveries,
        if opts.offload {
            IoPath::Offload
        } else {
            IoPath::PerPacket
        },
    )?;
    let t0 = driver.t0_ns();

    let stop = Arc::new(AtomicBool::new(false));
    if let Some(argv) = &opts.command {
        // The workload is a program (and perhaps its server): crate::command.
        let f0 = &sc.flows()[0];
        let plan = command::Plan {
            argv,
            server: opts.server.as_deref(),
            sender_ns: &namespaces[tun_of(f0.from)],
            receiver_ns: &namespaces[tun_of(f0.to)],
            peer: SocketAddrV4::new(addr(f0.to), ports[0]),
            congestion: &congestion[0],
            sinks: sc
                .flows()
                .iter()
                .enumerate()
                .map(|(k, f)| {
                    let at = SocketAddrV4::new(addr(f.to), ports[k]);
                    (
                        &namespaces[tun_of(f.to)],
                        at,
                        Some(f.tcp.receive_buffer_bytes),
                    )
                })
                .collect(),
            stdout: &opts.command_stdout,
        };
        let programs =
            command::Programs::start(plan, &stop, || signals.interrupted(), monotonic_ns)?;
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
        let (sink_outcomes, mut report_of_command, conns) =
            programs.finish(&stop, signals.interrupted());
        ran?;
        // The first flow's figures are the program's connections' (`connections.rs`).
        let last_data_ns = driver.stats.flow_last_data_at[0].map(|t| t0 + t.as_nanos());
        let (started, sink_outcomes) = connections::first_flow(
            &conns,
            sink_outcomes,
            &mut report_of_command,
            f0.tcp.initial_window_segments,
            last_data_ns,
        );
        let sender_ns = std::iter::once(tun_of(f0.from));
        let recoveries = parity::recoveries(&namespaces, &[false], sender_ns, &started);
        let mut result = report::build(
            sc,
            &driver,
            report::Outcomes {
                t0_ns: t0,
                end_ns,
                senders: &started,
                sinks: &sink_outcomes,
                congestion: &congestion,
                farlink: &[],
                expected_digests: &[],
                settings,
                interrupted: signals.interrupted(),
                run_id: lock.id.clone(),
                removed_stale,
                spin_us: opts.spin_us,
                kernel,
                recoveries,
                program: true,
            },
        );
        result.command = Some(report_of_command);
        drop(driver);
        drop(namespaces);
        return Ok(result);
    }

    // The workload: a sink per flow in the receiver's namespace, then the senders.
    let mut sinks = Vec::new();
    let mut senders = Vec::new();
    let mut setup = || -> Result<(), EmuError> {
        for (k, f) in sc.flows().iter().enumerate() {
            if !opts.listen {
                break;
            }
            let ready = Arc::new(AtomicBool::new(false));
            let at = SocketAddrV4::new(addr(f.to), ports[k]);
            let (r, s) = (Arc::clone(&ready), Arc::clone(&stop));
            let rcvbuf = Some(f.tcp.receive_buffer_bytes);
            // Only a bulk transfer's bytes are checked (`verified`): an unbounded one's sink
            // and sender skip the digest and the payload stream, whose cost at several Gbit/s
            // would be the workload's, not the path's (`make bench-emu`).
            let verify = matches!(f.app, AppSpec::Bulk { .. });
            sinks.push(namespaces[tun_of(f.to)].spawn("farlink-sink", move || {
                bulk::sink(at, rcvbuf, r, s, monotonic_ns, verify)
            })?);
            while !ready.load(Ordering::Acquire) && !sinks.last().is_some_and(|h| h.is_finished()) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        for (k, f) in sc.flows().iter().enumerate() {
            if choices[k].is_farlink() {
                continue;
            }
            let size_bytes = match f.app {
                AppSpec::Bulk { size_bytes } => size_bytes,
                _ => u64::MAX,
            };
            let plan = SenderPlan {
                peer: SocketAddrV4::new(addr(f.to), ports[k]),
                size_bytes,
                start_ns: t0 + f.start.as_nanos(),
                stop_ns: f.stop.map(|s| t0 + s.as_nanos()),
                congestion: congestion[k].clone(),
                send_buffer_bytes: f.tcp.send_buffer_bytes,
                payload_seed: matches!(f.app, AppSpec::Bulk { .. })
                    .then(|| wire_sender::payload_seed(sc, k)),
            };
            let s = Arc::clone(&stop);
            senders.push(namespaces[tun_of(f.from)].spawn("farlink-sender", move || {
                bulk::sender(plan, s, monotonic_ns)
            })?);
        }
        Ok(())
    };
    let started = setup();
    let end = SimTime::ZERO + sc.duration();
    let ran = started.and_then(|()| {
        driver.run(end, opts.realtime, |users_done| {
            signals.interrupted() || (users_done && senders.iter().all(|h| h.is_finished()))
        })
    });
    let end_ns = monotonic_ns().saturating_sub(t0);
    driver.finish_captures();
    stop.store(true, Ordering::Relaxed);
    let sink_outcomes: Vec<_> = sinks
        .into_iter()
        .map(|h| h.join().ok().flatten().unwrap_or_default())
        .collect();
    let mut kernel_outcomes = senders
        .into_iter()
        .map(|h| h.join().ok().flatten().unwrap_or_default());
    let mut wire_outcomes: Vec<_> = choices.iter().map(|_| None).collect();
    for w in driver.wire_flows() {
        wire_outcomes[w.flow] = Some(w.outcome(t0));
    }
    let sender_outcomes: Vec<_> = choices
        .iter()
        .zip(wire_outcomes)
        .map(|(c, w)| {
            if c.is_farlink() {
                w
            } else {
                kernel_outcomes.next()
            }
            .unwrap_or_default()
        })
        .collect();
    ran?;
    let farlink: Vec<bool> = choices.iter().map(SenderChoice::is_farlink).collect();
    let sender_ns = sc.flows().iter().map(|f| tun_of(f.from));
    let recoveries = parity::recoveries(&namespaces, &farlink, sender_ns, &sender_outcomes);
    let expected_digests = wire_sender::expected_digests(sc);
    let result = report::build(
        sc,
        &driver,
        report::Outcomes {
            t0_ns: t0,
            end_ns,
            senders: &sender_outcomes,
            sinks: &sink_outcomes,
            congestion: &congestion,
            farlink: &farlink,
            expected_digests: &expected_digests,
            settings,
            interrupted: signals.interrupted(),
            run_id: lock.id.clone(),
            removed_stale,
            spin_us: opts.spin_us,
            kernel,
            recoveries,
            program: false,
        },
    );
    drop(driver);
    drop(namespaces);
    Ok(result)
}
