//! farlink's emulator: the I/O shell around `farlink-core`'s path runtime ([`farlink_core::path`]).
//!
//! A scenario's end nodes become Linux network namespaces (`farlink-<run>-<node>`), each with a
//! TUN device whose file descriptor this crate holds; every IP packet the kernel sends into a
//! TUN is offered, as a [`farlink_core::link::Packet`], to the link directions of its route, in
//! real time, and written to the other end's TUN at the instant the link model delivers it.
//! Real kernel TCP (and, later, real programs) cross the very link components the simulator
//! uses. The physics stays in the core; this crate owns the clock, the devices and the
//! namespaces, and nothing outside the namespaces it made.
//!
//! * [`emulate`]: one run (namespaces, devices, the driver, the workload, the result);
//! * `netns`: namespaces, their clean-up (on exit, on signals, stale ones at the next start);
//! * `tun`: a TUN device opened inside a namespace;
//! * `driver`: the real-time loop (epoll, timerfd, a short spin before each deadline);
//! * `offload`: the driver's offload path (super-segments read and cut into packets, delivered
//!   packets coalesced; `--offload`);
//! * `kernel`: the congestion controllers the kernel has, and which TCP settings it takes;
//! * `bulk`: the built-in workload, one kernel TCP bulk transfer per flow, TCP_INFO sampled;
//! * `wire_sender`: farlink's own TCP sender as a flow's sending end (no kernel there);
//! * `sender_timing`: that sender's ACK-to-send latency and the time its own calls take;
//! * [`send`]: the same sender to an arbitrary listener, through a TUN device of its own;
//! * `command`: programs as the workload, a command against a server or a counting sink;
//! * `report`: the result in `simulate`'s shape plus the emulator's own figures;
//! * [`ceiling`]: the references of the throughput benchmark (a bare TUN forwarder, veth);
//!
//! The link manager (`farlink-linkmgr`) uses the shell's pieces: [`clock`], [`netns`], [`tun`],
//! [`signals`] and [`check_host`].

mod error;
pub use error::EmuError;
mod options;
pub use options::{CommandStdout, EmuOptions};

#[cfg(target_os = "linux")]
mod bulk;
#[cfg(target_os = "linux")]
pub mod ceiling;
#[cfg(target_os = "linux")]
pub mod clock;
#[cfg(target_os = "linux")]
mod command;
#[cfg(target_os = "linux")]
mod connections;
#[cfg(target_os = "linux")]
mod driver;
#[cfg(target_os = "linux")]
mod driver_stats;
#[cfg(target_os = "linux")]
// The receiving application's bytes over time (the `goodput` trace).
mod goodput;
#[cfg(target_os = "linux")]
mod histogram;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
// Kernel Multipath TCP over a bundle's members: addresses, routes, endpoints.
mod mptcp;
#[cfg(target_os = "linux")]
pub mod netns;
#[cfg(target_os = "linux")]
mod nstat;
#[cfg(target_os = "linux")]
mod offload;
#[cfg(target_os = "linux")]
mod parity;
#[cfg(target_os = "linux")]
mod plan;
#[cfg(target_os = "linux")]
mod report;
#[cfg(target_os = "linux")]
mod route;
#[cfg(target_os = "linux")]
mod run;
#[cfg(target_os = "linux")]
mod sched;
#[cfg(target_os = "linux")]
pub mod send;
#[cfg(target_os = "linux")]
mod sender_timing;
#[cfg(target_os = "linux")]
mod settings;
#[cfg(target_os = "linux")]
mod setup;
#[cfg(target_os = "linux")]
pub mod signals;
#[cfg(target_os = "linux")]
mod slab;
#[cfg(target_os = "linux")]
mod sockdiag;
#[cfg(target_os = "linux")]
mod sockets;
#[cfg(target_os = "linux")]
mod tcpinfo;
#[cfg(target_os = "linux")]
mod traffic;
// A request/response flow's two ends (issue 30).
#[cfg(target_os = "linux")]
mod exchange;
#[cfg(target_os = "linux")]
pub mod tun;
#[cfg(target_os = "linux")]
mod wire_sender;
#[cfg(target_os = "linux")]
mod workload;

#[cfg(target_os = "linux")]
pub use command::CommandReport;
#[cfg(target_os = "linux")]
pub use run::{check_host, emulate};
#[cfg(target_os = "linux")]
pub use signals::last_interrupt_signal;

/// Runs the scenario given as JSON (the resolved document `simulate` takes) with `options`
/// given as JSON, and returns the result as JSON. Not Linux: [`EmuError::Unsupported`].
pub fn emulate_json(scenario_json: &str, options_json: &str) -> Result<String, EmuError> {
    let sc = farlink_core::scenario::parse_scenario_json(scenario_json)?;
    let options: EmuOptions = if options_json.trim().is_empty() {
        EmuOptions::default()
    } else {
        serde_json::from_str(options_json)
            .map_err(|e| EmuError::Usage(format!("emulator options: {e}")))?
    };
    #[cfg(target_os = "linux")]
    {
        let result = emulate(&sc, &options)?;
        serde_json::to_string(&result).map_err(|e| EmuError::Internal(e.to_string()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (sc, options);
        Err(EmuError::Unsupported(
            "the emulator needs Linux (network namespaces and TUN devices)".into(),
        ))
    }
}
