//! farlink-core: the sans-I/O components of farlink and the discrete-event engine that drives them.
//!
//! Nothing in this crate reads a clock, sleeps, touches a socket or uses a global random number
//! generator: components are handed the current time and their inputs and return their outputs
//! and the time they next want to be woken. The engine drives them with simulated time; the
//! emulator drives the same code with the wall clock.

pub mod apps;
pub mod error;
pub mod links;
pub mod loss;
pub mod modem;
pub mod mptcp;
pub mod path;
pub mod pcap;
pub mod rng;
pub mod scenario;
pub mod sched;
pub mod tcp;
pub mod time;
pub mod trace;
pub mod units;
pub mod world;

// The link models' public paths from before they had a folder of their own.
pub use links::{arq, link, mlppp, rlp};
pub use scenario::{parse_scenario_json, Scenario, ScenarioError};
pub use world::{run, run_with, RunControl, RunError, RunResult};

/// The version of the core, as recorded in every result for provenance.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
