//! Multipath TCP (RFC 8684) as sans-I/O components over farlink's TCP subflows.
//!
//! Read first: RFC 8684 section 3.3 (the data sequence number, DSS mappings, DATA_ACK, the
//! connection-level receive window), section 3.3.6 (reinjection after a subflow fails); RFC
//! 6356 (LIA, the coupled increase); Khalili et al., "MPTCP is not Pareto-optimal"
//! (IEEE/ACM ToN 2013, OLIA); Peng et al., "Multipath TCP: analysis, design and
//! implementation" (IEEE/ACM ToN 2016, BALIA); Linux's `net/mptcp/protocol.c`
//! (`mptcp_subflow_get_send`: the subflow whose queued bytes drain soonest at its pacing
//! rate; `mptcp_retransmit_timer` and `__mptcp_retrans`: the connection-level timer).
//!
//! Each file has one job and no clock, randomness or I/O:
//! - `mapping.rs`: the connection-level sequence space: what the sender maps onto each
//!   subflow's sequence space ([`SubflowMap`]), the sending side of the connection
//!   ([`DataSender`]: data sequence numbers, DATA_ACK, the connection-level window) and the
//!   receiving side ([`DataReceiver`]: reassembly in data-sequence order, DATA_ACK).
//! - `reinject.rs`: data to send again on other subflows ([`ReinjectQueue`]) once a subflow
//!   fails.
//! - `scheduler.rs`: which subflow carries the next chunk ([`Scheduler`]: `linux`, `minrtt`,
//!   `roundrobin`, `redundant`).
//! - `linux.rs`: what Linux's Multipath TCP adds (`net/mptcp/protocol.c`): its default
//!   scheduler, which queues data on a subflow beyond its window ([`linux::LingerScheduler`]),
//!   and its connection-level retransmission timer ([`linux::RetransmitTimer`]).
//! - `coupled.rs`: coupled congestion control ([`Coupling`]: `lia`, `olia`, `balia`, `none`),
//!   a controller per subflow behind `tcp::cc`'s trait sharing one [`CouplingGroup`].
//!
//! The engine (`world/mptcp.rs`) runs one TCP connection per subflow and moves bytes between
//! these components and the subflows' senders and receivers.

pub mod coupled;
pub mod linux;
pub mod mapping;
pub mod reinject;
pub mod scheduler;

pub use coupled::{Coupled, Coupling, CouplingGroup, SubflowWindow};
pub use mapping::{DataReceiver, DataSender, Mapping, SubflowMap};
pub use reinject::ReinjectQueue;
pub use scheduler::{Pick, Scheduler, SchedulerKind, SubflowView};
