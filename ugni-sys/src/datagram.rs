//! Datagrams (CONTRACT STUB: the uGNI core helper replaces this).

/// Per-instance datagram state (the board peers post into).
pub struct Board {}

/// Per-endpoint datagram state.
#[derive(Default)]
pub struct EpDgram {}
