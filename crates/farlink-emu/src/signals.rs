//! Ctrl-C and SIGTERM end a run cleanly: while a run lives, both only set a flag the driver and
//! the workload look at; when it ends, the dispositions the process had are put back (a
//! library must not leave a host process, Python's for one, ignoring SIGTERM).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::error::EmuError;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The signal that ended the last run interrupted (0: none yet), for its exit status.
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // An atomic store is async-signal-safe.
    LAST_SIGNAL.store(sig, Ordering::Relaxed);
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// The signal (SIGINT or SIGTERM) that ended the last run interrupted in this process, if
/// any: a command line exits 128 plus it, as a shell reports a process the signal ended.
pub fn last_interrupt_signal() -> Option<i32> {
    Some(LAST_SIGNAL.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// The dispositions the process had before the first of the runs alive, and how many are.
static INSTALLED: Mutex<(usize, Vec<(Signal, SigAction)>)> = Mutex::new((0, Vec::new()));

/// The run's handlers for SIGINT and SIGTERM; the previous ones come back when the last run
/// alive in the process drops its `Signals`.
pub struct Signals(());

impl Signals {
    pub fn install() -> Result<Signals, EmuError> {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if installed.0 == 0 {
            INTERRUPTED.store(false, Ordering::Relaxed);
            LAST_SIGNAL.store(0, Ordering::Relaxed);
            let action = SigAction::new(
                SigHandler::Handler(on_signal),
                SaFlags::SA_RESTART,
                SigSet::empty(),
            );
            for sig in [Signal::SIGINT, Signal::SIGTERM] {
                // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
                #[allow(unsafe_code)]
                let prev = unsafe { sigaction(sig, &action) };
                match prev {
                    Ok(prev) => installed.1.push((sig, prev)),
                    Err(e) => {
                        restore(&mut installed.1);
                        return Err(EmuError::sys(format!("sigaction {sig}"), e));
                    }
                }
            }
        }
        installed.0 += 1;
        Ok(Signals(()))
    }

    /// Whether SIGINT or SIGTERM came since the runs alive began.
    pub fn interrupted(&self) -> bool {
        INTERRUPTED.load(Ordering::Relaxed)
    }
}

fn restore(previous: &mut Vec<(Signal, SigAction)>) {
    for (sig, prev) in previous.drain(..).rev() {
        // SAFETY: puts back the disposition the process had before the first install.
        #[allow(unsafe_code)]
        let _ = unsafe { sigaction(sig, &prev) };
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        installed.0 -= 1;
        if installed.0 == 0 {
            restore(&mut installed.1);
        }
    }
}
