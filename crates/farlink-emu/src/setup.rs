//! What a run makes from its [`Plan`]: a namespace and TUN device per end node (sysctls,
//! address, MTU), the kernel routes, the capture files, and the driver over the scenario's
//! links. What is made is removed when the [`Made`] is dropped (the driver first, then the
//! namespaces), on success or on any error.

use std::fs::File;

use farlink_core::path;
use farlink_core::scenario::Scenario;

use crate::driver::{Driver, IoPath};
use crate::error::EmuError;
use crate::mptcp::MemberDirs;
use crate::netns::{self, Netns};
use crate::options::EmuOptions;
use crate::plan::Plan;
use crate::settings::Kernel;
use crate::tun::Tun;
use crate::wire_sender;

/// A run's devices, namespaces and driver, and the kernel settings written.
pub(crate) struct Made {
    // Field order is drop order: the driver (and its TUNs) go before their namespaces.
    pub(crate) driver: Driver,
    pub(crate) namespaces: Vec<Netns>,
    pub(crate) kernel: Kernel,
}

/// Makes what `plan` says for run `run_id`.
pub(crate) fn make(
    sc: &Scenario,
    opts: &EmuOptions,
    plan: &Plan,
    run_id: &str,
) -> Result<Made, EmuError> {
    let mut namespaces = Vec::with_capacity(plan.ends.len());
    let mut tuns = Vec::with_capacity(plan.ends.len());
    for &n in &plan.ends {
        let (ns, tun) = namespace(sc, opts, plan, run_id, n)?;
        namespaces.push(ns);
        tuns.push(tun);
    }
    let mut kernel = Kernel {
        congestion: plan.congestion.clone(),
        ..Kernel::default()
    };
    if !namespaces.is_empty() {
        // The sysctls as every namespace got them.
        let written = plan
            .sysctls
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()));
        kernel.sysctls = written.collect();
    }
    for r in &plan.kernel_routes {
        let args: Vec<&str> = r.args.iter().map(String::as_str).collect();
        namespaces[r.tun].ip(&args)?;
        kernel.routes.push(r.said.clone());
    }
    crate::mptcp::apply(&namespaces, &plan.mptcp_commands)?;
    for (tun, args) in &plan.mptcp_commands {
        let node = &sc.nodes()[plan.ends[*tun]];
        kernel.mptcp.push(format!("{node}: ip {}", args.join(" ")));
    }
    let driver = driver(sc, opts, plan, tuns)?;
    Ok(Made {
        driver,
        namespaces,
        kernel,
    })
}

/// End node `n`'s namespace and TUN device, with the sysctls, its address and the MTU.
fn namespace(
    sc: &Scenario,
    opts: &EmuOptions,
    plan: &Plan,
    run_id: &str,
    n: usize,
) -> Result<(Netns, Tun), EmuError> {
    let ns = Netns::create(run_id, &sc.nodes()[n])?;
    let (dev, offload) = (plan.device.clone(), opts.offload);
    let tun = ns.run(move || Tun::create_with(&dev, offload))??;
    let sysctls = plan.sysctls.clone();
    ns.run(move || {
        sysctls
            .iter()
            .try_for_each(|(k, v)| netns::write_sysctl(k, v))
    })??;
    let me = plan.addr(n).to_string();
    let device = plan.device.as_str();
    ns.ip(&["addr", "add", &format!("{me}/32"), "dev", device])?;
    ns.ip(&["link", "set", device, "mtu", &plan.mtu.to_string(), "up"])?;
    Ok((ns, tun))
}

/// Per TUN, the capture file `--pcap` asks for.
fn captures(sc: &Scenario, opts: &EmuOptions, plan: &Plan) -> Result<Vec<Option<File>>, EmuError> {
    let nodes = sc.nodes();
    let Some(dir) = &opts.pcap_dir else {
        return Ok(plan.ends.iter().chain(&plan.users).map(|_| None).collect());
    };
    std::fs::create_dir_all(dir).map_err(|e| EmuError::sys(dir, e))?;
    plan.ends
        .iter()
        .chain(&plan.users)
        .map(|&n| {
            let path = std::path::Path::new(dir).join(format!("{}.pcap", nodes[n]));
            let file = File::create(&path).map_err(|e| EmuError::sys(path.display(), e))?;
            Ok(Some(file))
        })
        .collect()
}

/// The driver over the scenario's links, the TUNs and farlink's senders.
fn driver(
    sc: &Scenario,
    opts: &EmuOptions,
    plan: &Plan,
    tuns: Vec<Tun>,
) -> Result<Driver, EmuError> {
    let mut links = path::build(sc)?;
    // Multipath TCP's member links, after the scenario's (`mptcp.rs`).
    links.dirs.extend(plan.mptcp.build_dirs(sc)?);
    let members = MemberDirs::new(&plan.mptcp);
    let captures = captures(sc, opts, plan)?;
    let addr = |n: usize| plan.addr(n);
    let wire_flows = wire_sender::wire_flows(sc, &plan.choices, &plan.users, &plan.ports, addr);
    Driver::new(
        links,
        plan.routes.clone(),
        tuns,
        wire_flows,
        captures,
        (plan.mtu as usize).max(2048),
        plan.ports.clone(),
        opts.spin_us * 1000,
        opts.record_deliveries,
        if opts.offload {
            IoPath::Offload
        } else {
            IoPath::PerPacket
        },
        members,
    )
}
