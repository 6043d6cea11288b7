//! The frame check sequences of RFC 1662: FCS-16 (appendix C.2) and FCS-32 (appendix C.3).
//!
//! Both are the reflected CRCs of the HDLC standard, computed least significant bit first,
//! started at all ones and complemented before transmission; the complement goes on the wire
//! least significant octet first. Running the CRC over a received frame *including* its FCS
//! leaves a fixed residue ("good FCS"), which is how the decoder checks a frame without knowing
//! where the information field ends. The tables are computed at compile time.

/// Initial value of FCS-16.
pub const FCS16_INIT: u16 = 0xffff;
/// The FCS-16 value over a frame and its (correct) transmitted FCS.
pub const FCS16_GOOD: u16 = 0xf0b8;
/// Initial value of FCS-32.
pub const FCS32_INIT: u32 = 0xffff_ffff;
/// The FCS-32 value over a frame and its (correct) transmitted FCS.
pub const FCS32_GOOD: u32 = 0xdebb_20e3;

const FCS16_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut b = 0;
    while b < 256 {
        let mut v = b as u16;
        let mut i = 0;
        while i < 8 {
            v = if v & 1 != 0 {
                (v >> 1) ^ 0x8408
            } else {
                v >> 1
            };
            i += 1;
        }
        t[b] = v;
        b += 1;
    }
    t
};

const FCS32_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let mut v = b as u32;
        let mut i = 0;
        while i < 8 {
            v = if v & 1 != 0 {
                (v >> 1) ^ 0xedb8_8320
            } else {
                v >> 1
            };
            i += 1;
        }
        t[b] = v;
        b += 1;
    }
    t
};

/// FCS-16 of `data` continued from `fcs` (start with [`FCS16_INIT`]).
pub fn fcs16_update(mut fcs: u16, data: &[u8]) -> u16 {
    for &b in data {
        fcs = (fcs >> 8) ^ FCS16_TABLE[usize::from((fcs as u8) ^ b)];
    }
    fcs
}

/// FCS-32 of `data` continued from `fcs` (start with [`FCS32_INIT`]).
pub fn fcs32_update(mut fcs: u32, data: &[u8]) -> u32 {
    for &b in data {
        fcs = (fcs >> 8) ^ FCS32_TABLE[usize::from((fcs as u8) ^ b)];
    }
    fcs
}

/// The two FCS octets to transmit after `data`, in wire order.
pub fn fcs16_trailer(data: &[u8]) -> [u8; 2] {
    (!fcs16_update(FCS16_INIT, data)).to_le_bytes()
}

/// The four FCS octets to transmit after `data`, in wire order.
pub fn fcs32_trailer(data: &[u8]) -> [u8; 4] {
    (!fcs32_update(FCS32_INIT, data)).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values_of_the_catalogued_crcs() {
        // CRC-16/IBM-SDLC (X.25) and CRC-32 (ISO-HDLC) of "123456789".
        assert_eq!(!fcs16_update(FCS16_INIT, b"123456789"), 0x906e);
        assert_eq!(!fcs32_update(FCS32_INIT, b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn a_frame_with_its_fcs_leaves_the_good_residue() {
        let mut f = b"\xff\x03\xc0\x21hello".to_vec();
        f.extend_from_slice(&fcs16_trailer(&f.clone()));
        assert_eq!(fcs16_update(FCS16_INIT, &f), FCS16_GOOD);
        let mut g = b"\xff\x03\x00\x21world".to_vec();
        g.extend_from_slice(&fcs32_trailer(&g.clone()));
        assert_eq!(fcs32_update(FCS32_INIT, &g), FCS32_GOOD);
    }
}
