//! The callback thread: one library thread per process, started when the first callback
//! is registered (SCI_FLAG_USE_CALLBACK on a segment, a connection or an interrupt; DMA
//! callbacks run on the DMA thread, see crate::dma).  It sleeps on the process's doorbell
//! ring, which every event producer rings when the object it delivered to has a callback
//! armed, and then offers every armed object the chance to deliver what it has.  Objects
//! that must watch their peers (segments with connections, connected segments) make it
//! wake every [`SWEEP_EVERY`] as well.  Callbacks therefore run one at a time, never
//! with a library lock held: a callback may call the library, remove its own object, or
//! arm others.  A callback that returns SCI_CALLBACK_CANCEL is not called again.

use crate::pool;
use crate::status::*;
use crate::types::*;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often a waiter (or the callback thread) looks for connections whose process died.
pub const SWEEP_EVERY: Duration = Duration::from_millis(200);

/// An object with a callback armed.
pub trait Armed: Send + Sync {
    /// Delivers what is pending; `sweep`: also look for peers that died.  False when the
    /// object is finished (removed, or its callback cancelled).
    fn dispatch(&self, sweep: bool) -> bool;
    /// Does the object need periodic sweeps?
    fn watch(&self) -> bool {
        false
    }
}

static ARMED: Mutex<Vec<Arc<dyn Armed>>> = Mutex::new(Vec::new());

/// Registers `obj` with the callback thread (started on first use; SCI_ERR_SYSTEM when
/// the system refuses a thread).
pub fn arm(obj: Arc<dyn Armed>) -> R<()> {
    start()?;
    ARMED.lock().unwrap_or_else(|e| e.into_inner()).push(obj);
    kick();
    Ok(())
}

/// Wakes the callback thread (from this process).
pub fn kick() {
    if let Ok(pb) = pool::process_block() {
        pb.0.push_or_overrun(&1);
    }
}

fn start() -> R<()> {
    static STARTED: OnceLock<bool> = OnceLock::new();
    let ok = *STARTED.get_or_init(|| {
        if pool::process_block().is_err() {
            return false;
        }
        std::thread::Builder::new().name("sisci-callbacks".into()).spawn(run).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(SCI_ERR_SYSTEM)
    }
}

fn run() {
    let Ok(pb) = pool::process_block() else { return };
    let ring = &pb.0;
    let mut last_sweep = Instant::now();
    loop {
        let objs: Vec<Arc<dyn Armed>> = ARMED.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let watching = objs.iter().any(|o| o.watch());
        let timeout = if watching { Some(SWEEP_EVERY) } else { None };
        let _ = ring.wait_nonempty(timeout);
        while ring.pop().is_some() {}
        let sweep = last_sweep.elapsed() >= SWEEP_EVERY;
        if sweep {
            last_sweep = Instant::now();
        }
        let objs: Vec<Arc<dyn Armed>> = ARMED.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut finished = Vec::new();
        for o in &objs {
            if !o.dispatch(sweep) {
                finished.push(o.clone());
            }
        }
        if !finished.is_empty() {
            ARMED.lock().unwrap_or_else(|e| e.into_inner()).retain(|o| !finished.iter().any(|f| Arc::ptr_eq(f, o)));
        }
    }
}

/// Silences "unused" for the status import in builds without callbacks.
#[allow(dead_code)]
const _E: SciErr = SCI_ERR_OK;
