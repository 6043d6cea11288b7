//! Network namespaces of one run, named `farlink-<run>-<node>`, and their clean-up.
//!
//! A run holds an exclusive `flock` on `/run/farlink/<run>.lock` for as long as it lives; the
//! kernel releases it when the process dies, however it dies. So at the next start, a
//! `farlink-<run>-*` namespace whose lock can be taken (or has no lock file) belongs to a run
//! that is gone (killed with SIGKILL, say) and is removed. Namespaces are made and removed with
//! iproute2's `ip netns`, which also keeps `/run/netns` as every other tool expects.

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::fcntl::{Flock, FlockArg};
use nix::sched::{setns, CloneFlags};

use crate::error::EmuError;

const PREFIX: &str = "farlink-";
const NETNS_DIR: &str = "/run/netns";
const LOCK_DIR: &str = "/run/farlink";

/// Runs `ip ARGS`; an error names the command and what it printed.
pub fn ip(args: &[&str]) -> Result<(), EmuError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| EmuError::sys("cannot run `ip` (iproute2)", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::System(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The run's identity and its lock: while this lives, its namespaces are not stale.
#[derive(Debug)]
pub struct RunLock {
    pub id: String,
    path: PathBuf,
    _lock: Flock<File>,
}

impl RunLock {
    /// A new run id (the process id and a counter, in hex: short enough for interface names)
    /// and its lock.
    pub fn acquire() -> Result<RunLock, EmuError> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed) % 16;
        let id = format!("{:x}{seq:x}", std::process::id());
        fs::create_dir_all(LOCK_DIR).map_err(|e| EmuError::sys(LOCK_DIR, e))?;
        let path = Path::new(LOCK_DIR).join(format!("{id}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| EmuError::sys(path.display(), e))?;
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| EmuError::sys(format!("lock {}", path.display()), e))?;
        Ok(RunLock {
            id,
            path,
            _lock: lock,
        })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The run id of an emulator namespace name, `farlink-<run>-<node>` with `<run>` in hex as
/// [`RunLock::acquire`] makes it. Other farlink tools' namespaces (the capture tests'
/// `farlink-rc<pid>-*`, say) do not have that form and are never taken for stale ones.
fn run_of(name: &str) -> Option<&str> {
    let id = name.strip_prefix(PREFIX)?.split('-').next()?;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// Whether run `id` is gone: its lock file is absent or can be locked.
fn run_is_gone(id: &str) -> bool {
    let path = Path::new(LOCK_DIR).join(format!("{id}.lock"));
    let Ok(file) = OpenOptions::new().write(true).open(&path) else {
        return true;
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => {
            let _ = fs::remove_file(&path);
            drop(lock);
            true
        }
        Err(_) => false,
    }
}

/// Removes the namespaces of runs that are gone; returns their names.
pub fn remove_stale() -> Vec<String> {
    let Ok(entries) = fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| run_of(n).is_some_and(run_is_gone))
        .collect();
    names.sort();
    for n in &names {
        // Programs a killed run had started there (their parent-death signal ends the
        // programs farlink started, not what those started in turn).
        if let Ok(file) = File::open(Path::new(NETNS_DIR).join(n)) {
            stop_processes_in(&file);
        }
    }
    names.retain(|n| ip(&["netns", "delete", n]).is_ok());
    names
}

/// A network namespace this run made; removed when dropped.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
    file: File,
}

impl Netns {
    /// Makes `farlink-<run>-<node>` (the node's name reduced to letters, digits and `_`).
    pub fn create(run: &str, node: &str) -> Result<Netns, EmuError> {
        let clean: String = node
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(24)
            .collect();
        let name = format!("{PREFIX}{run}-{clean}");
        ip(&["netns", "add", &name])?;
        let path = Path::new(NETNS_DIR).join(&name);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                let _ = ip(&["netns", "delete", &name]);
                return Err(EmuError::sys(path.display(), e));
            }
        };
        let ns = Netns { name, file };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's file, which `setns(2)` takes.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Runs `ip -n <ns> ARGS`.
    pub fn ip(&self, args: &[&str]) -> Result<(), EmuError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs `f` on a new thread that has entered this namespace: sockets and devices it makes,
    /// and the `/proc/sys/net` it writes, are the namespace's.
    pub fn spawn<T, F>(
        &self,
        name: &str,
        f: F,
    ) -> Result<std::thread::JoinHandle<Option<T>>, EmuError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let fd = self
            .file
            .try_clone()
            .map_err(|e| EmuError::sys("dup namespace fd", e))?;
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let entered = setns(fd.as_fd(), CloneFlags::CLONE_NEWNET);
                drop(fd);
                let ok = entered.is_ok();
                let _ = tx.send(entered);
                // Nothing runs outside the namespace; the caller has the error.
                ok.then(f)
            })
            .map_err(|e| EmuError::sys("spawn thread", e))?;
        match rx.recv() {
            Ok(Ok(())) => Ok(handle),
            Ok(Err(e)) => Err(EmuError::sys(format!("setns {}", self.name), e)),
            Err(e) => Err(EmuError::sys("namespace thread", e)),
        }
    }

    /// Runs `f` inside this namespace and waits for it.
    pub fn run<T, F>(&self, f: F) -> Result<T, EmuError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.spawn("farlink-ns", f)?
            .join()
            .ok()
            .flatten()
            .ok_or_else(|| EmuError::Internal("a namespace thread panicked".into()))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // A namespace lives on while a process is in it: end what programs left running.
        stop_processes_in(&self.file);
        let _ = ip(&["netns", "delete", &self.name]);
    }
}

/// The processes (other than this one) whose network namespace is the one `ns` refers to.
fn processes_in(ns: &File) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = ns.metadata() else {
        return Vec::new();
    };
    let own = std::process::id() as i32;
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            fs::metadata(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|m| m.ino() == me.ino() && m.dev() == me.dev())
        })
        .collect()
}

/// Ends every process in namespace `ns`: SIGTERM, then SIGKILL to those left after a second.
fn stop_processes_in(ns: &File) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let mut left = processes_in(ns);
    if left.is_empty() {
        return;
    }
    for &pid in &left {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
    let started = std::time::Instant::now();
    while !left.is_empty() && started.elapsed() < std::time::Duration::from_secs(1) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        left = processes_in(ns);
    }
    for &pid in &left {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Writes sysctl `key` (dotted, under `net.`) in the calling thread's network namespace.
pub fn write_sysctl(key: &str, value: &str) -> Result<(), EmuError> {
    let path = Path::new("/proc/sys").join(key.replace('.', "/"));
    fs::write(&path, value).map_err(|e| EmuError::sys(format!("sysctl {key}"), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_id_is_read_back_from_a_namespace_name() {
        assert_eq!(run_of("farlink-1a2b3-S"), Some("1a2b3"));
        assert_eq!(run_of("farlink-1a2b3-node_with_dash"), Some("1a2b3"));
        assert_eq!(run_of("other-1a2b3-S"), None);
    }

    #[test]
    fn other_farlink_namespaces_are_never_taken_for_an_emulator_run() {
        // The real-capture tests name theirs `farlink-rc<pid>-<role>`: not a hex run id.
        assert_eq!(run_of("farlink-rc4242-snd"), None);
        assert_eq!(run_of("farlink--S"), None);
    }
}
