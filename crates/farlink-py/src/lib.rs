//! `farlink._core`: thin PyO3 bindings over `farlink-core`. No simulation logic lives here:
//! arguments are converted at the boundary, the core runs, results are handed back.
//!
//! [`run_scenario`] does all of its work (parsing, the run, the summary's JSON, the pcap files)
//! with the GIL released and a panic caught, then converts under the GIL: trace columns move
//! into NumPy arrays without a copy or a Python object per element. Errors are mapped to Python
//! exceptions in one place, [`Failure::into_py_err`].
//!
//! A run is held to a budget (the core's default unless the caller gives one) and, every
//! `CHECK_EVERY_EVENTS` events, at most every [`POLL_INTERVAL`] of wall time, takes the GIL
//! back for a moment: to run Python's signal handlers (Ctrl-C stops the run, which keeps what
//! it has) and to call the caller's progress callback.

mod spool;
mod toml_lines;

use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

mod emulate;
mod linkmgr;

use farlink_core::trace::{
    AckTrace, AqmTrace, CapacityTrace, CwndTrace, DropTrace, GoodputTrace, MemberStateTrace,
    QueueDelayTrace, QueueTrace, RtoTrace, RttTrace, SeqTrace, Traces,
};
use farlink_core::world::{self, Budget, Progress, RunControl, RunError, RunResult, TraceSink};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

create_exception!(
    farlink._core,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be read, edited or run; exported as `farlink.ScenarioError`. When \
     the fault is a field of the document, `path` names it (`links[1].fwd.loss.p`, empty for \
     the document as a whole), `message` says what was expected there and str() is \
     `path: message`; otherwise (a file that cannot be read, TOML syntax, a bad override) both \
     are None and str() names the place."
);
create_exception!(
    farlink._core,
    BudgetError,
    PyValueError,
    "A run refused before it started: its estimated events or memory are over the budget. \
     `events`, `trace_rows`, `memory_bytes` and `disk_bytes` (0 unless traces stream to a \
     folder) are the estimate, `max_events`, `max_memory_bytes` and `max_disk_bytes` the \
     budget."
);
create_exception!(
    farlink._core,
    ConservationError,
    PyRuntimeError,
    "A simulation lost track of a packet or a byte: a bug in the engine, never the scenario's \
     fault."
);

/// The core's version and build profile, recorded with every result for provenance.
#[pyfunction]
fn build_info() -> (String, String) {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    (farlink_core::VERSION.to_string(), profile.to_string())
}

/// What a run produced, gathered without the GIL.
struct Output {
    summary_json: String,
    traces: Traces,
    /// Tap name, its capture and its address map (JSON), in the order of the scenario's
    /// `pcap`; the capture is empty when it was written to its file as the run went.
    pcap: Vec<(String, Vec<u8>, String)>,
    /// The captures written to files: tap name and path.
    pcap_files: Vec<(String, String)>,
    flows: Vec<String>,
    /// Per connection (the traces' `flow` column): scenario flow index, connection index
    /// within it, sender node, receiver node.
    connections: Vec<(u32, u32, String, String)>,
    links: Vec<String>,
    nodes: Vec<String>,
}

/// How often at most a run takes the GIL back to check signals and report progress.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Why a run gave no [`Output`].
enum Failure {
    Scenario(farlink_core::ScenarioError),
    OverBudget(world::OverBudget),
    /// The progress callback raised (other than the interrupt that stops a run).
    Callback(PyErr),
    Conservation(RunError),
    /// A panic in the core, or a failure that only a bug can cause.
    Internal(String),
    /// Arguments that do not fit the scenario (a capture file for a tap it does not have).
    Usage(String),
    /// A capture file that could not be written.
    Io(std::io::Error),
}

impl Failure {
    fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Scenario(e) => {
                let err = ScenarioError::new_err(e.to_string());
                let value = err.value(py);
                if let Err(set) = value
                    .setattr("path", e.path)
                    .and_then(|()| value.setattr("message", e.message))
                {
                    return set;
                }
                err
            }
            Failure::OverBudget(o) => {
                let err = BudgetError::new_err(o.to_string());
                let value = err.value(py);
                let set = value
                    .setattr("events", o.estimate.events)
                    .and_then(|()| value.setattr("trace_rows", o.estimate.trace_rows))
                    .and_then(|()| value.setattr("memory_bytes", o.estimate.memory_bytes))
                    .and_then(|()| value.setattr("max_events", o.budget.max_events))
                    .and_then(|()| value.setattr("max_memory_bytes", o.budget.max_memory_bytes))
                    .and_then(|()| value.setattr("disk_bytes", o.estimate.disk_bytes))
                    .and_then(|()| value.setattr("max_disk_bytes", o.budget.max_disk_bytes));
                if let Err(set) = set {
                    return set;
                }
                err
            }
            Failure::Callback(e) => e,
            Failure::Conservation(e) => ConservationError::new_err(e.to_string()),
            Failure::Internal(message) => PyRuntimeError::new_err(message),
            Failure::Usage(message) => PyValueError::new_err(message),
            Failure::Io(e) => e.into(),
        }
    }
}

/// Parses, runs and serialises; the part of [`run_scenario`] that needs no Python but the
/// moments `hook` takes the GIL.
fn run_core(
    scenario_json: &str,
    budget: Budget,
    hook: &mut dyn FnMut(Progress) -> bool,
    mut sink: Option<&mut PySink>,
) -> Result<Output, Failure> {
    let scenario = farlink_core::parse_scenario_json(scenario_json).map_err(Failure::Scenario)?;
    if let Some(captures) = sink.as_mut().and_then(|s| s.captures.as_mut()) {
        captures.plan(&scenario).map_err(Failure::Usage)?;
    }
    let control = RunControl {
        budget: Some(budget),
        progress: Some(hook),
        sink: sink.as_deref_mut().map(|s| s as &mut dyn TraceSink),
    };
    let outcome = world::run_with(&scenario, control).map_err(|e| match e {
        RunError::Scenario(e) => Failure::Scenario(e),
        RunError::OverBudget(o) => Failure::OverBudget(o),
        e @ RunError::Conservation(_) => Failure::Conservation(e),
    });
    let captures = sink.and_then(|s| s.captures.take());
    let (result, captures) = match (outcome, captures) {
        (Ok(result), captures) => (result, captures),
        (Err(e), captures) => {
            if let Some(c) = captures {
                c.discard();
            }
            return Err(e);
        }
    };
    let summary_json = serde_json::to_string(&result.summary)
        .map_err(|e| Failure::Internal(format!("farlink core: summary to JSON: {e}")))?;
    let mut pcap_files = Vec::new();
    let pcap = match captures {
        Some(captures) => {
            let written = captures.finish(&result).map_err(Failure::Io)?;
            written
                .into_iter()
                .map(|(name, path, map)| {
                    pcap_files.push((name.clone(), path));
                    (name, Vec::new(), map)
                })
                .collect()
        }
        None => (0..result.tap_sites.len() as u32)
            .zip(&result.tap_sites)
            .map(|(i, t)| {
                world::write_pcap(&result, i, Vec::new())
                    .and_then(|bytes| {
                        Ok((t.name.clone(), bytes, world::address_map_json(&result, i)?))
                    })
                    .map_err(|e| {
                        Failure::Internal(format!("farlink core: pcap of {}: {e}", t.name))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let RunResult {
        summary,
        traces,
        flows,
        nodes,
        ..
    } = result;
    Ok(Output {
        summary_json,
        traces,
        pcap,
        pcap_files,
        connections: flows
            .iter()
            .map(|f| (f.flow, f.segment, f.from.clone(), f.to.clone()))
            .collect(),
        flows: flows.into_iter().map(|f| f.name).collect(),
        links: summary.links.into_iter().map(|l| l.name).collect(),
        nodes,
    })
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// `{table: {column: array}}` for every table of `traces`, columns in the order of their
/// struct. The destructuring patterns name every table and every column without `..`, so a
/// table or column added in the core fails to compile here until it is handed over too.
macro_rules! trace_tables {
    ($py:expr, $traces:expr, $($table:ident: $ty:ident { $($column:ident),+ $(,)? }),+ $(,)?) => {{
        let py = $py;
        let Traces { $($table),+ } = $traces;
        let tables = PyDict::new(py);
        $({
            let $ty { $($column),+ } = $table;
            let columns = PyDict::new(py);
            $(columns.set_item(stringify!($column), $column.into_pyarray(py))?;)+
            tables.set_item(stringify!($table), columns)?;
        })+
        tables
    }};
}

fn traces_to_py(py: Python<'_>, traces: Traces) -> PyResult<Bound<'_, PyDict>> {
    Ok(trace_tables!(py, traces,
        cwnd: CwndTrace { time_ns, flow, cwnd_bytes, ssthresh_bytes, effective_cwnd_bytes },
        seq: SeqTrace { time_ns, flow, seq, len_bytes, retransmission },
        ack: AckTrace { time_ns, flow, ack },
        rtt: RttTrace { time_ns, flow, rtt_ns, srtt_ns },
        rto: RtoTrace { time_ns, flow, rto_ns },
        queue: QueueTrace { time_ns, link, forward, pkts, bytes },
        drops: DropTrace { time_ns, link, forward, flow, ack_packet, seq, syn, cause },
        goodput: GoodputTrace { time_ns, flow, delivered_bytes },
        member_state: MemberStateTrace { time_ns, link, member, state },
        capacity: CapacityTrace { time_ns, link, members_up, capacity_bps },
        queue_delay: QueueDelayTrace { time_ns, link, forward, sojourn_ns },
        aqm: AqmTrace { time_ns, link, forward, queue, event, value },
    ))
}

/// A Python callable taking each chunk of trace rows (`{table: {column: array}}`, every table,
/// those with nothing to hand over empty) as the run hands them over; the first error it raises stops the run and is
/// raised once the run has stopped.
struct PySink {
    callback: Py<PyAny>,
    raised: Option<PyErr>,
    /// The taps' captures, spooled and written by this crate (no GIL needed).
    captures: Option<spool::Captures>,
}

impl TraceSink for PySink {
    fn takes_captures(&self) -> bool {
        self.captures.is_some()
    }

    fn capture(&mut self, tap: u32, new_run: bool, entries: &[u8]) -> bool {
        self.captures
            .as_mut()
            .is_some_and(|c| c.append(tap, new_run, entries))
    }

    fn capture_done(&mut self, stream: world::CaptureStream) -> bool {
        self.captures.as_mut().is_some_and(|c| c.done(stream))
    }

    fn rows(&mut self, chunk: Traces) -> bool {
        if self.raised.is_some() {
            return false;
        }
        let outcome = Python::attach(|py| {
            let tables = traces_to_py(py, chunk)?;
            self.callback.call1(py, (tables,)).map(drop)
        });
        match outcome {
            Ok(()) => true,
            Err(e) => {
                self.raised = Some(e);
                false
            }
        }
    }
}

/// What a run of one scenario (JSON text) would cost, and the default budget; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (scenario_json, *, streamed=false, stream_pcap=false))]
fn estimate_scenario<'py>(
    py: Python<'py>,
    scenario_json: &str,
    streamed: bool,
    stream_pcap: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let scenario = farlink_core::parse_scenario_json(scenario_json)
        .map_err(|e| Failure::Scenario(e).into_py_err(py))?;
    let e = world::budget::estimate_with(&scenario, streamed, streamed && stream_pcap);
    let b = Budget::default();
    let out = PyDict::new(py);
    out.set_item("events", e.events)?;
    out.set_item("trace_rows", e.trace_rows)?;
    out.set_item("memory_bytes", e.memory_bytes)?;
    out.set_item("disk_bytes", e.disk_bytes)?;
    out.set_item("default_max_events", b.max_events)?;
    out.set_item("default_max_memory_bytes", b.max_memory_bytes)?;
    out.set_item("default_max_disk_bytes", b.max_disk_bytes)?;
    Ok(out)
}

/// Runs one scenario (JSON text) in the core and returns its result; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    scenario_json, *, max_events=None, max_memory_bytes=None, max_disk_bytes=None,
    progress=None, trace_sink=None, capture_files=None
))]
#[allow(clippy::too_many_arguments)]
fn run_scenario<'py>(
    py: Python<'py>,
    scenario_json: &str,
    max_events: Option<u64>,
    max_memory_bytes: Option<u64>,
    max_disk_bytes: Option<u64>,
    progress: Option<Bound<'py, PyAny>>,
    trace_sink: Option<Bound<'py, PyAny>>,
    capture_files: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let capture_files = match capture_files {
        None => None,
        Some(_) if trace_sink.is_none() => {
            return Err(PyValueError::new_err(
                "capture_files streams the captures beside the traces: give a trace_sink too",
            ))
        }
        Some(path_of) => {
            // The taps' names are the core's: ask for each one's file before the run.
            let scenario = farlink_core::parse_scenario_json(scenario_json)
                .map_err(|e| Failure::Scenario(e).into_py_err(py))?;
            let mut files = std::collections::BTreeMap::new();
            for tap in scenario.pcap() {
                let path: std::path::PathBuf = path_of.call1((tap.name.as_str(),))?.extract()?;
                files.insert(tap.name.clone(), path);
            }
            Some(files)
        }
    };
    let defaults = Budget::default();
    let budget = Budget {
        max_events: max_events.unwrap_or(defaults.max_events),
        max_memory_bytes: max_memory_bytes.unwrap_or(defaults.max_memory_bytes),
        max_disk_bytes: max_disk_bytes.unwrap_or(defaults.max_disk_bytes),
    };
    let mut sink = trace_sink.map(|callback| PySink {
        callback: callback.unbind(),
        raised: None,
        captures: capture_files.map(spool::Captures::new),
    });
    let progress = progress.map(Bound::unbind);
    // An error the callback raised, to raise once the run has stopped (an interrupt only
    // stops the run: its result is kept, marked partial).
    let mut raised: Option<PyErr> = None;
    let mut last_poll = Instant::now();
    let mut hook = |p: Progress| -> bool {
        if last_poll.elapsed() < POLL_INTERVAL {
            return true;
        }
        last_poll = Instant::now();
        let outcome = Python::attach(|py| {
            py.check_signals()?;
            if let Some(callback) = &progress {
                callback.call1(py, (p.now.as_secs_f64(), p.end.as_secs_f64(), p.events))?;
            }
            Ok::<(), PyErr>(())
        });
        match outcome {
            Ok(()) => true,
            Err(e) => {
                let interrupt = Python::attach(|py| e.is_instance_of::<PyKeyboardInterrupt>(py));
                if !interrupt {
                    raised = Some(e);
                }
                false
            }
        }
    };
    let outcome = py.detach(|| {
        panic::catch_unwind(AssertUnwindSafe(|| {
            run_core(scenario_json, budget, &mut hook, sink.as_mut())
        }))
        .unwrap_or_else(|payload| {
            Err(Failure::Internal(format!(
                "farlink core panicked (a bug; please report it with the scenario): {}",
                panic_message(&*payload)
            )))
        })
    });
    if let Some(e) = raised.or_else(|| sink.and_then(|s| s.raised)) {
        return Err(Failure::Callback(e).into_py_err(py));
    }
    let out = outcome.map_err(|f| f.into_py_err(py))?;

    let result = PyDict::new(py);
    result.set_item("summary", out.summary_json)?;
    result.set_item("traces", traces_to_py(py, out.traces)?)?;
    let pcap = PyDict::new(py);
    let addresses = PyDict::new(py);
    for (name, bytes, map) in out.pcap {
        if !out.pcap_files.iter().any(|(file_of, _)| *file_of == name) {
            pcap.set_item(&name, PyBytes::new(py, &bytes))?;
        }
        addresses.set_item(name, map)?;
    }
    result.set_item("pcap", pcap)?;
    result.set_item("pcap_addresses", addresses)?;
    let files = PyDict::new(py);
    for (name, path) in out.pcap_files {
        files.set_item(name, path)?;
    }
    result.set_item("pcap_files", files)?;
    result.set_item("flows", out.flows)?;
    result.set_item("connections", out.connections)?;
    result.set_item("links", out.links)?;
    result.set_item("nodes", out.nodes)?;
    Ok(result)
}

/// Validates one scenario (JSON text) and returns it resolved, as JSON text; see `_core.pyi`.
#[pyfunction]
fn resolve_scenario(py: Python<'_>, scenario_json: &str) -> PyResult<String> {
    let outcome = py.detach(|| {
        panic::catch_unwind(AssertUnwindSafe(|| {
            let resolved = farlink_core::scenario::resolve_scenario_json(scenario_json)
                .map_err(Failure::Scenario)?;
            serde_json::to_string(&resolved).map_err(|e| {
                Failure::Internal(format!("farlink core: resolved scenario to JSON: {e}"))
            })
        }))
        .unwrap_or_else(|payload| {
            Err(Failure::Internal(format!(
                "farlink core panicked (a bug; please report it with the scenario): {}",
                panic_message(&*payload)
            )))
        })
    });
    outcome.map_err(|f| f.into_py_err(py))
}

/// The arrivals of a short-flow class (`flows_poisson`, flow `flow` of the scenario) as the
/// simulator runs them: `(instant_s, size_bytes)` in order; see `_core.pyi`.
#[pyfunction]
fn short_flow_plan(py: Python<'_>, scenario_json: &str, flow: usize) -> PyResult<Vec<(f64, u64)>> {
    let outcome = py.detach(|| {
        let sc = farlink_core::parse_scenario_json(scenario_json).map_err(Failure::Scenario)?;
        farlink_core::apps::short_flows::plan_of(&sc, flow)
            .map(|plan| {
                plan.iter()
                    .map(|a| (a.at.as_secs_f64(), a.size_bytes))
                    .collect()
            })
            .ok_or_else(|| {
                Failure::Scenario(farlink_core::ScenarioError::new(
                    format!("flows[{flow}]"),
                    "not a short-flow class (app.kind = \"flows_poisson\")",
                ))
            })
    });
    outcome.map_err(|f| f.into_py_err(py))
}

/// Every TCP profile as Python reads it: its fields (key, value, resolved key, part, kernel
/// source), the models it runs for Linux's modules, its growth rules and its loss recovery;
/// see `_core.pyi`.
fn tcp_profiles(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use farlink_core::scenario::TcpProfile;
    use farlink_core::tcp::cc::CcConfig;
    let loads = py.import("json")?.getattr("loads")?;
    let profiles = PyDict::new(py);
    for name in TcpProfile::NAMES {
        let profile: TcpProfile = name
            .parse()
            .map_err(|e| PyRuntimeError::new_err(format!("{e}")))?;
        let fields = profile
            .fields()
            .iter()
            .map(|f| {
                let value = loads.call1((f.value,))?;
                PyTuple::new(
                    py,
                    [
                        f.key.into_pyobject(py)?.into_any(),
                        value,
                        f.resolved.into_pyobject(py)?.into_any(),
                        f.part.name().into_pyobject(py)?.into_any(),
                        f.source.into_pyobject(py)?.into_any(),
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        let models: Vec<(&str, &str)> = CcConfig::LINUX_MODELS
            .iter()
            .map(|(module, _)| (*module, profile.controller(module)))
            .filter(|(module, model)| module != model)
            .collect();
        let growth = PyDict::new(py);
        for cc in CcConfig::NAMES {
            if let Some(g) = profile.growth(cc) {
                growth.set_item(cc, g)?;
            }
        }
        let entry = PyDict::new(py);
        entry.set_item("fields", PyTuple::new(py, fields)?)?;
        entry.set_item("models", PyTuple::new(py, models)?)?;
        entry.set_item("growth", growth)?;
        entry.set_item("recovery", profile.recovery())?;
        profiles.set_item(name, entry)?;
    }
    Ok(profiles)
}

/// The 1-based line of a scenario path in TOML text, or None; see `_core.pyi`.
#[pyfunction]
fn toml_line(text: &str, path: &str) -> Option<usize> {
    toml_lines::line_of(text, path)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", farlink_core::VERSION)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(short_flow_plan, m)?)?;
    m.add_function(wrap_pyfunction!(toml_line, m)?)?;
    // The `member_state` trace's codes by name, so that Python reads them from here only.
    m.add(
        "MEMBER_STATE_NAMES",
        PyTuple::new(py, farlink_core::trace::MEMBER_STATE_NAMES)?,
    )?;
    // The `aqm` trace's event codes by name, likewise.
    m.add(
        "AQM_EVENT_NAMES",
        PyTuple::new(py, farlink_core::trace::AQM_EVENT_NAMES)?,
    )?;
    // The controllers that model a Linux module, (module, controller), so that
    // `farlink.linux_tcp` reads the pairs from here only.
    m.add(
        "LINUX_MODELS",
        PyTuple::new(py, farlink_core::tcp::cc::CcConfig::LINUX_MODELS)?,
    )?;
    // The TCP profiles by name, so that `farlink.linux_tcp` and the command line's `--tcp`
    // read what a profile sets from here only.
    m.add("TCP_PROFILES", tcp_profiles(py)?)?;
    // The resolved scenario's fields the core derives, so that `farlink scenario show` marks
    // them from this list only.
    m.add(
        "DERIVED_FIELDS",
        PyTuple::new(py, farlink_core::scenario::DERIVED_FIELDS)?,
    )?;
    // One class for every scenario fault, raised by the core and by the Python package alike:
    // `path` and `message` are None unless a field is at fault, so a handler can read them
    // without asking whether they exist.
    let scenario_error = py.get_type::<ScenarioError>();
    scenario_error.setattr("path", py.None())?;
    scenario_error.setattr("message", py.None())?;
    m.add("ScenarioError", scenario_error)?;
    m.add("ConservationError", py.get_type::<ConservationError>())?;
    m.add("BudgetError", py.get_type::<BudgetError>())?;
    emulate::register(m)?;
    linkmgr::register(m)?;
    Ok(())
}
