//! `_core.linkmgr_run`, `linkmgr_modem_sim`, `linkmgr_control` and `linkmgr_config`: the link manager (crate `farlink-linkmgr`)
//! from Python, each run with the GIL released until SIGTERM or SIGINT.

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use farlink_linkmgr::{self as linkmgr, LinkMgrError as Failure};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::panic_message;

create_exception!(
    farlink._core,
    LinkMgrError,
    PyValueError,
    "The link manager could not run or stopped: `kind` is `config` (the configuration or an \
     option is wrong; str() places it, `FILE:LINE: path: message`) or `system` (the event log, \
     a port, a system call); str() says what, in one line."
);

fn to_py(py: Python<'_>, e: Failure) -> PyErr {
    let kind = match &e {
        Failure::Config(_) => "config",
        Failure::System(_) => "system",
    };
    let err = LinkMgrError::new_err(e.to_string());
    if let Err(set) = err.value(py).setattr("kind", kind) {
        return set;
    }
    err
}

fn caught(f: impl FnOnce() -> Result<(), Failure>) -> Result<(), Failure> {
    panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(Failure::System(format!(
            "the link manager panicked (a bug; please report it): {}",
            panic_message(&*payload)
        )))
    })
}

/// Runs the link-management daemon on the configuration file `config_path` until SIGTERM or
/// SIGINT.
#[pyfunction]
pub(crate) fn linkmgr_run(py: Python<'_>, config_path: &str) -> PyResult<()> {
    let path = PathBuf::from(config_path);
    py.detach(|| caught(|| linkmgr::run_daemon(&path)))
        .map_err(|e| to_py(py, e))
}

/// Runs `modems` simulated modem pairs of the first bundle of `scenario_json` (a resolved
/// scenario) on ptys linked in `dir`, until SIGTERM or SIGINT; prints each link's path once
/// they exist.
#[pyfunction]
#[pyo3(signature = (scenario_json, modems, dir, time_scale, seed, signal_reply_s))]
pub(crate) fn linkmgr_modem_sim(
    py: Python<'_>,
    scenario_json: &str,
    modems: usize,
    dir: &str,
    time_scale: f64,
    seed: Option<u64>,
    signal_reply_s: f64,
) -> PyResult<()> {
    let dir = PathBuf::from(dir);
    py.detach(|| {
        caught(|| {
            linkmgr::run_modem_sim(
                scenario_json,
                modems,
                &dir,
                time_scale,
                seed,
                signal_reply_s,
                |links: &[PathBuf]| {
                    let mut out = std::io::stdout().lock();
                    for l in links {
                        let _ = writeln!(out, "{}", Path::new(l).display());
                    }
                    let _ = out.flush();
                },
            )
        })
    })
    .map_err(|e| to_py(py, e))
}

/// Sends `request` (`hold` or `release`) for member `modem` to the daemon of the configuration
/// (or control socket) `target`; returns its answer.
#[pyfunction]
pub(crate) fn linkmgr_control(
    py: Python<'_>,
    target: &str,
    request: &str,
    modem: &str,
) -> PyResult<String> {
    let path = PathBuf::from(target);
    let mut answer = String::new();
    py.detach(|| {
        caught(|| {
            answer = linkmgr::control(&path, request, modem)?;
            Ok(())
        })
    })
    .map_err(|e| to_py(py, e))?;
    Ok(answer)
}

/// The configuration file `config_path` read and checked, as JSON (relative paths resolved).
#[pyfunction]
pub(crate) fn linkmgr_config(py: Python<'_>, config_path: &str) -> PyResult<String> {
    linkmgr::config::load(Path::new(config_path))
        .map(|c| c.to_json().to_string())
        .map_err(|e| to_py(py, Failure::Config(e.to_string())))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(linkmgr_run, m)?)?;
    m.add_function(wrap_pyfunction!(linkmgr_modem_sim, m)?)?;
    m.add_function(wrap_pyfunction!(linkmgr_control, m)?)?;
    m.add_function(wrap_pyfunction!(linkmgr_config, m)?)?;
    m.add("LinkMgrError", m.py().get_type::<LinkMgrError>())?;
    Ok(())
}
