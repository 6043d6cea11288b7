//! The plan of one emulation, decided before anything is made: what the emulator cannot run,
//! whose sender each flow gets, the namespaces (one per end node where a kernel sends or
//! receives), their addresses and device, the sysctls, the routes both ways with the kernel's
//! route options, and per flow the TCP settings the kernel will be given.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use farlink_core::path;
use farlink_core::pcap::NodeAddresses;
use farlink_core::scenario::{AppSpec, FlowSpec, Scenario};
use farlink_core::tcp::ecn::EcnMode;
use farlink_core::tcp::receiver::DelayedAck;
use farlink_core::ScenarioError;

use crate::error::EmuError;
use crate::kernel;
use crate::mptcp::MptcpPlan;
use crate::options::EmuOptions;
use crate::route::Route;
use crate::settings::FlowSettings;
use crate::wire_sender::{self, SenderChoice};

/// The first flow's sink listens on this port, flow `k`'s on `BASE_PORT + k`.
const BASE_PORT: u16 = 5001;

/// A kernel route to the peer in a namespace: `ip` arguments, and the line the result keeps.
pub(crate) struct KernelRoute {
    pub(crate) tun: usize,
    pub(crate) args: Vec<String>,
    pub(crate) said: String,
}

/// What a run will make and give the kernel.
pub(crate) struct Plan {
    /// Per flow, whose sender sends and with which controller.
    pub(crate) choices: Vec<SenderChoice>,
    pub(crate) congestion: Vec<String>,
    /// End nodes with a namespace and a TUN device, in order of their TUNs.
    pub(crate) ends: Vec<usize>,
    /// Nodes where only farlink's senders send: a TUN each after the ends', no namespace.
    pub(crate) users: Vec<usize>,
    /// The TUN devices' name (the same in every namespace) and MTU.
    pub(crate) device: String,
    pub(crate) mtu: u32,
    /// Each namespace's sysctls (the first flow's TCP settings).
    pub(crate) sysctls: Vec<(&'static str, String)>,
    /// Each flow's path and its reverse, between TUNs, for the driver.
    pub(crate) routes: Vec<Route>,
    pub(crate) kernel_routes: Vec<KernelRoute>,
    pub(crate) settings: Vec<FlowSettings>,
    /// Each flow's sink port.
    pub(crate) ports: Vec<u16>,
    /// The Multipath TCP flows' member paths (`mptcp.rs`), and the `ip` commands of each
    /// namespace for them.
    pub(crate) mptcp: MptcpPlan,
    pub(crate) mptcp_commands: Vec<(usize, Vec<String>)>,
    addrs: Vec<Ipv4Addr>,
}

/// What the emulator cannot run yet, named by the scenario field.
pub(crate) fn check_scenario(sc: &Scenario) -> Result<(), EmuError> {
    for (i, f) in sc.flows().iter().enumerate() {
        if !f.relays.is_empty() {
            return Err(ScenarioError::new(
                format!("flows[{i}].relays"),
                "the emulator does not split connections at relays",
            )
            .into());
        }
        crate::traffic::check_flow(i, f)?;
        if matches!(f.app, AppSpec::Telnet { .. }) {
            return Err(ScenarioError::new(
                format!("flows[{i}].app"),
                "the emulator does not run telnet flows (it runs app.kind = \"bulk\", \
                 \"unbounded\", \"udp_cbr\", \"udp_onoff\", \"flows_poisson\" and \
                 \"request_response\")",
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
pub(crate) fn refuse_farlink_sender(
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

impl Plan {
    /// The plan for `sc` with `choices` (`senders`), its device named for run `run_id`.
    pub(crate) fn new(
        sc: &Scenario,
        choices: Vec<SenderChoice>,
        run_id: &str,
    ) -> Result<Plan, EmuError> {
        let nodes = sc.nodes();
        let addresses = NodeAddresses::new(nodes);
        let addrs = nodes
            .iter()
            .map(|n| Ipv4Addr::from(addresses.get(n).unwrap_or([10, 0, 0, 1])))
            .collect();
        // Nodes where only farlink's senders send have no namespace (`wire_sender.rs`).
        let users = wire_sender::user_nodes(sc, &choices)?;
        let ends: BTreeSet<usize> = sc.flows().iter().flat_map(|f| [f.from, f.to]).collect();
        let mtu = crate::traffic::tun_mtu(sc)?;
        let mut plan = Plan {
            congestion: choices.iter().map(SenderChoice::congestion).collect(),
            choices,
            ends: ends.into_iter().filter(|n| !users.contains(n)).collect(),
            users,
            device: format!("farlink-{run_id}"),
            mtu,
            sysctls: sysctls(&sc.flows()[0]),
            routes: Vec::new(),
            kernel_routes: Vec::new(),
            settings: Vec::new(),
            ports: (0..sc.flows().len())
                .map(|k| BASE_PORT + k as u16)
                .collect(),
            mptcp: MptcpPlan::default(),
            mptcp_commands: Vec::new(),
            addrs,
        };
        plan.route_mptcp(sc)?;
        plan.route(sc);
        plan.settings = plan.flow_settings(sc);
        Ok(plan)
    }

    /// Node `n`'s address.
    pub(crate) fn addr(&self, n: usize) -> Ipv4Addr {
        self.addrs[n]
    }

    /// The TUN of node `n`: an end's, or after them a user node's.
    pub(crate) fn tun_of(&self, n: usize) -> usize {
        self.ends
            .iter()
            .position(|&e| e == n)
            .or_else(|| {
                let u = self.users.iter().position(|&u| u == n)?;
                Some(self.ends.len() + u)
            })
            .unwrap_or(0)
    }

    /// The Multipath TCP flows' routes per member (before the others: the driver takes a
    /// route for a packet's source first) and their namespaces' commands.
    fn route_mptcp(&mut self, sc: &Scenario) -> Result<(), EmuError> {
        self.mptcp = MptcpPlan::new(sc, |n| self.tun_of(n), |n| self.addr(n))?;
        self.routes.extend(self.mptcp.routes(sc));
        for m in &self.mptcp.flows {
            let f = &sc.flows()[m.flow];
            // The route options of the receiver's routes back to the members' addresses.
            let opts = self.route_args(f, f.from).split_off(5);
            self.mptcp_commands
                .extend(self.mptcp.commands(&self.device, &opts));
        }
        Ok(())
    }

    /// Whether TUNs `a` and `b` are a Multipath TCP flow's two ends.
    fn mptcp_pair(&self, a: usize, b: usize) -> bool {
        let ends = |m: &crate::mptcp::MptcpFlow| [m.client_tun, m.server_tun];
        self.mptcp
            .flows
            .iter()
            .any(|m| ends(m) == [a, b] || ends(m) == [b, a])
    }

    /// Each flow's path and its reverse, once per pair of a TUN and a peer, and a kernel
    /// route to the peer where the TUN is a namespace's.
    fn route(&mut self, sc: &Scenario) {
        for f in sc.flows() {
            let fwd: Vec<usize> = f.path.iter().map(|&h| path::dir_index(h)).collect();
            let rev: Vec<usize> = f
                .path
                .iter()
                .rev()
                .map(|&h| path::dir_index(h.reversed()))
                .collect();
            for (a, b, dirs) in [(f.from, f.to, fwd), (f.to, f.from, rev)] {
                let (from_tun, to_addr) = (self.tun_of(a), self.addr(b).octets());
                let dest = format!("{}/32", self.addr(b));
                let routed = self.routes.iter().any(|r| {
                    r.from_tun == from_tun && r.to_addr == to_addr && r.from_addr.is_none()
                });
                let kernel_routed = self
                    .kernel_routes
                    .iter()
                    .any(|k| k.tun == from_tun && k.args[2] == dest);
                if routed || kernel_routed {
                    continue;
                }
                if from_tun < self.ends.len() {
                    let args = self.route_args(f, b);
                    let said = format!("{}: {}", sc.nodes()[a], args[2..].join(" "));
                    let tun = from_tun;
                    self.kernel_routes.push(KernelRoute { tun, args, said });
                }
                let to_tun = self.tun_of(b);
                if self.mptcp_pair(from_tun, to_tun) {
                    // Between a Multipath TCP flow's ends every packet has a member's route.
                    continue;
                }
                self.routes.push(Route {
                    from_tun,
                    from_addr: None,
                    to_addr,
                    to_tun,
                    dirs,
                });
            }
        }
    }

    /// `ip route add` to peer `b` with flow `f`'s initial window, minimum RTO and quick ACKs.
    fn route_args(&self, f: &FlowSpec, b: usize) -> Vec<String> {
        let mut args = vec![
            "route".to_owned(),
            "add".to_owned(),
            format!("{}/32", self.addr(b)),
            "dev".to_owned(),
            self.device.clone(),
            "initcwnd".to_owned(),
            f.tcp.initial_window_segments.to_string(),
            "rto_min".to_owned(),
            format!("{}ms", f.tcp.rtt.min_rto.as_nanos().div_ceil(1_000_000)),
        ];
        if f.tcp.delayed_ack == DelayedAck::Off {
            args.extend(["quickack".to_owned(), "1".to_owned()]);
        }
        args
    }

    /// Per flow, the TCP settings its sender's kernel (or farlink's sender) takes.
    fn flow_settings(&self, sc: &Scenario) -> Vec<FlowSettings> {
        let first = &sc.flows()[0].tcp;
        sc.flows()
            .iter()
            .zip(&self.choices)
            .map(|(f, c)| match c {
                // A UDP flow has no TCP to set.
                _ if matches!(f.app, AppSpec::Udp(_)) => FlowSettings::default(),
                SenderChoice::Kernel(name) => kernel::flow_settings(f, first, name, self.mtu),
                SenderChoice::Farlink(tcp) => wire_sender::flow_settings(tcp),
            })
            .collect()
    }
}

/// Each namespace's sysctls, from the first flow's TCP settings.
fn sysctls(first: &FlowSpec) -> Vec<(&'static str, String)> {
    let (o, t) = (first.tcp.options, &first.tcp);
    let flag = |b: bool| String::from(if b { "1" } else { "0" });
    let mut sysctls = vec![
        ("net.ipv4.tcp_sack", flag(o.sack)),
        ("net.ipv4.tcp_timestamps", flag(o.timestamps)),
        ("net.ipv4.tcp_window_scaling", flag(o.window_scaling)),
        ("net.ipv4.tcp_reordering", t.dup_thresh.to_string()),
        // Each run starts from nothing the kernel remembered of earlier ones.
        ("net.ipv4.tcp_no_metrics_save", flag(true)),
        // Only the scenario's IPv4 packets cross the links.
        ("net.ipv6.conf.all.disable_ipv6", flag(true)),
        ("net.ipv6.conf.default.disable_ipv6", flag(true)),
    ];
    // `tcp.ecn`: the kernel requests ECN on its SYNs (RFC 3168); otherwise its default (2:
    // accept when asked) stays, as before the key existed. The kernel's own response is
    // RFC 3168's whatever the mode: "accurate" asks for DCTCP's in farlink's TCP only.
    if t.ecn != EcnMode::Off {
        sysctls.push(("net.ipv4.tcp_ecn", flag(true)));
    }
    sysctls
}

/// Whose sender each flow gets; a command refuses farlink's.
pub(crate) fn senders(sc: &Scenario, opts: &EmuOptions) -> Result<Vec<SenderChoice>, EmuError> {
    let choices = crate::traffic::choices(sc, wire_sender::plan(sc, opts)?)?;
    crate::mptcp::refuse_farlink_sender(sc, opts, &choices)?;
    if opts.command.is_some() {
        crate::traffic::refuse_with_command(sc)?;
        refuse_farlink_sender(sc, opts, &choices)?;
    }
    Ok(choices)
}
