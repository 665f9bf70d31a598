//! Job bootstrap (CONTRACT STUB: the PMI helper replaces this, keeping `gni_credentials`).

/// The (ptag, cookie) pair every rank of a job uses for uGNI/DMAPP, derived
/// from the job's KVS name so that snrun (which exports PMI_GNI_PTAG/COOKIE
/// before exec) and PMI_Init (which sets them when a launcher did not) agree.
/// ptag lies in 16..=239 (0..15 and the top are reserved on Cray systems);
/// cookie has the Cray shape 0xNNNN0000 and is never zero.
pub fn gni_credentials(kvsname: &str) -> (u8, u32) {
    // FNV-1a 64: stable across Rust versions, unlike DefaultHasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in kvsname.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let ptag = 16 + (h % 224) as u8;
    let cookie = (1 + ((h >> 32) % 0xfffe) as u32) << 16;
    (ptag, cookie)
}
