//! softnic fabric: everything the API libraries share.
//!
//! Layering (see ../shared/DESIGN.md):
//! - [`shm`]: per-user directory, memfd-backed shared segments, peer mapping.
//! - [`registry`]: the node registry where processes and endpoints are found by key.
//! - [`ring`]: bounded lock-free rings in shared memory (completion queues, mailboxes).
//! - [`wait`]: futex waiting on shared words (spin briefly, then sleep); [`cancel`]: blocking
//!   calls as cancellation points (`pthread_cancel`).
//! - [`mem`]: memory registration (page rebinding, handles, generations, PD keys).
//! - [`atomic`]: the remote atomic operation set.
//! - [`rma`]: the one-sided engine (put, get, atomics, remote events) on peer memory.
//! - [`net`] (over [`ofi`], libfabric loaded at run time): the network engine, the second
//!   engine behind [`rma::Peer`] for processes on other nodes.
//! - [`pmi`] and [`bootstrap`]: PMI-1 client and the job bootstrap built on it;
//!   [`pmi_relay`]: the application's MPI shares our launcher connection.
//! - [`env`], [`log`]: tunables registry and `SOFTNIC_LOG`.

pub mod error;
pub mod hook;
pub mod faults;
pub mod trace;
pub mod check;
pub mod sync;
pub mod spin;
pub mod env;
pub mod log;
pub mod shm;
pub mod registry;
pub mod ring;
pub mod wait;
pub mod cancel;
pub mod stop;
pub mod mem;
pub mod atomic;
pub mod rma;
pub mod ofi;
pub mod reduce;
pub mod coll;
pub mod siphash;
pub mod net;
pub mod pmi;
pub mod pmi_relay;
pub mod bootstrap;
pub mod node;

pub use error::{Error, Result};

/// Runs when the fabric is loaded, before the program's `main`: an MPI program shares
/// its launcher connection with us through the PMI relay (see [`pmi_relay`]).
extern "C" fn at_load() {
    pmi_relay::share_with_application();
    // SAFETY: a handler without arguments in this dylib, which is never unloaded.
    unsafe { libc::pthread_atfork(Some(bootstrap::learn_before_fork), None, None) };
}

#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;
