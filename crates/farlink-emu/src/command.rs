//! Workloads that are programs: a command in the sender's namespace (`-- COMMAND`, `--shell`)
//! against a server in the receiver's (`--server CMD`), or against a sink that accepts any
//! number of connections, discards what they carry and counts it.
//!
//! A program is started with its network namespace entered between fork and exec, so it, and
//! everything it starts, sees only the namespace's TUN device and routes. It inherits farlink's
//! standard input and output (an interactive shell reads the terminal), and is told where the
//! other end is by `FARLINK_PEER` (the receiver's address) and `FARLINK_PORT` (the sink's
//! port; with `--server`, the port the server came to listen on, IPv4 or IPv6, which the server
//! itself is offered as a suggestion). The command's TCP connections are measured
//! (`connections.rs`). Each gets SIGKILL if farlink dies, and
//! whatever is left in the namespaces when the run ends is stopped by [`crate::netns::Netns`].

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{self, sockopt, SockaddrIn};
use serde::Serialize;

use crate::bulk::SinkOutcome;
use crate::connections::{Connection, Monitor};
use crate::error::EmuError;
use crate::netns::Netns;
use crate::options::CommandStdout;
use crate::sockdiag::{self, DiagSocket, SockDiag};
use netlink_packet_sock_diag::inet::StateFlags;

/// How long a server may take to listen on its port.
const SERVER_READY: Duration = Duration::from_secs(20);
/// How long the sink waits in `poll` before looking at the stop flag.
const POLL_MS: u16 = 100;

/// What became of a command the run started.
#[derive(Clone, Debug, Serialize)]
pub struct CommandReport {
    pub argv: Vec<String>,
    /// `--server`'s command, run with `sh -c` in the receiver's namespace.
    pub server: Option<String>,
    /// Its exit status, or 128 + the signal that ended it (a shell's convention).
    pub exit_status: i32,
    /// `exit` (it ended by itself), `duration` (the run's duration ended it) or `interrupt`
    /// (Ctrl-C or SIGTERM ended the run).
    pub ended_by: &'static str,
    /// The namespace it ran in, and the server's (or sink's) address and port it was given.
    pub namespace: String,
    pub peer: String,
    pub port: u16,
    /// The controller the programs' sockets get, and how (they set none themselves).
    pub congestion: String,
    /// The command's TCP connections to the peer, as sock_diag saw them.
    pub connections: Vec<crate::connections::ConnectionReport>,
}

/// Makes `wanted` the default controller of each namespace's sockets where the kernel lets it,
/// and says what they got. A namespace other than the host's may only choose among the host's
/// `tcp_allowed_congestion_control`; otherwise they keep the default they inherited.
fn default_congestion(namespaces: &[&Netns], wanted: &str) -> Result<String, EmuError> {
    const KEY: &str = "net.ipv4.tcp_congestion_control";
    let mut said = format!("{wanted} ({KEY})");
    for ns in namespaces {
        let w = wanted.to_owned();
        let refused = ns.run(move || crate::netns::write_sysctl(KEY, &w))?.err();
        if let Some(e) = refused {
            let path = "/proc/sys/net/ipv4/tcp_congestion_control";
            let has = ns
                .run(move || std::fs::read_to_string(path))?
                .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
            let allowed =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
                    .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
            said = format!(
                "{has}, the namespace's default: {KEY} = {wanted} refused ({e}; a namespace may \
                 choose only among the host's allowed controllers: {allowed})"
            );
        }
    }
    Ok(said)
}

/// The program that opens Multipath TCP sockets in place of TCP ones: `mptcpize run` (from
/// mptcpd) preloads a library that gives `socket(2)`'s TCP requests `IPPROTO_MPTCP`, in the
/// program and in everything it starts.
const MPTCPIZE: &str = "mptcpize";

/// `argv` as it runs on the flow's transport: unchanged over TCP, under `mptcpize run` over
/// Multipath TCP, given where mptcpize is (a host without it cannot: the program's sockets
/// would be TCP, and the run would measure one member alone).
fn over_transport(
    argv: Vec<String>,
    mptcp: bool,
    mptcpize: Option<std::path::PathBuf>,
) -> Result<Vec<String>, EmuError> {
    if !mptcp {
        return Ok(argv);
    }
    let Some(mptcpize) = mptcpize else {
        return Err(EmuError::Unsupported(format!(
            "flows[0].transport = \"mptcp\": a program (-- COMMAND, --shell, --server) runs \
             over the kernel's Multipath TCP under `{MPTCPIZE} run`, which this host lacks \
             (Debian's package mptcpize); the built-in transfer needs none"
        )));
    };
    Ok([mptcpize.to_string_lossy().into_owned(), "run".to_owned()]
        .into_iter()
        .chain(argv)
        .collect())
}

/// Where `program` is on `PATH`, if it is there and executable.
fn on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Starts `argv` inside `ns` with `env` added to farlink's environment and its standard
/// output sent where `stdout` says.
pub(crate) fn spawn_in(
    ns: &Netns,
    argv: &[String],
    env: &BTreeMap<String, String>,
    stdout: &CommandStdout,
) -> Result<Child, EmuError> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| EmuError::Usage("the command is empty".into()))?;
    let ns_fd = ns.fd().as_raw_fd();
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env);
    if let Some(out) = stdout_of(stdout)? {
        cmd.stdout(out);
    }
    // SAFETY: between fork and exec the closure makes only two system calls, setns(2) and
    // prctl(2), both async-signal-safe, on a descriptor the parent keeps open until the child
    // has been waited for; it allocates nothing and takes no lock.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns_fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A program outlives no farlink that dies without cleaning up.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| EmuError::Usage(format!("cannot run `{program}`: {e}")))
}

/// The standard output a program gets, if not farlink's own.
fn stdout_of(stdout: &CommandStdout) -> Result<Option<std::process::Stdio>, EmuError> {
    Ok(match stdout {
        CommandStdout::Inherit => None,
        CommandStdout::Stderr => {
            let fd = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| EmuError::sys("stderr", e))?;
            Some(fd.into())
        }
        CommandStdout::File(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| EmuError::sys(path, e))?;
            Some(file.into())
        }
    })
}

/// Waits until a socket that was not listening `before` listens in `server`'s namespace where
/// `peer` reaches it (IPv4 or IPv6, on any address or on `peer`'s, any port: `iperf3 -s`,
/// `python3 -m http.server 8000`), and returns its port; an error if the server exits first or
/// takes longer than [`SERVER_READY`], naming what was listening.
pub(crate) fn wait_listening(
    server: &mut Child,
    diag: &SockDiag,
    before: &[DiagSocket],
    peer: IpAddr,
    stop: impl Fn() -> bool,
) -> Result<Option<u16>, EmuError> {
    let started = Instant::now();
    let reachable = |l: &DiagSocket| l.local.ip().is_unspecified() || l.local.ip() == peer;
    loop {
        let listening = diag.dump(StateFlags::LISTEN, false)?;
        if let Some(new) = listening
            .iter()
            .find(|l| reachable(l) && !before.iter().any(|b| b.local == l.local))
        {
            return Ok(Some(new.local.port()));
        }
        if let Some(status) = server.try_wait().map_err(|e| EmuError::sys("wait", e))? {
            return Err(EmuError::Usage(format!(
                "the --server command ended (status {}) before it listened; listening in its \
                 namespace: {}",
                exit_code(status),
                sockdiag::describe(&listening)
            )));
        }
        if stop() {
            return Ok(None);
        }
        if started.elapsed() > SERVER_READY {
            return Err(EmuError::Usage(format!(
                "the --server command did not listen on a new TCP port of {peer} (or of any \
                 address) within {} s; listening in its namespace: {}",
                SERVER_READY.as_secs(),
                sockdiag::describe(&listening)
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The exit status of a finished program as a shell gives it.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Ends `child` (SIGTERM, then SIGKILL after `grace`) if it still runs, and reaps it.
pub(crate) fn terminate(child: &mut Child, grace: Duration) -> ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let started = Instant::now();
    while started.elapsed() < grace {
        if let Ok(Some(status)) = child.try_wait() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    child
        .wait()
        .unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL))
}

/// The sink of a command's connections: accepts any number on `addr`, reads each to its end
/// and counts the bytes, until `stop`. `open` is the number of connections not yet at their
/// end, which the run waits on after the command exits (its last bytes may still be on the
/// path, sent by the kernel after the program closed its socket).
#[allow(clippy::too_many_arguments)]
pub(crate) fn counting_sink(
    addr: SocketAddrV4,
    receive_buffer_bytes: Option<u64>,
    mptcp: bool,
    ready: Arc<AtomicBool>,
    open: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    now_ns: fn() -> u64,
) -> SinkOutcome {
    let mut out = SinkOutcome::default();
    let result = (|| -> std::io::Result<()> {
        // A Multipath TCP listener also accepts plain TCP (the client falls back).
        let fd = crate::bulk::stream_socket(mptcp)?;
        socket::setsockopt(&fd, sockopt::ReuseAddr, &true)?;
        if let Some(b) = receive_buffer_bytes {
            socket::setsockopt(&fd, sockopt::RcvBuf, &crate::sockets::buffer_option(b))?;
        }
        socket::bind(fd.as_raw_fd(), &SockaddrIn::from(addr))?;
        socket::listen(&fd, socket::Backlog::new(64).map_err(std::io::Error::from)?)?;
        let listener = TcpListener::from(fd);
        listener.set_nonblocking(true)?;
        ready.store(true, Ordering::Release);
        let mut conns: Vec<TcpStream> = Vec::new();
        let mut buf = vec![0u8; 256 * 1024];
        while !stop.load(Ordering::Relaxed) {
            let ready_fds: Vec<bool> = {
                let mut fds: Vec<PollFd<'_>> = std::iter::once(&listener as &dyn AsFd)
                    .chain(conns.iter().map(|c| c as &dyn AsFd))
                    .map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN))
                    .collect();
                match poll(&mut fds, PollTimeout::from(POLL_MS)) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
                fds.iter()
                    .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
                    .collect()
            };
            let mut ended = Vec::new();
            for (i, c) in conns.iter_mut().enumerate() {
                if !ready_fds[i + 1] {
                    continue;
                }
                loop {
                    match c.read(&mut buf) {
                        Ok(0) => {
                            ended.push(i);
                            break;
                        }
                        Ok(n) => {
                            out.received_bytes += n as u64;
                            let at_ns = now_ns();
                            out.last_byte_ns = Some(at_ns);
                            out.reads.read(at_ns, out.received_bytes);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        // A reset ends the connection, not the sink.
                        Err(_) => {
                            ended.push(i);
                            break;
                        }
                    }
                }
            }
            for i in ended.into_iter().rev() {
                conns.swap_remove(i);
                out.eof = true;
            }
            if ready_fds[0] {
                loop {
                    match listener.accept() {
                        Ok((c, _)) => {
                            c.set_nonblocking(true)?;
                            conns.push(c);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        // A connection that failed before accept() is the peer's matter.
                        Err(_) => break,
                    }
                }
            }
            open.store(conns.len(), Ordering::Release);
        }
        Ok(())
    })();
    if let Err(e) = result {
        out.error = Some(format!("sink: {e}"));
    }
    out
}

/// How long the run waits, after the command exits, for the sink's connections to end (the
/// kernel sends what a program wrote before it closed its socket on its own time).
const DRAIN: Duration = Duration::from_secs(10);
/// The sink has had no open connection for this long: nothing of the command's is on its way.
const QUIET: Duration = Duration::from_millis(300);

/// Where the programs of a run go.
pub(crate) struct Plan<'a> {
    pub(crate) argv: &'a [String],
    pub(crate) server: Option<&'a str>,
    pub(crate) sender_ns: &'a Netns,
    pub(crate) receiver_ns: &'a Netns,
    /// The first flow's receiver address and port: `FARLINK_PEER`, `FARLINK_PORT`.
    pub(crate) peer: SocketAddrV4,
    /// The first flow's controller, made the namespaces' default where the kernel lets it.
    pub(crate) congestion: &'a str,
    /// Without a server, a sink per flow: its namespace, address and receive buffer.
    pub(crate) sinks: Vec<(&'a Netns, SocketAddrV4, Option<u64>)>,
    /// Where the command's and the server's standard output go.
    pub(crate) stdout: &'a CommandStdout,
    /// The first flow is the kernel's Multipath TCP: the command and the server run under
    /// `mptcpize run`, and the sinks listen on `IPPROTO_MPTCP` sockets.
    pub(crate) mptcp: bool,
}

/// The programs of a run while it lives.
pub(crate) struct Programs {
    command: std::cell::RefCell<Child>,
    server: Option<Child>,
    sinks: Vec<std::thread::JoinHandle<Option<SinkOutcome>>>,
    open: Vec<Arc<AtomicUsize>>,
    /// The command's connections to the peer, sampled (`connections.rs`).
    monitor: Option<Monitor>,
    exited: std::cell::Cell<Option<Instant>>,
    quiet_since: std::cell::Cell<Option<Instant>>,
    argv: Vec<String>,
    server_cmd: Option<String>,
    namespace: String,
    peer: SocketAddrV4,
    congestion: String,
}

impl Programs {
    /// Starts the sinks (or the server, and waits for it to listen), then the command.
    pub(crate) fn start(
        plan: Plan<'_>,
        stop: &Arc<AtomicBool>,
        interrupted: impl Fn() -> bool,
        now_ns: fn() -> u64,
    ) -> Result<Programs, EmuError> {
        let mut env: BTreeMap<String, String> = [
            ("FARLINK_PEER".to_owned(), plan.peer.ip().to_string()),
            ("FARLINK_PORT".to_owned(), plan.peer.port().to_string()),
        ]
        .into();
        let mut port = plan.peer.port();
        let congestion = default_congestion(&[plan.sender_ns, plan.receiver_ns], plan.congestion)?;
        let mut sinks = Vec::new();
        let mut open = Vec::new();
        let mut server = None;
        let mut monitor = None;
        let started = (|| -> Result<Child, EmuError> {
            match plan.server {
                Some(cmd) => {
                    // The server may listen where it likes; the command is told where it did.
                    let diag = SockDiag::open(plan.receiver_ns)?;
                    let before = diag.dump(StateFlags::LISTEN, false)?;
                    let argv = over_transport(
                        vec!["sh".to_owned(), "-c".to_owned(), cmd.to_owned()],
                        plan.mptcp,
                        on_path(MPTCPIZE),
                    )?;
                    let child =
                        server.insert(spawn_in(plan.receiver_ns, &argv, &env, plan.stdout)?);
                    let at = IpAddr::V4(*plan.peer.ip());
                    if let Some(p) = wait_listening(child, &diag, &before, at, &interrupted)? {
                        port = p;
                        env.insert("FARLINK_PORT".to_owned(), p.to_string());
                    }
                }
                None => {
                    for &(ns, at, rcvbuf) in &plan.sinks {
                        let ready = Arc::new(AtomicBool::new(false));
                        let count = Arc::new(AtomicUsize::new(0));
                        let (r, c, s) = (Arc::clone(&ready), Arc::clone(&count), Arc::clone(stop));
                        let mptcp = plan.mptcp;
                        let h = ns.spawn("farlink-sink", move || {
                            counting_sink(at, rcvbuf, mptcp, r, c, s, now_ns)
                        })?;
                        while !ready.load(Ordering::Acquire) && !h.is_finished() {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        sinks.push(h);
                        open.push(count);
                    }
                }
            }
            let m = Monitor::start(plan.sender_ns, IpAddr::V4(*plan.peer.ip()), now_ns)?;
            open.push(Arc::clone(&m.open));
            monitor = Some(m);
            let argv = over_transport(plan.argv.to_vec(), plan.mptcp, on_path(MPTCPIZE))?;
            let child = spawn_in(plan.sender_ns, &argv, &env, plan.stdout)?;
            Ok(child)
        })();
        let command = match started {
            Ok(c) => c,
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                if let Some(mut s) = server {
                    terminate(&mut s, Duration::from_secs(1));
                }
                for h in sinks {
                    let _ = h.join();
                }
                if let Some(m) = monitor {
                    m.finish();
                }
                return Err(e);
            }
        };
        Ok(Programs {
            command: std::cell::RefCell::new(command),
            server,
            sinks,
            open,
            monitor,
            exited: std::cell::Cell::new(None),
            quiet_since: std::cell::Cell::new(None),
            argv: plan.argv.to_vec(),
            server_cmd: plan.server.map(str::to_owned),
            namespace: plan.sender_ns.name.clone(),
            peer: SocketAddrV4::new(*plan.peer.ip(), port),
            congestion,
        })
    }

    /// The port the command was told (`FARLINK_PORT`): the server's, or the first sink's.
    pub(crate) fn port(&self) -> u16 {
        self.peer.port()
    }

    /// Whether the run is over: the command has exited and, with sinks, their connections
    /// have ended (or [`DRAIN`] has passed).
    pub(crate) fn done(&self) -> bool {
        let exited = match self.exited.get() {
            Some(t) => t,
            None => match self.command.borrow_mut().try_wait() {
                Ok(Some(_)) | Err(_) => {
                    let t = Instant::now();
                    self.exited.set(Some(t));
                    t
                }
                Ok(None) => return false,
            },
        };
        if self.open.iter().any(|c| c.load(Ordering::Acquire) > 0) {
            self.quiet_since.set(None);
            return exited.elapsed() > DRAIN;
        }
        let quiet = *self.quiet_since.get().get_or_insert_with(Instant::now);
        self.quiet_since.set(Some(quiet));
        quiet.elapsed() >= QUIET || exited.elapsed() > DRAIN
    }

    /// Ends what still runs and says how the command ended; the sinks' counts, per flow, and
    /// the command's connections.
    pub(crate) fn finish(
        self,
        stop: &AtomicBool,
        interrupted: bool,
    ) -> (Vec<SinkOutcome>, CommandReport, Vec<Connection>) {
        let mut command = self.command.into_inner();
        let by_itself = matches!(command.try_wait(), Ok(Some(_)));
        let status = terminate(&mut command, Duration::from_secs(2));
        if let Some(mut s) = self.server {
            terminate(&mut s, Duration::from_secs(2));
        }
        stop.store(true, Ordering::Relaxed);
        let connections = self.monitor.map(Monitor::finish).unwrap_or_default();
        let sinks = self
            .sinks
            .into_iter()
            .map(|h| h.join().ok().flatten().unwrap_or_default())
            .collect();
        let report = CommandReport {
            argv: self.argv,
            server: self.server_cmd,
            exit_status: exit_code(status),
            ended_by: match (by_itself, interrupted) {
                (true, _) => "exit",
                (false, true) => "interrupt",
                (false, false) => "duration",
            },
            namespace: self.namespace,
            peer: self.peer.ip().to_string(),
            port: self.peer.port(),
            congestion: self.congestion,
            connections: Vec::new(),
        };
        (sinks, report, connections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_over_multipath_tcp_runs_under_mptcpize() {
        let argv = vec!["iperf3".to_owned(), "-c".to_owned(), "10.0.0.2".to_owned()];
        assert_eq!(over_transport(argv.clone(), false, None).unwrap(), argv);
        let at = std::path::PathBuf::from("/usr/bin/mptcpize");
        let wrapped = over_transport(argv.clone(), true, Some(at)).unwrap();
        assert_eq!(wrapped[..2], ["/usr/bin/mptcpize", "run"]);
        assert_eq!(wrapped[2..], argv[..]);
        let Err(EmuError::Unsupported(why)) = over_transport(argv, true, None) else {
            panic!("a host without mptcpize runs no program over Multipath TCP");
        };
        assert!(
            why.contains("flows[0].transport") && why.contains("mptcpize"),
            "{why}"
        );
    }

    #[test]
    fn a_signal_is_an_exit_status_above_128() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(libc::SIGTERM)), 128 + 15);
    }
}
