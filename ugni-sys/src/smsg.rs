//! Short messaging (CONTRACT STUB: the uGNI data-movement helper replaces this).

/// Per-endpoint SMSG state after GNI_SmsgInit.
pub struct SmsgState {}
