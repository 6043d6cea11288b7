//! `_core.emulate`: the emulator (crate `farlink-emu`) from Python, run with the GIL released.

use std::panic::{self, AssertUnwindSafe};

use farlink_emu::EmuError;
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::{panic_message, Failure};

create_exception!(
    farlink._core,
    EmulatorError,
    PyRuntimeError,
    "The emulator could not run: `kind` is `usage` (a bad option, e.g. a congestion controller \
     the kernel lacks), `unsupported` (no CAP_NET_ADMIN, no /dev/net/tun, not Linux), `system` \
     (a system call or `ip` failed) or `internal` (a bug); str() says what, in one line."
);

/// Runs the scenario (JSON text) on the emulator with `options_json` (`tcp`, `spin_us`,
/// `record_deliveries`); returns the result as JSON text. Ctrl-C and SIGTERM end the run
/// cleanly (the result says `interrupted`).
#[pyfunction]
pub(crate) fn emulate(py: Python<'_>, scenario_json: &str, options_json: &str) -> PyResult<String> {
    run_detached(py, || {
        farlink_emu::emulate_json(scenario_json, options_json)
    })
}

/// `farlink send`: farlink's sender to a listener (`flows[0]` of the scenario; `options_json`:
/// `host`, `port`, `netns`, `handshake_timeout_s`); returns the report as JSON text. Not Linux:
/// an `unsupported` error.
#[pyfunction]
pub(crate) fn send(py: Python<'_>, scenario_json: &str, options_json: &str) -> PyResult<String> {
    #[cfg(target_os = "linux")]
    {
        run_detached(py, || {
            farlink_emu::send::send_json(scenario_json, options_json)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (scenario_json, options_json);
        run_detached(py, || {
            Err(EmuError::Unsupported(
                "send needs Linux (TUN devices)".into(),
            ))
        })
    }
}

/// The signal (2 for SIGINT, 15 for SIGTERM) that ended the last emulation interrupted in
/// this process, or None: `farlink emulate` exits 128 plus it.
#[pyfunction]
pub(crate) fn emulate_interrupt_signal() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        farlink_emu::last_interrupt_signal()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Runs `f` with the GIL released; a panic becomes an internal error, an [`EmuError`] an
/// `EmulatorError` with its `kind`.
fn run_detached(
    py: Python<'_>,
    f: impl FnOnce() -> Result<String, EmuError> + Send,
) -> PyResult<String> {
    let outcome = py.detach(|| {
        panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
            Err(EmuError::Internal(format!(
                "the emulator panicked (a bug; please report it with the scenario): {}",
                panic_message(&*payload)
            )))
        })
    });
    outcome.map_err(|e| {
        let kind = match &e {
            EmuError::Scenario(s) => return Failure::Scenario(s.clone()).into_py_err(py),
            EmuError::Usage(_) => "usage",
            EmuError::Unsupported(_) => "unsupported",
            EmuError::System(_) => "system",
            EmuError::Internal(_) => "internal",
        };
        let err = EmulatorError::new_err(e.to_string());
        if let Err(set) = err.value(py).setattr("kind", kind) {
            return set;
        }
        err
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(emulate, m)?)?;
    m.add_function(wrap_pyfunction!(send, m)?)?;
    m.add_function(wrap_pyfunction!(emulate_interrupt_signal, m)?)?;
    m.add("EmulatorError", m.py().get_type::<EmulatorError>())?;
    Ok(())
}
