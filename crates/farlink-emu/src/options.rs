//! How to run an emulation, beside the scenario itself: the options the bindings and the
//! command line pass.

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
