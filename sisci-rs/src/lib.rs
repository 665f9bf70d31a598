//! libsisci.so: Dolphin SISCI (the current DIS API) over the softnic fabric.
//!
//! The model (decisions in include/sisci_api.h's top comment):
//! - [`node`]: node ids, the node-wide namespaces in the node registry, and how another
//!   node's objects are found and reached.
//! - [`pool`]: control blocks, the shared memory through which others act on our objects;
//!   [`service`]: everything done at the target of a remote operation, one handler that
//!   runs at the initiator on one machine and in the owner's progress thread across
//!   machines.
//! - [`desc`]: SCIInitialize/SCIOpen and the per-device resource limits.
//! - [`segment`] (local segments), [`remote`] (connections), [`map`] (maps, sequences,
//!   PIO copies), [`shadow`] (maps of memory on another machine), [`broadcast`]
//!   (reflective memory), [`dma`], [`intr`] (interrupts and data interrupts).
//! - [`events`]: the callback thread.  [`query`]: SCIQuery and friends.
//! - [`status`]: errors and the three exported names of each function; [`consts`]: the
//!   flags as data objects; [`unsupported`]: what is not implemented, and why.

pub mod types;
pub mod status;
pub mod handles;
pub mod node;
pub mod pool;
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

/// Registers the SISCI service with the fabric (idempotent): from then on this process
/// serves other machines' operations on its objects (and, on this machine, initiators
/// run the same handler themselves).
pub fn service_init() {
    let _ = softnic_fabric::rma::register_service(softnic_fabric::registry::api::SISCI, service::serve);
    // Joins the node fabric now (and, in a job spread over machines, starts the network
    // engine, which publishes this process's address): peers of other machines find it
    // from the program's first collective on (PMI_Barrier, MPI_Init, ...) on.
    let _ = softnic_fabric::node::get();
}

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
