//! The link models: a link direction (`link`: serialisation, queue, propagation, loss, a token
//! bucket), its queue's discipline (`queue`: drop-tail, CoDel, FQ-CoDel, PIE, RED), the ARQ link layers beneath it (`arq`: go-back-N and selective repeat over a
//! member; `rlp`: IS-707 RLP over a radio hop's frame slots) and the multilink PPP bundle over
//! dial-up members (`mlppp`, whose calls the modem supervisor of `crate::modem` keeps). The
//! engine wires them into paths (`crate::path`); both engines drive the same code.

pub mod arq;
pub mod link;
pub mod mlppp;
pub mod queue;
pub mod rlp;
