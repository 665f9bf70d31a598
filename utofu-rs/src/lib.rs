//! libtofucom.so: Fujitsu uTofu 1.0 over the softnic fabric.
//!
//! The model (decisions in include/utofu.h's top comment), module by module from the top
//! (the C calls) down; each uses only modules below it:
//! - lib.rs: what runs when the library is loaded, and the uTofu service's dispatch
//!   (barrier packets to [`barrier`], operations to [`onesided`]).
//! - [`barrier`]: VBGs and barrier circuits (gates exchanging packets through the
//!   owners' shared memory, or as uTofu service requests across machines).
//! - [`onesided`]: operations (put, get, ARMW, NOP), their descriptors, TOQ/TCQ
//!   accounting and the polls.  An operation is executed by the initiator while its
//!   start call runs, through the fabric's one-sided engine.  Also the uTofu service's
//!   request kinds and the target side of operations from other machines.
//! - [`stadd`]: memory registration and the STADD encoding.
//! - [`vcq`]: VCQs.  Each owns a block of library shared memory holding its STADD table
//!   and its MRQ ring, published in the node registry under (coordinates, TNI, CQ,
//!   component), so an initiator finds the target of any VCQ id and then reads the
//!   target's STADD rows and pushes notices without the target's help.
//! - [`topo`]: nodes, coordinates, and the VCQ id / VBG id / path encodings (Fujitsu's
//!   layouts), all pure functions, so ids are decoded and constructed without
//!   communication.
//! - [`share`]: the TNIs, CQs and BGs this process may use (the job manager's masks, or
//!   the table of processes per node and local rank).
//! - [`status`]: return codes, the per-thread last error, the C-side helpers.
//! - [`types`]: the C types and constants of utofu.h.
//!
//! **The launcher.**  The application's MPI owns the launcher connection.  We use it
//! once, when the library is loaded (before `main`, so before `MPI_Init`): to learn the
//! job's nodes and, when they are several machines, to exchange network addresses
//! ([`softnic_fabric::net::start_before_application`]); then it is the application's.
//! Under snrun, or with no launcher at all, node identity comes from the environment
//! and everything else from the node fabric.
//!
//! **Across machines** a target VCQ or VBG that is not on this machine is reached
//! through the network engine: its owner runs the operation's target side itself (the
//! uTofu service, `service` below) with the same checks as on one machine.

pub mod types;
pub mod status;
pub mod topo;
pub mod share;
pub mod vcq;
pub mod stadd;
pub mod onesided;
pub mod barrier;

/// The uTofu service: what another machine asks of this process, by the request's first
/// word: a barrier packet, else an operation (which refuses any other kind).
fn service(me: &std::sync::Arc<softnic_fabric::rma::Peer>, req: &[u8], reply: &mut Vec<u8>) -> softnic_fabric::Result<()> {
    match req.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))) {
        Some(onesided::SVC_PACKET) => barrier::serve_packet(req, reply),
        _ => onesided::service(me, req, reply),
    }
}

/// Runs when the library is loaded (see the module doc).
extern "C" fn at_load() {
    let _ = softnic_fabric::rma::register_service(softnic_fabric::registry::api::UTOFU, service);
    softnic_fabric::net::start_before_application(|rank, nodes| tofutop::set_launcher_nodes(rank, nodes.to_vec()));
}

#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;
