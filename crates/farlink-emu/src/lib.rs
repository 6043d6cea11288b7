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
//! * [`linkmgr`]: the link manager: a daemon running real or simulated modems, its log, and
//!   its data plane (serial members bonded into one multilink PPP bundle on a TUN device).

mod error;
pub use error::EmuError;

#[cfg(target_os = "linux")]
mod bulk;
#[cfg(target_os = "linux")]
pub mod ceiling;
#[cfg(target_os = "linux")]
mod clock;
#[cfg(target_os = "linux")]
mod command;
#[cfg(target_os = "linux")]
mod connections;
#[cfg(target_os = "linux")]
mod driver;
#[cfg(target_os = "linux")]
mod histogram;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(target_os = "linux")]
pub mod linkmgr;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod nstat;
#[cfg(target_os = "linux")]
mod offload;
#[cfg(target_os = "linux")]
mod parity;
#[cfg(target_os = "linux")]
mod report;
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
mod signals;
#[cfg(target_os = "linux")]
mod slab;
#[cfg(target_os = "linux")]
mod sockdiag;
#[cfg(target_os = "linux")]
mod tcpinfo;
#[cfg(target_os = "linux")]
mod tun;
#[cfg(target_os = "linux")]
mod wire_sender;

#[cfg(target_os = "linux")]
pub use command::CommandReport;
#[cfg(target_os = "linux")]
pub use run::emulate;

/// How to run an emulation, beside the scenario itself.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmuOptions {
    /// The kernel congestion controller of every flow (`TCP_CONGESTION`); `None`: the
    /// scenario's controller, if the kernel has it.
    pub tcp: Option<String>,
    /// Whose TCP sends: "kernel" or "farlink" (farlink's own sender on the wire); `None`: the
    /// kernel's where the kernel has the controller, farlink's otherwise.
    pub sender: Option<String>,
    /// Wake this long before a deadline and spin to it (0: the timerfd alone). 10 µs: at
    /// 100 Mbit/s it halves the median error of the timerfd alone for a few % more CPU, where
    /// 50 µs keeps a SCHED_FIFO thread busy long enough for the kernel to preempt it for
    /// tens of ms (`make bench-emu`).
    pub spin_us: u64,
    /// Record, per link direction, the loss-model ordinals of the packets lost, for tests
    /// comparing engines.
    pub record_deliveries: bool,
    /// Run the driver's thread SCHED_FIFO while it runs, where permitted.
    pub realtime: bool,
    /// Write a capture of each end node's TUN device (both ways) as `<dir>/<node>.pcap`.
    pub pcap_dir: Option<String>,
    /// A program to run in the first flow's sender namespace in place of the built-in bulk
    /// transfer (`-- COMMAND`, `--shell`); the run ends when it exits.
    pub command: Option<Vec<String>>,
    /// A shell command run (`sh -c`) in the first flow's receiver namespace, listening on
    /// `FARLINK_PORT`; without it, a sink accepts, discards and counts.
    pub server: Option<String>,
    /// Where the command's and the server's standard output go: farlink's own (`inherit`),
    /// farlink's standard error (`stderr`: `--json` keeps standard output for the document), or
    /// a file (`{"file": PATH}`, created or appended to).
    pub command_stdout: CommandStdout,
    /// Whether the scenario's duration also ends a command (given explicitly); otherwise only
    /// the command's exit, or Ctrl-C, does.
    pub command_bounded: bool,
    /// Start the sinks (listening sockets); without them every connection is refused (the
    /// receiver's kernel answers the SYN with a RST), which tests how a sender ends.
    pub listen: bool,
    /// Open the TUN devices with offloads (`IFF_VNET_HDR`, TSO): the kernel's super-segments
    /// are read whole and cut into packets for the links, and what the links deliver together
    /// is written coalesced (`emulator.io_path` says which path ran).
    pub offload: bool,
}

/// Where a program's standard output goes ([`EmuOptions::command_stdout`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CommandStdout {
    #[default]
    Inherit,
    Stderr,
    File(String),
}

impl Default for EmuOptions {
    fn default() -> Self {
        EmuOptions {
            tcp: None,
            sender: None,
            spin_us: 10,
            record_deliveries: false,
            realtime: true,
            pcap_dir: None,
            command: None,
            server: None,
            command_stdout: CommandStdout::Inherit,
            command_bounded: false,
            listen: true,
            offload: false,
        }
    }
}

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
