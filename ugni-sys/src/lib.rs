//! libugni.so.0: Cray uGNI (API 0x5c, include/gni_pub.h) over the softnic
//! fabric.
//!
//! Layout of the crate:
//! - `types`: the C types, constants and struct layouts of gni_pub.h, with
//!   compile-time layout assertions.
//! - `strings`: the exported `gni_err_str[]` / `gni_statistic_str[]` tables.
//! - `cqe`: our bit layout of gni_cq_entry_t and the gni_cq_* accessors.
//! - `objects`: handles and the object model (CDM, NIC, CQ, EP) every group uses.
//! - `datagram`, `smsg`: datagram exchange and short messaging.
//! - `msgq`: message queues (MSGQ), the shared-receive-queue variant of SMSG.
//! - `stats`: NIC statistics and the bandwidth-injection configuration.
//! - `ce`: the collective engine (VCEs, `GNI_POST_CE`) over the fabric's reduction trees.
//!
//! Every function of gni_pub.h is implemented (no placeholders remain).
//!
//! # Safety (all exports)
//! Pointers must be NULL or valid for the access the prototype implies.

#![allow(clippy::missing_safety_doc)]

pub mod types;
pub mod strings;
pub mod cqe;
pub mod objects;
pub mod datagram;
pub mod smsg;
pub mod post;
pub mod cdm;
pub mod cq;
pub mod memreg;
pub mod ep;
pub mod errors;
pub mod msgq;
pub mod stats;
pub mod ce;
