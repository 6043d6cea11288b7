//! The kernel settings a run applied: per namespace (sysctls, routes) and per flow (which of
//! the scenario's TCP settings the kernel took, and how). Written by the planning and set-up
//! of a run, carried into its result.

use std::collections::BTreeMap;

use serde::Serialize;

/// Kernel settings the run applied, as written.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Kernel {
    /// Per-namespace sysctls.
    pub sysctls: BTreeMap<String, String>,
    /// Routes to the peer in each end node (`initcwnd`, `rto_min`, `quickack`).
    pub routes: Vec<String>,
    /// `TCP_CONGESTION` per flow.
    pub congestion: Vec<String>,
    /// Multipath TCP (`mptcp.rs`): the `ip mptcp` and member address commands run in each
    /// end node, and the endpoint changes made while the run went on (removed when a
    /// member's drop was noticed, added when it was back), with what failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mptcp: Vec<String>,
}

/// Which of a flow's TCP settings the kernel was given (and how), and which it could not take
/// (and why).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowSettings {
    pub applied: BTreeMap<String, String>,
    pub not_applied: BTreeMap<String, String>,
}

impl FlowSettings {
    /// Setting `key` was given to the kernel, as `how` says.
    pub(crate) fn apply(&mut self, key: &str, how: String) {
        self.applied.insert(key.to_owned(), how);
    }

    /// Setting `key` could not be given to the kernel, for the reason `why`.
    pub(crate) fn refuse(&mut self, key: &str, why: String) {
        self.not_applied.insert(key.to_owned(), why);
    }
}
