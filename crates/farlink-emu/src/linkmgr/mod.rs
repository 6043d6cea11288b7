//! The link manager (seed 000 chapter 7, KUMICS).
//!
//! * [`dataplane`]: the members' serial ports bonded into one multilink PPP bundle on a TUN;
//! * [`testbed`]: two namespaces joined by paced member links, to measure the data plane.

pub mod dataplane;
pub mod testbed;
