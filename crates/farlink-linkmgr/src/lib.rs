//! farlink's link manager (seed 000 chapter 7, KUMICS): a daemon that runs a bundle of dial-up
//! modems with the core's `modem::Supervisor` (the simulator's own), the PPP stack it bonds
//! them with, and simulated modems to run it against. `docs/linkmgr.md` is the user's guide and
//! the event log's contract.
//!
//! * [`ppp`]: the sans-I/O PPP stack: RFC 1662 framing, one RFC 1661 automaton for LCP and
//!   IPCP, RFC 1990 multilink, the bundle endpoint, the AT dialogue and a simulated modem;
//! * `config`: the TOML configuration, errors placed `FILE:LINE: path: message`;
//! * `serial`: a modem's port (raw termios, the rate, RTS/CTS, DCD);
//! * `control`: the daemon's control socket (`hold`, `release`);
//! * `eventlog`: the SQLite event log and the snapshots a restart resumes from;
//! * `paths`: the log's and the control socket's paths checked before they are opened;
//! * `plane`: the seam to the data plane (the bundle on a TUN device);
//! * `daemon`: the loop (`wake`: how long a turn of it, or of the simulated modems, may sleep);
//! * `modemsim`: simulated Iridium modems on ptys;
//! * `modemarq`: a simulated call's direction over the core's link-layer ARQ;
//! * [`dataplane`]: the members' serial ports bonded into one multilink PPP bundle on a TUN;
//! * [`testbed`]: two namespaces joined by paced member links, to measure the data plane.
//!
//! Everything but `ppp` is Linux only (ptys, termios, TUN devices, namespaces: the I/O pieces
//! shared with the emulator come from `farlink-emu`).

mod error;
pub mod ppp;
#[cfg(target_os = "linux")]
mod wake;

#[cfg(target_os = "linux")]
pub mod config;
#[cfg(target_os = "linux")]
pub mod control;
#[cfg(target_os = "linux")]
pub mod daemon;
#[cfg(target_os = "linux")]
pub mod dataplane;
#[cfg(target_os = "linux")]
pub mod eventlog;
#[cfg(target_os = "linux")]
pub mod modemarq;
#[cfg(target_os = "linux")]
pub mod modemsim;
#[cfg(target_os = "linux")]
pub mod paths;
#[cfg(target_os = "linux")]
pub mod plane;
#[cfg(target_os = "linux")]
pub mod serial;
#[cfg(target_os = "linux")]
pub mod testbed;

#[cfg(target_os = "linux")]
use std::path::Path;

#[cfg(target_os = "linux")]
pub use config::{ConfigError, LinkMgrConfig, Role};
pub use error::LinkMgrError;
#[cfg(target_os = "linux")]
pub use modemsim::SimOptions;

#[cfg(target_os = "linux")]
/// `farlink linkmgr run CONFIG`: reads the configuration and runs the daemon until SIGTERM or
/// SIGINT.
pub fn run_daemon(config_path: &Path) -> Result<(), LinkMgrError> {
    let cfg = config::load(config_path).map_err(|e| LinkMgrError::Config(e.to_string()))?;
    let plane = plane::from_config(&cfg).map_err(LinkMgrError::Config)?;
    daemon::run(cfg, plane)
}

#[cfg(target_os = "linux")]
/// `farlink linkmgr hold|release TARGET MODEM`: `target` is a daemon's configuration (its
/// `control` socket) or the socket itself; returns the daemon's answer.
pub fn control(target: &Path, request: &str, modem: &str) -> Result<String, LinkMgrError> {
    let req =
        control::Request::parse(&format!("{request} {modem}")).map_err(LinkMgrError::Config)?;
    let socket = if is_socket(target) {
        target.to_path_buf()
    } else {
        let cfg = config::load(target).map_err(|e| LinkMgrError::Config(e.to_string()))?;
        cfg.control.ok_or_else(|| {
            LinkMgrError::Config(format!(
                "{}: no control socket: set `control = \"PATH\"` and restart the daemon",
                target.display()
            ))
        })?
    };
    control::send(&socket, &req).map_err(LinkMgrError::Config)
}

#[cfg(target_os = "linux")]
fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

#[cfg(target_os = "linux")]
/// `farlink linkmgr modem-sim`: the modems of the first bundle link of `scenario_json` (a
/// resolved scenario: its members' rate, delay, ARQ, error models and β, its dial time and dial
/// failures), `seed`
/// (`None`: the scenario's), until SIGTERM or SIGINT.
pub fn run_modem_sim(
    scenario_json: &str,
    modems: usize,
    dir: &Path,
    time_scale: f64,
    seed: Option<u64>,
    signal_reply_s: f64,
    ready: impl FnOnce(&[std::path::PathBuf]),
) -> Result<(), LinkMgrError> {
    let sc = farlink_core::scenario::parse_scenario_json(scenario_json)
        .map_err(|e| LinkMgrError::Config(e.to_string()))?;
    let Some((index, link, bundle)) = sc
        .links()
        .iter()
        .enumerate()
        .find_map(|(i, l)| l.bundle.as_ref().map(|b| (i, l, b)))
    else {
        return Err(LinkMgrError::Config(
            "the scenario has no bundle link to take the modems from".into(),
        ));
    };
    if !(signal_reply_s.is_finite() && (0.0..=60.0).contains(&signal_reply_s)) {
        return Err(LinkMgrError::Config(format!(
            "--signal-reply: expected 0 to 60 s, got {signal_reply_s}"
        )));
    }
    let opts = SimOptions {
        modems,
        dir: dir.to_path_buf(),
        time_scale,
        seed: seed.unwrap_or(sc.seed()),
        link_name: link.name.clone(),
        calls: modemsim::CallLinks::Bundle {
            link: Box::new(link.clone()),
            index,
        },
        call_drop_rate_per_s: bundle
            .members
            .iter()
            .map(|m| m.call_drop_rate_per_s)
            .collect(),
        dial_time: bundle.dial_time,
        dial_failure_prob: bundle.dial_failure_prob,
        signal_reply: farlink_core::time::SimDuration::from_secs_f64(signal_reply_s),
    };
    modemsim::run(opts, ready).map_err(|e| {
        if e.starts_with("--") {
            LinkMgrError::Config(e)
        } else {
            LinkMgrError::System(e)
        }
    })
}
