//! A route through the emulated path, as the plan makes it and the driver classifies by it.

/// Packets from one end node to another, through these link directions.
#[derive(Clone, Debug)]
pub(crate) struct Route {
    pub(crate) from_tun: usize,
    /// Only packets from this source address (a Multipath TCP member's path); `None`, any.
    pub(crate) from_addr: Option<[u8; 4]>,
    pub(crate) to_addr: [u8; 4],
    pub(crate) to_tun: usize,
    pub(crate) dirs: Vec<usize>,
}
