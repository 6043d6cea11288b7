//! `farlink._core`: thin PyO3 bindings over `farlink-core`. No simulation logic lives here:
//! arguments are converted at the boundary, the core runs, results are handed back.
//!
//! [`run_scenario`] does all of its work (parsing, the run, the summary's JSON, the pcap files)
//! with the GIL released and a panic caught, then converts under the GIL: trace columns move
//! into NumPy arrays without a copy or a Python object per element. Errors are mapped to Python
//! exceptions in one place, [`Failure::into_py_err`].

use std::panic::{self, AssertUnwindSafe};

use farlink_core::trace::{
    AckTrace, CapacityTrace, CwndTrace, DropTrace, GoodputTrace, MemberStateTrace, QueueTrace,
    RtoTrace, RttTrace, SeqTrace, Traces,
};
use farlink_core::world::{self, RunError, RunResult};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    farlink._core,
    ScenarioError,
    PyValueError,
    "An invalid scenario: `path` names the offending field (`links[1].fwd.loss.p`, empty for \
     the document as a whole), `message` says what was expected; str() is `path: message`."
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
    /// Tapped link name and its capture, in the order of the scenario's `pcap`.
    pcap: Vec<(String, Vec<u8>)>,
    flows: Vec<String>,
    /// Per connection (the traces' `flow` column): scenario flow index, connection index
    /// within it, sender node, receiver node.
    connections: Vec<(u32, u32, String, String)>,
    links: Vec<String>,
    nodes: Vec<String>,
}

/// Why a run gave no [`Output`].
enum Failure {
    Scenario(farlink_core::ScenarioError),
    Conservation(RunError),
    /// A panic in the core, or a failure that only a bug can cause.
    Internal(String),
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
            Failure::Conservation(e) => ConservationError::new_err(e.to_string()),
            Failure::Internal(message) => PyRuntimeError::new_err(message),
        }
    }
}

/// Parses, runs and serialises; the part of [`run_scenario`] that needs no Python.
fn run_core(scenario_json: &str) -> Result<Output, Failure> {
    let scenario = farlink_core::parse_scenario_json(scenario_json).map_err(Failure::Scenario)?;
    let result = world::run(&scenario).map_err(|e| match e {
        RunError::Scenario(e) => Failure::Scenario(e),
        e @ RunError::Conservation(_) => Failure::Conservation(e),
    })?;
    let summary_json = serde_json::to_string(&result.summary)
        .map_err(|e| Failure::Internal(format!("farlink core: summary to JSON: {e}")))?;
    let pcap = result
        .tap_links
        .iter()
        .map(|t| {
            world::write_pcap(&result, t.link, Vec::new())
                .map(|bytes| (t.name.clone(), bytes))
                .map_err(|e| Failure::Internal(format!("farlink core: pcap of {}: {e}", t.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
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
    ))
}

/// Runs one scenario (JSON text) in the core and returns its result; see `_core.pyi`.
#[pyfunction]
fn run_scenario<'py>(py: Python<'py>, scenario_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let outcome = py.detach(|| {
        panic::catch_unwind(AssertUnwindSafe(|| run_core(scenario_json))).unwrap_or_else(
            |payload| {
                Err(Failure::Internal(format!(
                    "farlink core panicked (a bug; please report it with the scenario): {}",
                    panic_message(&*payload)
                )))
            },
        )
    });
    let out = outcome.map_err(|f| f.into_py_err(py))?;

    let result = PyDict::new(py);
    result.set_item("summary", out.summary_json)?;
    result.set_item("traces", traces_to_py(py, out.traces)?)?;
    let pcap = PyDict::new(py);
    for (name, bytes) in out.pcap {
        pcap.set_item(name, PyBytes::new(py, &bytes))?;
    }
    result.set_item("pcap", pcap)?;
    result.set_item("flows", out.flows)?;
    result.set_item("connections", out.connections)?;
    result.set_item("links", out.links)?;
    result.set_item("nodes", out.nodes)?;
    Ok(result)
}

/// Parses and validates one scenario (JSON text) without running it: raises `ScenarioError`
/// exactly where [`run_scenario`] would for the document itself. A sweep checks every point
/// with it before the first run.
#[pyfunction]
fn check_scenario(py: Python<'_>, scenario_json: &str) -> PyResult<()> {
    let outcome = py.detach(|| {
        panic::catch_unwind(AssertUnwindSafe(|| {
            farlink_core::parse_scenario_json(scenario_json)
                .map(|_| ())
                .map_err(Failure::Scenario)
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", farlink_core::VERSION)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(check_scenario, m)?)?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("ConservationError", py.get_type::<ConservationError>())?;
    Ok(())
}
