//! Sans-I/O codecs of PPP for the link manager's data plane over real serial links: RFC 1662
//! framing ([`hdlc`], [`fcs`]) and RFC 1990 multilink headers, fragmentation and reassembly
//! ([`mp`]), the option negotiation automaton of RFC 1661 ([`fsm`]) and its two users, LCP with
//! the multilink options ([`lcp`]) and IPCP ([`ipcp`]), one end of a bundle
//! composed of them ([`bond`]), and the AT dialogue of a data modem
//! ([`at`]) and of a simulated one ([`dce`]). Nothing here reads a clock or a port: the caller hands in octets and `now`, and
//! writes out what comes back.

pub mod at;
pub mod bond;
pub mod dce;
pub mod fcs;
pub mod fsm;
pub mod hdlc;
pub mod ipcp;
pub mod lcp;
pub mod mp;
