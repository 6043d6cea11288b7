//! The daemon's control socket: operators' commands on a Unix stream socket (the
//! configuration's `control` path), one line in, one line back, then the daemon closes.
//!
//! * `hold MODEM`: hang the member up and keep it down (maintenance);
//! * `release MODEM`: let it dial again.
//!
//! `MODEM` is a member's name, or its number in the log (0 for the first). The answer is
//! `ok ...` or `error: ...`. The socket is made owner-only (0600): holding a modem is an
//! operator's act. A client is read without blocking the loop; one that sends no line within
//! [`CLIENT_WAIT`] is dropped.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a client may take to send its line.
pub const CLIENT_WAIT: Duration = Duration::from_secs(5);
/// The longest request line taken.
const MAX_LINE: usize = 256;

/// What an operator asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Hold(String),
    Release(String),
}

impl Request {
    /// Reads `hold MODEM` or `release MODEM`.
    pub fn parse(line: &str) -> Result<Request, String> {
        let mut words = line.split_whitespace();
        let (verb, modem) = (words.next(), words.next());
        match (verb, modem, words.next()) {
            (Some("hold"), Some(m), None) => Ok(Request::Hold(m.to_string())),
            (Some("release"), Some(m), None) => Ok(Request::Release(m.to_string())),
            _ => Err(format!(
                "expected \"hold MODEM\" or \"release MODEM\", got {:?}",
                line.trim()
            )),
        }
    }

    pub fn line(&self) -> String {
        match self {
            Request::Hold(m) => format!("hold {m}\n"),
            Request::Release(m) => format!("release {m}\n"),
        }
    }
}

#[derive(Debug)]
struct Client {
    stream: UnixStream,
    got: Vec<u8>,
    since: Instant,
}

/// The listening socket and the clients whose line has not come yet.
#[derive(Debug)]
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
    clients: Vec<Client>,
}

impl ControlServer {
    /// Listens on `path`. A socket file left by a daemon that is gone is replaced; one a
    /// running daemon answers on is refused (two daemons on one configuration).
    pub fn bind(path: &Path) -> Result<ControlServer, String> {
        let shown = path.display();
        // Only a socket is ever removed: a file of someone else's in its place is refused.
        super::paths::check_socket(path).map_err(|e| format!("control socket: {e}"))?;
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "control socket {shown}: a running daemon listens on it"
                ));
            }
            std::fs::remove_file(path)
                .map_err(|e| format!("control socket {shown}: cannot remove the old one: {e}"))?;
        }
        let listener =
            UnixListener::bind(path).map_err(|e| format!("control socket {shown}: {e}"))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("control socket {shown}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("control socket {shown}: {e}"))?;
        Ok(ControlServer {
            listener,
            path: path.to_path_buf(),
            clients: Vec::new(),
        })
    }

    /// The descriptors to poll for reading: the listener, then each client.
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        std::iter::once(self.listener.as_fd())
            .chain(self.clients.iter().map(|c| c.stream.as_fd()))
            .collect()
    }

    /// Takes new clients and what the others sent; returns each complete request with a
    /// function's answer to it written back (`answer` carries the request out).
    pub fn service(&mut self, mut answer: impl FnMut(Result<Request, String>) -> String) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_ok() {
                        self.clients.push(Client {
                            stream,
                            got: Vec::new(),
                            since: Instant::now(),
                        });
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let mut k = 0;
        while k < self.clients.len() {
            match read_line(&mut self.clients[k]) {
                Ok(None) if self.clients[k].since.elapsed() < CLIENT_WAIT => k += 1,
                Ok(None) | Err(()) => {
                    self.clients.swap_remove(k);
                }
                Ok(Some(line)) => {
                    let mut c = self.clients.swap_remove(k);
                    let reply = answer(Request::parse(&line));
                    // A few bytes into an empty socket buffer: written at once; the client
                    // may be gone, which is its affair.
                    let _ = c.stream.write_all(format!("{reply}\n").as_bytes());
                }
            }
        }
    }
}

/// The client's line once it is complete (`None`: not yet); `Err` for a client that closed
/// or sent too much.
fn read_line(c: &mut Client) -> Result<Option<String>, ()> {
    let mut buf = [0u8; MAX_LINE];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => c.got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Err(()),
        }
        if c.got.len() > MAX_LINE {
            return Err(());
        }
    }
    match c.got.iter().position(|&b| b == b'\n') {
        Some(i) => Ok(Some(String::from_utf8_lossy(&c.got[..i]).into_owned())),
        None if c.got.len() > MAX_LINE => Err(()),
        None => Ok(None),
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends `request` to the daemon listening on `socket` and returns its answer (`ok ...`);
/// an `error: ...` answer or no daemon there is an `Err` with what went wrong.
pub fn send(socket: &Path, request: &Request) -> Result<String, String> {
    let shown = socket.display();
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!("control socket {shown}: {e} (is the daemon running with this configuration?)")
    })?;
    s.set_read_timeout(Some(CLIENT_WAIT))
        .and_then(|()| s.set_write_timeout(Some(CLIENT_WAIT)))
        .map_err(|e| format!("control socket {shown}: {e}"))?;
    s.write_all(request.line().as_bytes())
        .map_err(|e| format!("control socket {shown}: {e}"))?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .map_err(|e| format!("control socket {shown}: no answer: {e}"))?;
    let answer = answer.trim().to_string();
    match answer.strip_prefix("error: ") {
        Some(why) => Err(why.to_string()),
        None if answer.starts_with("ok") => Ok(answer),
        None => Err(format!(
            "control socket {shown}: unexpected answer {answer:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_and_written() {
        assert_eq!(Request::parse("hold m3"), Ok(Request::Hold("m3".into())));
        assert_eq!(
            Request::parse(" release  2 "),
            Ok(Request::Release("2".into()))
        );
        for bad in ["", "hold", "hold a b", "drop m1"] {
            assert!(Request::parse(bad).is_err(), "{bad}");
        }
        let r = Request::Hold("m1".into());
        assert_eq!(Request::parse(&r.line()), Ok(r));
    }

    #[test]
    fn a_request_is_answered_and_a_stale_socket_replaced() {
        let path = std::env::temp_dir().join(format!("farlink-ctl-{}.sock", std::process::id()));
        // A socket file nobody listens on (a daemon killed with SIGKILL).
        drop(UnixListener::bind(&path).unwrap());
        let mut server = ControlServer::bind(&path).unwrap();
        assert!(ControlServer::bind(&path)
            .unwrap_err()
            .contains("running daemon"));
        let client = std::thread::spawn({
            let path = path.clone();
            move || send(&path, &Request::Hold("m1".into()))
        });
        let mut seen = Vec::new();
        let t0 = Instant::now();
        while seen.is_empty() && t0.elapsed() < Duration::from_secs(10) {
            server.service(|r| {
                seen.push(r.clone());
                match r {
                    Ok(Request::Hold(m)) => format!("ok held {m}"),
                    _ => "error: no".into(),
                }
            });
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(seen, vec![Ok(Request::Hold("m1".into()))]);
        assert_eq!(client.join().unwrap(), Ok("ok held m1".into()));
        drop(server);
        assert!(!path.exists());
    }
}
