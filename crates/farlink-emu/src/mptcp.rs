//! Multipath TCP in the emulator (`flows[N].transport = "mptcp"`): the kernel's MPTCP over
//! one path per member of the flow's bundle.
//!
//! As in the simulator (`farlink_core::world::mptcp`), each member of the bundle is a link of
//! its own in each direction (`farlink_core::path::member_link_dir`: the member's rate, delay,
//! queue, ARQ and error stream), driven by the bundle's control plane through
//! `BundleOutput::Member` (`driver.rs`). The kernel sees one address per member on the
//! sender's side (member 0's is the node's own, member `k`'s is `10.k.x.y` for the node's
//! `10.0.x.y`), and the driver routes a packet by its source and destination address: from
//! the sender's member-`k` address to the receiver, or from the receiver to it, through member
//! `k`'s links. Linux's in-kernel path manager opens a subflow from each `subflow` endpoint
//! (the sender's member addresses beyond the first) to the receiver's address; when a member's
//! drop is noticed its endpoint is removed (the subflow closes, as when its interface goes
//! down) and when the member is back it is added again, and the path manager opens a new
//! subflow (`EndpointKeeper`).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::mpsc;
use std::thread::JoinHandle;

use farlink_core::path::{self, LinkDir, MemberChange};
use farlink_core::scenario::{Scenario, Transport};
use farlink_core::time::SimTime;
use farlink_core::world::SubflowSummary;
use farlink_core::ScenarioError;

use crate::connections::Monitor;
use crate::error::EmuError;
use crate::netns::Netns;
use crate::route::Route;

/// One bundle link whose members carry subflows: each member's own directions in the
/// driver's `PathLinks::dirs` (after the scenario's links').
#[derive(Clone, Debug)]
pub(crate) struct MemberLinks {
    pub(crate) link: usize,
    /// Per member, its forward and reverse direction.
    pub(crate) dirs: Vec<[usize; 2]>,
}

/// A Multipath TCP flow's addressing.
#[derive(Clone, Debug)]
pub(crate) struct MptcpFlow {
    pub(crate) flow: usize,
    /// Index into [`MptcpPlan::links`].
    pub(crate) links: usize,
    /// The sender's (client's) TUN and its address per member.
    pub(crate) client_tun: usize,
    pub(crate) client_addrs: Vec<Ipv4Addr>,
    pub(crate) server_tun: usize,
    pub(crate) server: Ipv4Addr,
}

/// Every Multipath TCP flow of a run and the member links they use.
#[derive(Clone, Debug, Default)]
pub(crate) struct MptcpPlan {
    pub(crate) links: Vec<MemberLinks>,
    pub(crate) flows: Vec<MptcpFlow>,
}

/// Member `k`'s address on a node whose own is `base` (`10.0.x.y`): `10.k.x.y`, member 0's
/// the node's own.
pub(crate) fn member_addr(base: Ipv4Addr, k: usize) -> Ipv4Addr {
    let [a, _, c, d] = base.octets();
    if k == 0 {
        base
    } else {
        Ipv4Addr::new(a, k as u8, c, d)
    }
}

impl MptcpPlan {
    /// The plan for `sc`'s Multipath TCP flows; `tun_of` and `addr` are the run's (`Plan`).
    pub(crate) fn new(
        sc: &Scenario,
        tun_of: impl Fn(usize) -> usize,
        addr: impl Fn(usize) -> Ipv4Addr,
    ) -> Result<MptcpPlan, EmuError> {
        let mut plan = MptcpPlan::default();
        // Member directions follow the scenario's links' in the driver.
        let mut next_dir = sc.links().len() * 2;
        for (i, f) in sc.flows().iter().enumerate() {
            let Transport::Mptcp(spec) = f.transport else {
                continue;
            };
            let link = f.path[spec.bundle_hop].link;
            let Some(b) = &sc.links()[link].bundle else {
                return Err(ScenarioError::new(
                    format!("flows[{i}].transport"),
                    "Multipath TCP runs over a bundle link's members",
                )
                .into());
            };
            if b.members.len() > 255 {
                return Err(ScenarioError::new(
                    format!("links[{link}].bundle.members"),
                    "the emulator gives each member an address 10.k.x.y: at most 255",
                )
                .into());
            }
            let links = match plan.links.iter().position(|m| m.link == link) {
                Some(l) => l,
                None => {
                    let dirs = (0..b.members.len())
                        .map(|k| [next_dir + 2 * k, next_dir + 2 * k + 1])
                        .collect();
                    next_dir += 2 * b.members.len();
                    plan.links.push(MemberLinks { link, dirs });
                    plan.links.len() - 1
                }
            };
            plan.flows.push(MptcpFlow {
                flow: i,
                links,
                client_tun: tun_of(f.from),
                client_addrs: (0..b.members.len())
                    .map(|k| member_addr(addr(f.from), k))
                    .collect(),
                server_tun: tun_of(f.to),
                server: addr(f.to),
            });
        }
        Ok(plan)
    }

    /// Whether scenario flow `i` is a Multipath TCP flow.
    pub(crate) fn carries(&self, i: usize) -> bool {
        self.flows.iter().any(|m| m.flow == i)
    }

    /// The driver's routes of the Multipath TCP flows: per member, from the sender's member
    /// address to the receiver and back to it, through the member's links at the bundle hop.
    pub(crate) fn routes(&self, sc: &Scenario) -> Vec<Route> {
        let mut routes = Vec::new();
        for m in &self.flows {
            let f = &sc.flows()[m.flow];
            let Transport::Mptcp(spec) = f.transport else {
                continue;
            };
            for (k, client) in m.client_addrs.iter().enumerate() {
                let member = self.links[m.links].dirs[k];
                let dir_of = |h: farlink_core::scenario::Hop, at: usize| {
                    if at == spec.bundle_hop {
                        member[usize::from(!h.forward)]
                    } else {
                        path::dir_index(h)
                    }
                };
                let fwd = (0..f.path.len()).map(|j| dir_of(f.path[j], j)).collect();
                let rev = (0..f.path.len())
                    .rev()
                    .map(|j| dir_of(f.path[j].reversed(), j))
                    .collect();
                routes.push(Route {
                    from_tun: m.client_tun,
                    from_addr: Some(client.octets()),
                    to_addr: m.server.octets(),
                    to_tun: m.server_tun,
                    dirs: fwd,
                });
                routes.push(Route {
                    from_tun: m.server_tun,
                    from_addr: Some(m.server.octets()),
                    to_addr: client.octets(),
                    to_tun: m.client_tun,
                    dirs: rev,
                });
            }
        }
        routes
    }

    /// The member links' directions, in the order of their indices (after the scenario's).
    pub(crate) fn build_dirs(&self, sc: &Scenario) -> Result<Vec<LinkDir>, EmuError> {
        let mut dirs = Vec::new();
        for ml in &self.links {
            let l = &sc.links()[ml.link];
            for k in 0..ml.dirs.len() {
                for forward in [true, false] {
                    dirs.push(path::member_link_dir(sc.seed(), ml.link, l, forward, k)?);
                }
            }
        }
        Ok(dirs)
    }

    /// The `ip` commands of each namespace (by TUN) for the Multipath TCP flows, `device`
    /// being the TUN's name: the limits (a subflow and an accepted address per member), the
    /// sender's member addresses, the receiver's routes back to them, and the sender's
    /// `subflow` endpoints.
    pub(crate) fn commands(
        &self,
        device: &str,
        route_opts: &[String],
    ) -> Vec<(usize, Vec<String>)> {
        let mut out: Vec<(usize, Vec<String>)> = Vec::new();
        let words = |s: &[&str]| s.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let mut limited = Vec::new();
        for m in &self.flows {
            let n = m.client_addrs.len().min(8).to_string();
            for tun in [m.client_tun, m.server_tun] {
                if !limited.contains(&tun) {
                    limited.push(tun);
                    out.push((
                        tun,
                        words(&[
                            "mptcp",
                            "limits",
                            "set",
                            "subflows",
                            &n,
                            "add_addr_accepted",
                            &n,
                        ]),
                    ));
                }
            }
            for (k, a) in m.client_addrs.iter().enumerate().skip(1) {
                let a = a.to_string();
                out.push((
                    m.client_tun,
                    words(&["addr", "add", &format!("{a}/32"), "dev", device]),
                ));
                let mut route = words(&["route", "add", &format!("{a}/32"), "dev", device]);
                route.extend(route_opts.iter().cloned());
                out.push((m.server_tun, route));
                out.push((m.client_tun, endpoint_add(&a, device, k)));
            }
        }
        out
    }
}

/// `ip mptcp endpoint add` of member `k`'s address `a` as a `subflow` endpoint (id `k`).
fn endpoint_add(a: &str, device: &str, k: usize) -> Vec<String> {
    [
        "mptcp",
        "endpoint",
        "add",
        a,
        "dev",
        device,
        "id",
        &k.to_string(),
        "subflow",
    ]
    .iter()
    .map(|w| (*w).to_owned())
    .collect()
}

/// A member of a Multipath TCP flow's bundle became usable or not (the drop noticed, the
/// redial done), as the driver applied it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemberNote {
    /// Index into [`MptcpPlan::links`].
    pub(crate) links: usize,
    pub(crate) member: usize,
    pub(crate) usable: bool,
}

/// A thread that follows the members' state with the sender's `subflow` endpoints, as a
/// host's network manager does when an interface goes down and comes back: the driver sends
/// it [`MemberNote`]s (never waiting), it runs `ip mptcp endpoint` in the sender's namespace.
/// Member 0 carries the connection's first subflow from the node's own address, which is
/// not an endpoint: its subflow is left to the kernel's retransmissions.
pub(crate) struct EndpointKeeper {
    pub(crate) tx: mpsc::Sender<MemberNote>,
    thread: JoinHandle<Vec<String>>,
}

impl EndpointKeeper {
    /// `namespaces`: per TUN, the namespace's name and its node's; `t0_ns`, the run's time
    /// zero (monotonic), for the lines it keeps.
    pub(crate) fn start(
        plan: &MptcpPlan,
        namespaces: Vec<(String, String)>,
        device: String,
        t0_ns: u64,
    ) -> EndpointKeeper {
        let (tx, rx) = mpsc::channel::<MemberNote>();
        let flows = plan.flows.clone();
        let thread = std::thread::spawn(move || {
            let mut said = Vec::new();
            for note in rx {
                for m in flows.iter().filter(|m| m.links == note.links) {
                    if note.member == 0 {
                        continue;
                    }
                    let a = m.client_addrs[note.member].to_string();
                    let args = if note.usable {
                        endpoint_add(&a, &device, note.member)
                    } else {
                        [
                            "mptcp",
                            "endpoint",
                            "delete",
                            "id",
                            &note.member.to_string(),
                        ]
                        .iter()
                        .map(|w| (*w).to_owned())
                        .collect()
                    };
                    let (ns, node) = &namespaces[m.client_tun];
                    let at_s = crate::clock::monotonic_ns().saturating_sub(t0_ns) as f64 / 1e9;
                    let ran = std::process::Command::new("ip")
                        .args(["-n", ns])
                        .args(&args)
                        .output();
                    let line = format!("{at_s:.3} s, {node}: ip {}", args.join(" "));
                    said.push(match ran {
                        Ok(o) if o.status.success() => line,
                        Ok(o) => format!(
                            "{line}: failed: {}",
                            String::from_utf8_lossy(&o.stderr).trim()
                        ),
                        Err(e) => format!("{line}: failed: {e}"),
                    });
                }
            }
            said
        });
        EndpointKeeper { tx, thread }
    }

    /// Ends the thread once the driver is done with it: the changes it made, and how each
    /// went.
    pub(crate) fn finish(self) -> Vec<String> {
        drop(self.tx);
        self.thread.join().unwrap_or_default()
    }
}

/// The `ip` commands of [`MptcpPlan::commands`] run in their namespaces.
pub(crate) fn apply(
    namespaces: &[Netns],
    commands: &[(usize, Vec<String>)],
) -> Result<(), EmuError> {
    for (tun, args) in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        namespaces[*tun].ip(&args)?;
    }
    Ok(())
}

/// The driver's side of Multipath TCP: the member links, the changes the bundles' control
/// planes make to them, and who follows the members' state.
#[derive(Debug, Default)]
pub(crate) struct MemberDirs {
    pub(crate) links: Vec<MemberLinks>,
    /// Scratch: the member changes of one step of a bundle driver.
    pub(crate) changes: Vec<(u32, MemberChange)>,
    /// Where the changes of usability go (`EndpointKeeper`), if anyone follows them.
    pub(crate) notes: Option<mpsc::Sender<MemberNote>>,
    /// Every change of usability: (instant, index into `links`, member, usable).
    pub(crate) log: Vec<(SimTime, usize, usize, bool)>,
    /// Per member path of each Multipath TCP flow (`MptcpPlan::routes`' order, the driver's
    /// first routes two by two, forward first): the flow in the plan, the member, and what
    /// crossed it.
    pub(crate) paths: Vec<(usize, usize, PathCount)>,
    /// Per flow of the plan, its index into `links`.
    plan_links: Vec<usize>,
    /// Per entry of `paths`: the retransmission timeouts of the subflows the kernel opened
    /// over it (`tcpi_total_rto` of each, summed), where the kernel said
    /// ([`SubflowWatch::finish`]).
    pub(crate) kernel_timeouts: Vec<Option<u64>>,
}

impl MemberDirs {
    /// The driver's side of `plan`.
    pub(crate) fn new(plan: &MptcpPlan) -> MemberDirs {
        let paths = plan
            .flows
            .iter()
            .enumerate()
            .flat_map(|(i, m)| (0..m.client_addrs.len()).map(move |k| (i, k, PathCount::default())))
            .collect();
        MemberDirs {
            links: plan.links.clone(),
            paths,
            plan_links: plan.flows.iter().map(|m| m.links).collect(),
            ..MemberDirs::default()
        }
    }

    /// What crossed a member's path of route `route`, if it is one's data direction.
    pub(crate) fn data_path(&mut self, route: usize) -> Option<&mut PathCount> {
        if route % 2 != 0 {
            return None;
        }
        self.paths.get_mut(route / 2).map(|p| &mut p.2)
    }

    /// The subflows of the plan's Multipath TCP flow `i` (over bundle link `link_name`) in
    /// the simulator's terms, the run having ended at `end`.
    pub(crate) fn subflows(&self, i: usize, link_name: &str, end: SimTime) -> Vec<SubflowSummary> {
        let secs = SimTime::as_secs_f64;
        self.paths
            .iter()
            .enumerate()
            .filter(|(_, (f, _, _))| *f == i)
            .map(|(n, (_, k, p))| {
                let l = self.links_of(i);
                let (up, down) = intervals(&self.log, l, *k, secs(end));
                SubflowSummary {
                    route: format!("{link_name}/member{k}"),
                    member: *k as u32,
                    established: p.established,
                    bytes_sent: p.bytes_sent,
                    bytes: p.bytes,
                    retransmissions: p.retransmissions,
                    timeouts: self.kernel_timeouts.get(n).copied().flatten(),
                    up_intervals_s: up,
                    down_intervals_s: down,
                    limited_s: None,
                }
            })
            .collect()
    }

    fn links_of(&self, i: usize) -> usize {
        self.plan_links.get(i).copied().unwrap_or(0)
    }
    /// Applies the changes bundle link `link`'s driver made at `now` to its members' own
    /// links (as `World::mptcp_member_change` does), and tells who follows them.
    pub(crate) fn apply(&mut self, link: usize, now: SimTime, dirs: &mut [LinkDir]) {
        let Some(l) = self.links.iter().position(|ml| ml.link == link) else {
            return;
        };
        for &(member, change) in &self.changes {
            let k = member as usize;
            for d in self.links[l].dirs[k] {
                if let Some(b) = dirs[d].bundle_mut() {
                    match change {
                        MemberChange::CarrierUp => b.member_up(now, 0),
                        MemberChange::CarrierLost => b.member_lost(now, 0),
                        MemberChange::Usable(u) => b.set_usable(now, 0, u),
                    }
                }
            }
            if let MemberChange::Usable(usable) = change {
                self.log.push((now, l, k, usable));
                if let Some(tx) = &self.notes {
                    let _ = tx.send(MemberNote {
                        links: l,
                        member: k,
                        usable,
                    });
                }
            }
        }
    }
}

/// The thread that follows the members' state with the sender's endpoints, if the run has a
/// Multipath TCP flow; the driver tells it.
pub(crate) fn keep_endpoints(
    sc: &Scenario,
    plan: &crate::plan::Plan,
    made: &mut crate::setup::Made,
) -> Option<EndpointKeeper> {
    if plan.mptcp.flows.is_empty() {
        return None;
    }
    let names = made
        .namespaces
        .iter()
        .zip(&plan.ends)
        .map(|(ns, &n)| (ns.name.clone(), sc.nodes()[n].clone()))
        .collect();
    let t0 = made.driver.t0_ns();
    let keeper = EndpointKeeper::start(&plan.mptcp, names, plan.device.clone(), t0);
    made.driver.members.notes = Some(keeper.tx.clone());
    Some(keeper)
}

/// The kernel's own counters of each Multipath TCP flow's subflows. The subflows are TCP
/// sockets of the sender's namespace, one from each member address to the receiver: sampled
/// while they live and read a last time as the kernel destroys them
/// (`connections::Monitor`), so that a subflow closed by its member's drop keeps its count.
pub(crate) struct SubflowWatch {
    /// Per flow of the plan, the watch of its sender's namespace.
    monitors: Vec<Monitor>,
}

impl SubflowWatch {
    /// Starts watching `plan`'s flows' senders (`namespaces` by TUN); `None` without a
    /// Multipath TCP flow.
    pub(crate) fn start(
        plan: &MptcpPlan,
        namespaces: &[Netns],
    ) -> Result<Option<SubflowWatch>, EmuError> {
        if plan.flows.is_empty() {
            return Ok(None);
        }
        let monitors = plan
            .flows
            .iter()
            .map(|m| {
                Monitor::start(
                    &namespaces[m.client_tun],
                    IpAddr::V4(m.server),
                    crate::clock::monotonic_ns,
                )
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(SubflowWatch { monitors }))
    }

    /// Ends the watch: each member path's timeouts into `members.kernel_timeouts`.
    pub(crate) fn finish(self, plan: &MptcpPlan, members: &mut MemberDirs) {
        let seen: Vec<Vec<(IpAddr, Option<u16>)>> = self
            .monitors
            .into_iter()
            .map(|m| {
                m.finish()
                    .iter()
                    .map(|c| (c.local.ip(), c.last.total_rto))
                    .collect()
            })
            .collect();
        members.kernel_timeouts = members
            .paths
            .iter()
            .map(|&(i, k, _)| {
                let addr = IpAddr::V4(plan.flows[i].client_addrs[k]);
                path_timeouts(&seen[i], addr)
            })
            .collect();
    }
}

/// The retransmission timeouts of the subflows from `addr` among a sender's connections
/// (local address, `tcpi_total_rto`): their sum; `None` where the kernel does not count them
/// (before Linux 6.7) or no connection of the flow was seen at all.
fn path_timeouts(conns: &[(IpAddr, Option<u16>)], addr: IpAddr) -> Option<u64> {
    if conns.is_empty() || conns.iter().any(|(_, rto)| rto.is_none()) {
        return None;
    }
    Some(
        conns
            .iter()
            .filter(|(a, _)| *a == addr)
            .filter_map(|(_, rto)| rto.map(u64::from))
            .sum(),
    )
}

/// What crossed one member's path of a Multipath TCP flow, seen by the driver: its subflows'
/// data segments from the sender's device, and what reached the receiver's.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathCount {
    /// Subflows opened over the path that carried data: a SYN from the sender, then data (a
    /// join the kernel reset carries none).
    pub(crate) established: u32,
    pub(crate) bytes_sent: u64,
    pub(crate) retransmissions: u64,
    /// Payload bytes up to the highest sequence that reached the receiver's device, summed
    /// over the subflows.
    pub(crate) bytes: u64,
    /// Each subflow's sequence space, by the sender's port: a subflow closed at its member's
    /// drop lingers (FIN-WAIT-1, CLOSING) and may still send after the next one opened.
    subflows: Vec<SubflowSeq>,
}

/// One subflow's place in its sequence space.
#[derive(Clone, Copy, Debug)]
struct SubflowSeq {
    port: u16,
    isn: u32,
    carried: bool,
    high_sent: u32,
    high_delivered: u32,
}

/// A TCP segment's source port, sequence number, payload length and SYN flag (with ACK: a
/// SYN-ACK).
fn tcp_segment(pkt: &[u8]) -> Option<(u16, u32, u32, bool, bool)> {
    let ihl = usize::from(pkt.first()? & 0x0f) * 4;
    if pkt.len() < ihl + 20 || pkt.get(9) != Some(&6) {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]])).min(pkt.len());
    let tcp = &pkt[ihl..];
    let port = u16::from_be_bytes([tcp[0], tcp[1]]);
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    let header = usize::from(tcp[12] >> 4) * 4;
    let payload = total.saturating_sub(ihl + header) as u32;
    Some((port, seq, payload, tcp[13] & 0x02 != 0, tcp[13] & 0x10 != 0))
}

/// Whether sequence number `a` is after `b` (modulo 2^32).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl PathCount {
    fn subflow(&mut self, port: u16) -> Option<&mut SubflowSeq> {
        self.subflows.iter_mut().find(|s| s.port == port)
    }

    /// A segment from the sender's device onto this path.
    pub(crate) fn sent(&mut self, pkt: &[u8]) {
        let Some((port, seq, len, syn, ack)) = tcp_segment(pkt) else {
            return;
        };
        if syn && !ack {
            let fresh = SubflowSeq {
                port,
                isn: seq,
                carried: false,
                high_sent: seq.wrapping_add(1),
                high_delivered: seq.wrapping_add(1),
            };
            match self.subflow(port) {
                // The SYN sent again.
                Some(s) if s.isn == seq => {}
                // The port used again by a new subflow: a sequence space of its own.
                Some(s) => *s = fresh,
                None => self.subflows.push(fresh),
            }
            return;
        }
        if len == 0 {
            return;
        }
        let Some(s) = self.subflow(port) else {
            // Data of a subflow whose SYN was not seen: not one of this path's.
            return;
        };
        let opened = !s.carried;
        s.carried = true;
        let end = seq.wrapping_add(len);
        let again = !after(end, s.high_sent);
        if !again {
            s.high_sent = end;
        }
        self.established += u32::from(opened);
        self.bytes_sent += u64::from(len);
        self.retransmissions += u64::from(again);
    }

    /// A segment of this path reached the receiver's device.
    pub(crate) fn delivered(&mut self, pkt: &[u8]) {
        let Some((port, seq, len, _, _)) = tcp_segment(pkt) else {
            return;
        };
        let Some(s) = self.subflow(port) else {
            return;
        };
        let end = seq.wrapping_add(len);
        if after(end, s.high_delivered) {
            // The subflow's bytes up to the highest that arrived: a hole below it is filled
            // by a retransmission, which is not counted again.
            let new = u64::from(end.wrapping_sub(s.high_delivered));
            s.high_delivered = end;
            self.bytes += new;
        }
    }
}

/// Member `k` of member links `l`: when it was usable and when not, `[start_s, end_s]`, from
/// the driver's `log`, to `end_s` (usable from the start: the first change says otherwise).
fn intervals(
    log: &[(SimTime, usize, usize, bool)],
    l: usize,
    k: usize,
    end_s: f64,
) -> (Vec<[f64; 2]>, Vec<[f64; 2]>) {
    let (mut up, mut down) = (Vec::new(), Vec::new());
    let mut state: Option<(bool, f64)> = None;
    for &(at, ll, kk, usable) in log {
        if ll != l || kk != k {
            continue;
        }
        let t = at.as_secs_f64().min(end_s);
        match state {
            Some((was, _)) if was == usable => continue,
            Some((was, from)) if t > from => {
                (if was { &mut up } else { &mut down }).push([from, t]);
            }
            Some(_) => {}
            None if t > 0.0 => down.push([0.0, t]),
            None => {}
        }
        state = Some((usable, t));
    }
    if let Some((was, from)) = state {
        (if was { &mut up } else { &mut down }).push([from, end_s]);
    }
    (up, down)
}

/// Each Multipath TCP flow's `subflows`, from what the driver saw of its member paths.
pub(crate) fn fill_subflows(
    sc: &Scenario,
    members: &MemberDirs,
    end: SimTime,
    flows: &mut [crate::report::Flow],
) {
    let mut i = 0;
    for (k, f) in sc.flows().iter().enumerate() {
        let Transport::Mptcp(spec) = f.transport else {
            continue;
        };
        let link_name = &sc.links()[f.path[spec.bundle_hop].link].name;
        if let Some(flow) = flows.get_mut(k) {
            flow.summary.subflows = members.subflows(i, link_name, end);
        }
        i += 1;
    }
}

/// A Multipath TCP flow runs on the kernel's MPTCP: farlink's sender (chosen for a controller
/// the kernel lacks, or by `--sender farlink`) cannot carry it. One line naming the field and
/// what the kernel has.
pub(crate) fn refuse_farlink_sender(
    sc: &Scenario,
    opts: &crate::options::EmuOptions,
    choices: &[crate::wire_sender::SenderChoice],
) -> Result<(), EmuError> {
    for (i, (f, c)) in sc.flows().iter().zip(choices).enumerate() {
        if !matches!(f.transport, Transport::Mptcp(_)) || !c.is_farlink() {
            continue;
        }
        let origin = if opts.sender.as_deref() == Some("farlink") {
            "--sender farlink".to_owned()
        } else if opts.tcp.is_some() {
            "--tcp".to_owned()
        } else {
            format!("flows[{i}].tcp.cc")
        };
        return Err(EmuError::Usage(format!(
            "{origin}: flows[{i}].transport = \"mptcp\" runs on the kernel's Multipath TCP, and \
             farlink's sender would carry \"{}\"; give --tcp with a controller this kernel has \
             ({})",
            c.congestion(),
            crate::kernel::kernel_controllers().join(" ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 TCP segment from port 40000 with sequence number `seq`, `flags` and `payload`
    /// bytes.
    fn segment(seq: u32, flags: u8, payload: usize) -> Vec<u8> {
        from_port(40000, seq, flags, payload)
    }

    fn from_port(port: u16, seq: u32, flags: u8, payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; 40 + payload];
        p[20..22].copy_from_slice(&port.to_be_bytes());
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
        p[9] = 6;
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[32] = 5 << 4;
        p[33] = flags;
        p
    }

    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;

    #[test]
    fn a_path_counts_its_subflows_retransmissions_and_new_bytes_across_a_reopening() {
        let mut p = PathCount::default();
        // A subflow whose SYN is sent twice, then three segments, the second sent again.
        let isn = u32::MAX - 1000; // its sequence space wraps
        p.sent(&segment(isn, SYN, 0));
        p.sent(&segment(isn, SYN, 0));
        assert_eq!(p.established, 0, "not before it carried data");
        let s = isn.wrapping_add(1);
        for k in 0..3u32 {
            p.sent(&segment(s.wrapping_add(k * 1000), ACK, 1000));
        }
        p.sent(&segment(s.wrapping_add(1000), ACK, 1000));
        assert_eq!(
            (p.established, p.bytes_sent, p.retransmissions),
            (1, 4000, 1)
        );
        // The receiver gets the first and third, then the second again.
        p.delivered(&segment(s, ACK, 1000));
        p.delivered(&segment(s.wrapping_add(2000), ACK, 1000));
        p.delivered(&segment(s.wrapping_add(1000), ACK, 1000));
        assert_eq!(p.bytes, 3000);
        // The member came back: a new subflow from another port, a sequence space of its own.
        p.sent(&from_port(40001, 7, SYN, 0));
        p.sent(&from_port(40001, 8, ACK, 500));
        p.delivered(&from_port(40001, 8, ACK, 500));
        assert_eq!((p.established, p.bytes, p.retransmissions), (2, 3500, 1));
        // The closed one, lingering, sends its last segment again and it arrives: a
        // retransmission in its own space, nothing new delivered, the new one's count kept.
        p.sent(&segment(s.wrapping_add(2000), ACK, 1000));
        p.delivered(&segment(s.wrapping_add(2000), ACK, 1000));
        p.sent(&from_port(40001, 508, ACK, 500));
        p.delivered(&from_port(40001, 508, ACK, 500));
        assert_eq!((p.established, p.bytes, p.retransmissions), (2, 4000, 2));
        // A port used again: a new subflow.
        p.sent(&segment(90, SYN, 0));
        p.sent(&segment(91, ACK, 100));
        p.delivered(&segment(91, ACK, 100));
        assert_eq!((p.established, p.bytes), (3, 4100));
    }

    #[test]
    fn a_member_s_intervals_follow_its_usability_to_the_end_of_the_run() {
        let at = |s: u64| SimTime::from_nanos(s * 1_000_000_000);
        let log = [
            (at(0), 0, 1, true),
            (at(0), 0, 2, true),
            (at(40), 0, 1, false),
            (at(40), 0, 1, false),
            (at(85), 0, 1, true),
        ];
        let (up, down) = intervals(&log, 0, 1, 100.0);
        assert_eq!(up, vec![[0.0, 40.0], [85.0, 100.0]]);
        assert_eq!(down, vec![[40.0, 85.0]]);
        assert_eq!(intervals(&log, 0, 2, 100.0), (vec![[0.0, 100.0]], vec![]));
    }

    #[test]
    fn a_member_path_s_timeouts_are_its_subflows_own_summed() {
        let (a, b) = (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)),
        );
        // Member 1's subflow closed at its drop (3 timeouts), then its second one (1).
        let seen = [(a, Some(2)), (b, Some(3)), (b, Some(1))];
        assert_eq!(path_timeouts(&seen, a), Some(2));
        assert_eq!(path_timeouts(&seen, b), Some(4));
        // A member that never carried a subflow had none.
        let c = IpAddr::V4(Ipv4Addr::new(10, 2, 0, 1));
        assert_eq!(path_timeouts(&seen, c), Some(0));
        // A kernel without tcpi_total_rto, or nothing seen: not known.
        assert_eq!(path_timeouts(&[(a, None), (b, Some(1))], b), None);
        assert_eq!(path_timeouts(&[], a), None);
    }

    #[test]
    fn member_addresses_are_the_node_s_own_then_one_subnet_per_member() {
        let base = Ipv4Addr::new(10, 0, 148, 203);
        assert_eq!(member_addr(base, 0), base);
        assert_eq!(member_addr(base, 3), Ipv4Addr::new(10, 3, 148, 203));
    }
}
