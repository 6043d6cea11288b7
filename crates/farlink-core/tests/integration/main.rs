//! farlink-core's integration tests, one module per subject, built as one test binary. Each
//! file directly in `tests/` would be a crate of its own, linking the library and
//! instantiating its generics again: one binary builds several times faster.
//! `cargo test -p farlink-core --test integration MODULE::` runs one module's tests.

mod support;

mod aqm;
mod captures;
mod cc_props;
mod dualpi2;
mod engine;
mod engine_bbr;
mod engine_cc;
mod engine_rlp;
mod engine_stpd;
mod far_links;
mod far_queue_trace;
mod gso_props;
mod handshake;
mod limits;
mod mptcp;
mod mptcp_linux;
mod queue_trace;
mod quick_ack;
mod receiver_props;
mod relay;
mod scenario_parse;
mod scenario_resolved;
mod tcp_pair;
mod token_bucket;
mod traffic;
mod units_vectors;
mod wire_client;
mod wire_props;
