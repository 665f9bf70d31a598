//! libugni.so.0: Cray uGNI (API 0x5c, include/gni_pub.h) over the softnic
//! fabric.
//!
//! Layout of the crate, top to bottom: each module uses only modules below it (checked by
//! c-tests/tools/module-tree.py).
//! - `cdm`: communication domains, NIC attach, devices and the job calls.
//! - `cq`: completion-queue exports (create, poll, wait, GNI_GetCompleted).
//! - `ep`: endpoint exports (create, bind, event data, destroy).
//! - `postdata`: datagram exports (GNI_EpPostData*, GNI_PostDataProbe*).
//! - `smsg`: short messaging (SMSG) sends, receives and releases.
//! - `msgq`: message queues (MSGQ), the shared-receive-queue variant of SMSG.
//! - `post`: data movement (GNI_PostFma, GNI_PostRdma, GNI_PostCqWrite).
//! - `ce`: the collective engine (VCEs, `GNI_POST_CE`) over the fabric's reduction trees.
//! - `memreg`: memory registration exports, and local handles resolved for a post.
//! - `errors`: error event queues, fed by failed transactions.
//! - `stats`: NIC statistics and the bandwidth-injection configuration.
//! - `objects`: the object model (CDM, NIC, CQ, EP and their state) and its handle tables.
//! - `mailbox`: an endpoint's SMSG state (mailboxes, credits, the pinned channel).
//! - `datagram`: the per-instance datagram board, and the registry entry peers find it by.
//! - `memhandle`: what a memory handle names (kind bits, segment tables, remote resolution).
//! - `handles`: the handle tables (`Table`), `GniResult` and `lock`.
//! - `cqe`: our bit layout of gni_cq_entry_t and the gni_cq_* accessors.
//! - `strings`: the exported `gni_err_str[]` / `gni_statistic_str[]` tables.
//! - `types`: the C types, constants and struct layouts of gni_pub.h, with
//!   compile-time layout assertions.
//!
//! Every function of gni_pub.h is implemented (no placeholders remain).
//!
//! # Safety (all exports)
//! Pointers must be NULL or valid for the access the prototype implies.

#![allow(clippy::missing_safety_doc)]

pub mod cdm;
pub mod cq;
pub mod ep;
pub mod postdata;
pub mod smsg;
pub mod msgq;
pub mod post;
pub mod ce;
pub mod memreg;
pub mod errors;
pub mod stats;
pub mod objects;
pub mod mailbox;
pub mod datagram;
pub mod memhandle;
pub mod handles;
pub mod cqe;
pub mod strings;
pub mod types;
