//! Why the link manager did not run or stopped: the one error its entry points return.

/// Why the link manager did not run or stopped.
#[derive(Debug, thiserror::Error)]
pub enum LinkMgrError {
    /// The configuration (or an option) is wrong; the message places it.
    #[error("{0}")]
    Config(String),
    /// Something the daemon needs failed (the log, a system call).
    #[error("{0}")]
    System(String),
}
