//! SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit pseudo-random function,
//! short inputs in tens of nanoseconds.  The network engine authenticates its message
//! headers with it ([`crate::net`]); the reference test vectors are checked below.

/// A SipHash key (the 128-bit key as two little-endian words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key(pub [u64; 2]);

impl Key {
    pub fn from_bytes(k: &[u8; 16]) -> Key {
        let w = |i: usize| u64::from_le_bytes(k[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        Key([w(0), w(1)])
    }

    /// A key for one purpose, derived from this one: the PRF of the label, twice.
    pub fn derive(&self, label: &[u8]) -> Key {
        let mut m = label.to_vec();
        m.push(0);
        let a = hash(self, &m);
        *m.last_mut().expect("pushed") = 1;
        Key([a, hash(self, &m)])
    }
}

struct State([u64; 4]);

impl State {
    fn new(k: &Key) -> State {
        State([k.0[0] ^ 0x736f6d6570736575, k.0[1] ^ 0x646f72616e646f6d, k.0[0] ^ 0x6c7967656e657261, k.0[1] ^ 0x7465646279746573])
    }

    #[inline(always)]
    fn round(&mut self) {
        let v = &mut self.0;
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }

    #[inline(always)]
    fn word(&mut self, m: u64) {
        self.0[3] ^= m;
        self.round();
        self.round();
        self.0[0] ^= m;
    }

    fn finish(mut self) -> u64 {
        self.0[2] ^= 0xff;
        for _ in 0..4 {
            self.round();
        }
        self.0[0] ^ self.0[1] ^ self.0[2] ^ self.0[3]
    }
}

/// SipHash-2-4 of `m` under `k`.
pub fn hash(k: &Key, m: &[u8]) -> u64 {
    let mut s = State::new(k);
    let mut chunks = m.chunks_exact(8);
    for c in &mut chunks {
        s.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let mut last = (m.len() as u64 & 0xff) << 56;
    for (i, &b) in chunks.remainder().iter().enumerate() {
        last |= (b as u64) << (8 * i);
    }
    s.word(last);
    s.finish()
}

/// SipHash-2-4 of the little-endian bytes of `words` (the same value as [`hash`] of
/// them, without the byte handling).
#[inline]
pub fn hash_words(k: &Key, words: &[u64]) -> u64 {
    let mut s = State::new(k);
    for &w in words {
        s.word(w);
    }
    s.word(((words.len() * 8) as u64 & 0xff) << 56);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ref_key() -> Key {
        let k: [u8; 16] = std::array::from_fn(|i| i as u8);
        Key::from_bytes(&k)
    }

    #[test]
    fn reference_vectors() {
        // From the reference implementation's vectors.h (key 00..0f, message 00..len-1).
        let m: Vec<u8> = (0..64u8).collect();
        let k = ref_key();
        assert_eq!(hash(&k, &m[..0]), 0x726fdb47dd0e0e31);
        assert_eq!(hash(&k, &m[..1]), 0x74f839c593dc67fd);
        assert_eq!(hash(&k, &m[..8]), 0x93f5f5799a932462);
        assert_eq!(hash(&k, &m[..15]), 0xa129ca6149be45e5);
        assert_eq!(hash(&k, &m[..63]), 0x958a324ceb064572);
    }

    #[test]
    fn words_agree_with_bytes() {
        let k = ref_key();
        let words: Vec<u64> = (0..13u64).map(|i| i.wrapping_mul(0x9e3779b97f4a7c15)).collect();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(hash_words(&k, &words), hash(&k, &bytes));
        assert_ne!(k.derive(b"a"), k.derive(b"b"));
    }
}
