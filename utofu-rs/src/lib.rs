//! libtofucom.so: Fujitsu uTofu 1.0 over the softnic fabric.
//!
//! The model (decisions in include/utofu.h's top comment):
//! - [`topo`]: nodes, coordinates, and the VCQ id / VBG id / path encodings, all pure
//!   functions, so ids are decoded and constructed without communication.
//! - [`vcq`]: VCQs.  Each owns a block of library shared memory holding its STADD table
//!   and its MRQ ring, published in the node registry under (coordinates, TNI, CQ,
//!   component), so an initiator finds the target of any VCQ id and then reads the
//!   target's STADD rows and pushes notices without the target's help.
//! - [`stadd`]: memory registration and the STADD encoding.
//! - [`onesided`]: operations (put, get, ARMW, NOP), their descriptors, TOQ/TCQ
//!   accounting and the polls.  An operation is executed by the initiator while its
//!   start call runs, through the fabric's one-sided engine.
//! - [`barrier`]: VBGs and barrier circuits (gates exchanging packets through the
//!   owners' shared memory).
//! - [`status`]: return codes, the per-thread last error, the C-side helpers.
//!
//! No PMI is used (the application's MPI owns the launcher connection): node identity
//! comes from the launcher's environment and everything else from the node fabric.

pub mod types;
pub mod status;
pub mod topo;
pub mod vcq;
pub mod stadd;
pub mod onesided;
pub mod barrier;
