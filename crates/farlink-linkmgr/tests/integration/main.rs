//! farlink-linkmgr's integration tests, one module per subject, built as one test binary. Each
//! file directly in `tests/` would be a crate of its own, linking the library and
//! instantiating its generics again: one binary builds several times faster.
//! `cargo test -p farlink-linkmgr --test integration MODULE::` runs one module's tests.

mod bond_pair;
mod linkmgr_dataplane;
mod linkmgr_modem_arq;
mod mp_staleness;
mod ppp_props;
mod ppp_vectors;
