//! `farlink._core`: thin PyO3 bindings over `farlink-core`. No simulation logic lives here:
//! arguments are converted at the boundary, the core runs, results are handed back.

use pyo3::prelude::*;

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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", farlink_core::VERSION)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    Ok(())
}
