//! The bytes a bulk transfer on a real network carries, and their digest: a deterministic
//! stream, so the receiving end can check that every byte arrived once, in order, unchanged.
//!
//! Byte `i` of the stream of seed `s` is byte `i mod 8` (little-endian) of
//! `splitmix64(s + (i / 8 + 1) · γ)` (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014; γ = 0x9e3779b97f4a7c15): any byte can be produced without
//! producing those before it, which a retransmission needs. The digest is 64-bit FNV-1a over
//! the bytes in order: not a cryptographic hash, a check that a lost, duplicated, reordered or
//! altered byte changes the value (what a digest of a file is for here).

/// splitmix64's increment, the golden ratio in 64 bits.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The deterministic byte stream of one seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadStream {
    seed: u64,
}

impl PayloadStream {
    pub fn new(seed: u64) -> Self {
        PayloadStream { seed }
    }

    fn word(&self, index: u64) -> [u8; 8] {
        splitmix64(
            self.seed
                .wrapping_add(index.wrapping_add(1).wrapping_mul(GAMMA)),
        )
        .to_le_bytes()
    }

    /// Fills `buf` with the stream's bytes from offset `offset` on.
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let mut at = offset;
        let mut out = 0;
        while out < buf.len() {
            let word = self.word(at / 8);
            let from = (at % 8) as usize;
            let n = (8 - from).min(buf.len() - out);
            buf[out..out + n].copy_from_slice(&word[from..from + n]);
            out += n;
            at += n as u64;
        }
    }

    /// The digest of the stream's first `len` bytes.
    pub fn digest_of_prefix(&self, len: u64) -> u64 {
        let mut d = Digest::new();
        let mut buf = [0u8; 8192];
        let mut at = 0;
        while at < len {
            let n = (len - at).min(buf.len() as u64) as usize;
            self.fill(at, &mut buf[..n]);
            d.update(&buf[..n]);
            at += n as u64;
        }
        d.value()
    }
}

/// 64-bit FNV-1a, fed in pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    h: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Self::new()
    }
}

impl Digest {
    pub fn new() -> Self {
        Digest {
            h: 0xcbf2_9ce4_8422_2325,
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.h ^= u64::from(b);
            self.h = self.h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    pub fn value(&self) -> u64 {
        self.h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_piece_is_the_same_bytes_as_the_whole() {
        let s = PayloadStream::new(42);
        let mut whole = vec![0u8; 1000];
        s.fill(0, &mut whole);
        for (from, len) in [(0, 1), (3, 17), (7, 9), (8, 8), (999, 1), (123, 456)] {
            let mut piece = vec![0u8; len];
            s.fill(from as u64, &mut piece);
            assert_eq!(piece, whole[from..from + len]);
        }
        let mut other = vec![0u8; 1000];
        PayloadStream::new(43).fill(0, &mut other);
        assert_ne!(whole, other);
    }

    #[test]
    fn the_digest_catches_a_changed_or_missing_byte() {
        let s = PayloadStream::new(7);
        let mut bytes = vec![0u8; 20_000];
        s.fill(0, &mut bytes);
        let mut d = Digest::new();
        d.update(&bytes[..5000]);
        d.update(&bytes[5000..]);
        assert_eq!(d.value(), s.digest_of_prefix(20_000));
        bytes[12_345] ^= 1;
        let mut bad = Digest::new();
        bad.update(&bytes);
        assert_ne!(bad.value(), s.digest_of_prefix(20_000));
        assert_ne!(s.digest_of_prefix(19_999), s.digest_of_prefix(20_000));
    }
}
