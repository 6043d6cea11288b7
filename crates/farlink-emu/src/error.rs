//! Why an emulation did not run, or stopped.

use farlink_core::ScenarioError;

#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The scenario is invalid, or asks for what the emulator cannot do.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// A bad option (an unknown congestion controller name, ...).
    #[error("{0}")]
    Usage(String),
    /// This host cannot emulate it: no CAP_NET_ADMIN, no /dev/net/tun, not Linux, or a
    /// congestion controller this kernel lacks.
    #[error("{0}")]
    Unsupported(String),
    /// A system call or a helper command failed while setting up or running.
    #[error("{0}")]
    System(String),
    /// A bug: an inconsistency the emulator should never see.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EmuError {
    pub fn sys(what: impl std::fmt::Display, err: impl std::fmt::Display) -> EmuError {
        EmuError::System(format!("{what}: {err}"))
    }
}
