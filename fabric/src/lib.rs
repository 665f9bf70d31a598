//! softnic fabric: everything the API libraries share.
//!
//! The modules, top to bottom: each uses only modules below it (checked by
//! `c-tests/tools/module-tree.py`).  Where a lower one must reach up (the ring before it
//! sleeps, a registration that ends, a fork, a peer's request arriving over the network),
//! it declares a hook ([`hook`]) that the upper one sets when the library is loaded.
//! - [`coll`]: collectives over one-sided operations, with [`reduce`] (the combine).
//! - [`rma`]: the one-sided engine (put, get, atomics, remote events) on peer memory; it
//!   executes the requests the network engine carries for this process.
//! - [`net`] (over [`ofi`], libfabric loaded at run time): the network engine, the second
//!   engine behind [`rma::Peer`] for processes on other nodes.
//! - [`mem`]: memory registration (page rebinding, handles, generations, PD keys), with
//!   [`stop`] (parking the other threads while pages are copied).
//! - [`node`]: this process's attachment to the node fabric (its control segment).
//! - [`bootstrap`] over [`pmi`] (PMI-1 client; [`pmi_relay`]: the application's MPI shares
//!   our launcher connection): who am I, where are my peers.
//! - [`registry`]: the node registry where processes and endpoints are found by key.
//! - [`ring`]: bounded lock-free rings in shared memory (completion queues, mailboxes).
//! - [`shm`]: per-user directory, memfd-backed shared segments, peer mapping; [`process`]:
//!   liveness of pids.
//! - [`wait`]: futex waiting on shared words (spin briefly, then sleep); [`cancel`]: blocking
//!   calls as cancellation points (`pthread_cancel`).
//! - [`atomic`]: the remote atomic operation set.
//! - [`check`] (`SOFTNIC_CHECK`): used only by the API crates; its table of accesses in
//!   flight lives in a file of the per-user directory ([`shm`]), named by the job
//!   ([`bootstrap`]).  [`lent`], over it: copies lent to the program (a received
//!   message) whose use after their release faults into a finding.
//! - Leaves: [`error`], [`env`] (tunables), [`log`] (`SOFTNIC_LOG`), [`sync`], [`spin`],
//!   [`hook`], [`siphash`], [`faults`] (`SOFTNIC_FAULTS`), [`trace`] (`SOFTNIC_TRACE`).

pub mod error;
pub mod hook;
pub mod faults;
pub mod trace;
pub mod check;
pub mod lent;
pub mod sync;
pub mod spin;
pub mod copy;
pub mod env;
pub mod log;
pub mod process;
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
pub mod sock;
pub mod reduce;
pub mod coll;
pub mod siphash;
pub mod net;
pub mod pmi;
pub mod pmi_relay;
pub mod bootstrap;
pub mod node;

pub use error::{Error, Result};

/// Are the three observers of operations (SOFTNIC_TRACE, SOFTNIC_FAULTS, SOFTNIC_CHECK)
/// decided and off?  Three loads and no call: a quick path that asks this keeps its
/// values in registers (a call on it, even one never taken, costs the function its
/// register saves).  False before they are decided: the general path then runs, and must
/// decide them ([`decide_observers`]) or the quick path never would.
#[inline(always)]
pub fn observers_surely_off() -> bool {
    trace::surely_off() && faults::surely_none() && check::surely_off()
}

/// Decides the three observers (reads their settings the first time), so that
/// [`observers_surely_off`] answers from then on.
#[cold]
pub fn decide_observers() {
    let _ = (trace::enabled(), faults::any(), check::enabled());
}

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
