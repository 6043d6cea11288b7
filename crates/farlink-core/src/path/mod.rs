//! The path runtime: one scenario's links and bundles at run time, driven by whoever owns the
//! clock. The discrete-event engine ([`crate::world`]) drives it with simulated time; the
//! emulator (crate `farlink-emu`) with the wall clock. Nothing here reads a clock, sleeps or
//! touches a socket: every entry point takes `now`.
//!
//! * [`LinkDir`]: one direction of a link (a plain [`crate::links::link::Link`], a bundle's data
//!   plane, a radio hop direction) behind one interface: `offer`, `poll`, `next_wakeup`,
//!   stats;
//! * [`build`]: every link direction and bundle driver of a validated scenario, each with its
//!   own random stream, so both engines draw alike for one seed;
//! * [`BundleDriver`]: a bundle's control plane (calls, drops, dials, the supervisor's
//!   commands), applied to both directions of the bundle at the instant it decides.

mod build;
mod bundle;
mod dir;

pub use build::{
    build, dir_index, direction_name, member_arq_link, member_dir_config, member_link_dir,
    member_loss, PathLinks,
};
pub use bundle::{
    draw_call_duration, draw_dial_ok, member_stream, BundleDriver, BundleEvent, BundleOutput,
    MemberChange, MemberDraw,
};
pub use dir::{LinkDir, RadioDir};
