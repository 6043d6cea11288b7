//! The bytes of packets inside the emulated links, kept aside while the link model carries only
//! their slot index: one buffer of fixed-size slots and a free list, grown only when more
//! packets are inside the links than ever before, so steady state allocates nothing.

/// Where a packet is going, kept beside its bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Meta {
    pub(crate) len: u32,
    /// Index of its route, and of the hop it is on along the route.
    pub(crate) route: u16,
    pub(crate) hop: u16,
    /// Index of the flow it belongs to, if any.
    pub(crate) flow: Option<u16>,
    /// A data segment toward the flow's receiver (counted when it reaches the receiver).
    pub(crate) data: bool,
}

#[derive(Debug)]
pub(crate) struct Slab {
    slot_bytes: usize,
    bytes: Vec<u8>,
    meta: Vec<Meta>,
    free: Vec<u32>,
    pub(crate) live: u64,
    pub(crate) grown: u64,
}

impl Slab {
    pub(crate) fn new(slot_bytes: usize, slots: usize) -> Slab {
        let mut s = Slab {
            slot_bytes,
            bytes: Vec::new(),
            meta: Vec::new(),
            free: Vec::new(),
            live: 0,
            grown: 0,
        };
        s.grow(slots.max(1));
        s.grown = 0;
        s
    }

    fn grow(&mut self, more: usize) {
        let old = self.meta.len();
        self.bytes.resize((old + more) * self.slot_bytes, 0);
        self.meta.resize(old + more, Meta::default());
        self.free.reserve(old + more);
        self.free.extend((old..old + more).rev().map(|i| i as u32));
        self.grown += 1;
    }

    /// A free slot, its buffer to fill.
    pub(crate) fn take(&mut self) -> (u32, &mut [u8]) {
        if self.free.is_empty() {
            let more = self.meta.len();
            self.grow(more);
        }
        let i = self.free.pop().unwrap_or_default();
        let s = self.slot_bytes;
        (i, &mut self.bytes[i as usize * s..(i as usize + 1) * s])
    }

    /// Marks slot `i`, taken and filled, as holding a packet.
    pub(crate) fn hold(&mut self, i: u32, meta: Meta) {
        self.meta[i as usize] = meta;
        self.live += 1;
    }

    /// Gives back a slot taken but not held.
    pub(crate) fn untake(&mut self, i: u32) {
        self.free.push(i);
    }

    pub(crate) fn meta_mut(&mut self, i: u32) -> &mut Meta {
        &mut self.meta[i as usize]
    }

    /// The whole buffer of slot `i` (a slot taken but not yet held has no length yet).
    pub(crate) fn slot(&self, i: u32) -> &[u8] {
        let start = i as usize * self.slot_bytes;
        &self.bytes[start..start + self.slot_bytes]
    }

    /// The packet in slot `i`.
    pub(crate) fn packet(&self, i: u32) -> &[u8] {
        let m = &self.meta[i as usize];
        let start = i as usize * self.slot_bytes;
        &self.bytes[start..start + m.len as usize]
    }

    /// The packet in slot `i`, to change in place (a queue's CE mark).
    pub(crate) fn packet_mut(&mut self, i: u32) -> &mut [u8] {
        let m = &self.meta[i as usize];
        let start = i as usize * self.slot_bytes;
        &mut self.bytes[start..start + m.len as usize]
    }

    pub(crate) fn release(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_the_slab_grows_only_past_its_peak() {
        let mut s = Slab::new(16, 2);
        let (a, buf) = s.take();
        buf[..3].copy_from_slice(b"abc");
        s.hold(
            a,
            Meta {
                len: 3,
                ..Meta::default()
            },
        );
        let (b, _) = s.take();
        s.hold(b, Meta::default());
        assert_eq!(s.packet(a), b"abc");
        s.release(a);
        let (c, _) = s.take();
        assert_eq!(c, a, "a freed slot is reused");
        assert_eq!(s.grown, 0);
        let (d, _) = s.take();
        assert_eq!(s.grown, 1, "a third packet inside grows it");
        assert!(d != b && d != c);
    }
}
