//! libsisci.so: Dolphin SISCI (the current DIS API) over the softnic fabric.
//!
//! The model: decisions in include/sisci_api.h's top comment.
//!
//! The modules, from the top (the C calls) down; each uses only modules below it:
//! - lib.rs: the module list and what runs when the library is loaded.
//! - [`consts`]: the flags as data objects; [`unsupported`]: what is not implemented,
//!   and why (both need only `status` and `types`).
//! - [`query`]: SCIQuery and friends, and the opaque addresses of segments and maps.
//! - [`intr`]: interrupts and data interrupts.
//! - [`dma`]: DMA queues, transfers and channels.
//! - [`map`]: maps, sequences, PIO copies.
//! - [`shadow`]: maps of memory this process cannot map (another machine's, broadcast).
//! - [`remote`]: remote segments (connections).
//! - [`segment`]: local segments.
//! - [`broadcast`]: reflective memory (a mirror per machine, the nodes' copies, the hub).
//! - [`desc`]: SCIInitialize/SCIOpen and the per-device resource limits.
//! - [`service`]: the SISCI service: its requests, and everything done at the target of
//!   a remote operation, one handler that runs at the initiator on one machine and in the
//!   owner's progress thread across machines; its registration; the liveness probe.
//! - [`twin`]: copies kept in step with another process's memory (ship, pull) and the
//!   background thread that does so.
//! - [`memory`]: the memory of a segment or mirror (library, program or mapped memory).
//! - [`mirror`]: the layout of a reflective-memory mirror (header, member table, copies).
//! - [`events`]: the callback thread, and how often peers are swept for dead ones.
//! - [`node`]: node ids, the node-wide namespaces in the node registry, and how another
//!   node's objects are found and reached.
//! - [`pool`]: control blocks, the shared memory through which others act on our objects.
//! - [`handles`]: typed, stale-proof handles; [`usermem`]: where peers map registered
//!   program memory.
//! - [`status`]: errors and the three exported names of each function.
//! - [`types`]: the C types and constants of the headers.

pub mod types;
pub mod status;
pub mod handles;
pub mod node;
pub mod pool;
pub mod mirror;
pub mod memory;
pub mod twin;
pub mod service;
pub mod events;
pub mod desc;
pub mod segment;
pub mod usermem;
pub mod broadcast;
pub mod remote;
pub mod shadow;
pub mod map;
pub mod dma;
pub mod intr;
pub mod query;
pub mod consts;
pub mod unsupported;

/// Runs when the library is loaded, before `main`.  In an MPI program (the fabric relays
/// the launcher connection between MPI and us) spread over several machines, the
/// network engine is started and every rank's address exchanged now, in a fence every
/// rank takes part in (every rank loads the library): MPI's own collectives never pass
/// through PMI, so a process that first joined at SCIInitialize would stay unknown to
/// the other machines.  Programs without MPI publish at SCIInitialize and are found
/// from their next PMI collective on; under snrun or without a launcher nothing happens.
extern "C" fn at_load() {
    use softnic_fabric::net;
    if net::mode() != net::Mode::Shm && softnic_fabric::pmi::launcher_present() && softnic_fabric::pmi_relay::relaying() {
        let _ = softnic_fabric::rma::register_service(softnic_fabric::registry::api::SISCI, service::serve);
        net::start_before_application(|_, _| {});
    }
}

#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;
