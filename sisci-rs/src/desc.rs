//! The library and its virtual devices (SCIInitialize/SCITerminate, SCIOpen/SCIClose).
//!
//! A virtual device holds up to [`PER_KIND`] resources of each kind (local segments,
//! remote segments, sequences, DMA queues, interrupts, data interrupts, ... counted
//! separately); the next one is SCI_ERR_NOSPC.  SCIClose refuses (SCI_ERR_BUSY) while
//! any resource created through the device exists: there is no automatic cleanup.

use crate::handles::Table;
use crate::sisci_export;
use crate::status::*;
use crate::types::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Resources of one kind a virtual device can hold.
pub const PER_KIND: u32 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    LocalSegment = 0,
    RemoteSegment,
    Sequence,
    DmaQueue,
    LocalInterrupt,
    RemoteInterrupt,
    LocalDataInterrupt,
    RemoteDataInterrupt,
    DmaChannel,
    Requester,
}
const NKINDS: usize = 10;

pub struct Desc {
    pub handle: usize,
    counts: Mutex<([u32; NKINDS], bool)>,
}

pub static DESCS: Table<Desc> = Table::new(1);

static INIT: AtomicU32 = AtomicU32::new(0);

impl Desc {
    /// Takes one resource of `kind` (SCI_ERR_NOSPC at the limit, SCI_ERR_ILLEGAL_PARAMETER
    /// once the device is closed).
    pub fn acquire(&self, kind: Kind) -> R<()> {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if c.1 {
            return Err(SCI_ERR_ILLEGAL_PARAMETER);
        }
        if c.0[kind as usize] >= PER_KIND {
            return Err(SCI_ERR_NOSPC);
        }
        c.0[kind as usize] += 1;
        Ok(())
    }
    pub fn release(&self, kind: Kind) {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.0[kind as usize] = c.0[kind as usize].saturating_sub(1);
    }
    pub fn count(&self, kind: Kind) -> u32 {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).0[kind as usize]
    }
}

/// What a resource of each kind is called in a report.
const KIND_NAMES: [&str; NKINDS] =
    ["local segment", "remote segment", "sequence", "DMA queue", "local interrupt", "remote interrupt", "local data interrupt", "remote data interrupt", "DMA channel", "requester"];

/// SOFTNIC_CHECK at exit: virtual devices never closed, with what they still hold (the
/// library cleans up nothing by itself: SCIClose refuses while a device holds anything).
fn check_at_exit() {
    for d in DESCS.all() {
        let c = d.counts.lock().unwrap_or_else(|e| e.into_inner()).0;
        let held: Vec<String> = c.iter().zip(KIND_NAMES).filter(|(n, _)| **n > 0).map(|(n, k)| format!("{n} {k}(s)")).collect();
        let held = if held.is_empty() { String::new() } else { format!(", holding {}", held.join(", ")) };
        softnic_fabric::check::report("SCIClose", &format!("virtual device {:#x} was never closed{held}", d.handle), "exit");
    }
}

/// The virtual device of handle `sd`.
pub fn desc(sd: usize) -> R<Arc<Desc>> {
    DESCS.get(sd).ok_or(SCI_ERR_ILLEGAL_PARAMETER)
}

/// SCI_ERR_NOT_INITIALIZED before SCIInitialize.
pub fn initialized() -> R<()> {
    if INIT.load(Ordering::Acquire) == 0 {
        return Err(SCI_ERR_NOT_INITIALIZED);
    }
    Ok(())
}

sisci_export! {
    /// Starts the library (counted: every call needs a SCITerminate).  No flags.
    fn SCIInitialize(flags: u32, error: *mut SciErr) {
        let r = check_flags(flags, 0).map(|_| {
            crate::service::register();
            INIT.fetch_add(1, Ordering::AcqRel);
        });
        done("SCIInitialize", error, r)
    }
}

sisci_export! {
    /// Ends one SCIInitialize.  Resources still open stay usable (no automatic cleanup).
    fn SCITerminate() {
        let _ = INIT.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| v.checked_sub(1));
    }
}

sisci_export! {
    /// Opens a virtual device.  Flags: SCI_FLAG_THREAD_SAFE (1.10; every device is).
    fn SCIOpen(sd: *mut usize, flags: u32, error: *mut SciErr) {
        let r = (|| {
            initialized()?;
            check_flags(flags, SCI_FLAG_THREAD_SAFE)?;
            if sd.is_null() {
                return Err(SCI_ERR_ILLEGAL_PARAMETER);
            }
            let (h, _) = DESCS.insert_with(|h| Arc::new(Desc { handle: h, counts: Mutex::new(([0; NKINDS], false)) })).ok_or(SCI_ERR_NOSPC)?;
            softnic_fabric::check::at_exit(check_at_exit);
            out(sd, h)
        })();
        done("SCIOpen", error, r)
    }
}

sisci_export! {
    /// Closes a virtual device; SCI_ERR_BUSY while it still has resources.
    fn SCIClose(sd: usize, flags: u32, error: *mut SciErr) {
        let r = (|| {
            check_flags(flags, 0)?;
            let d = desc(sd)?;
            let mut busy = false;
            let gone = DESCS.remove_if(sd, |d| {
                let mut c = d.counts.lock().unwrap_or_else(|e| e.into_inner());
                busy = c.0.iter().any(|&n| n > 0);
                if !busy {
                    c.1 = true;
                }
                !busy
            });
            drop(d);
            match gone {
                Some(_) => Ok(()),
                None if busy => Err(SCI_ERR_BUSY),
                None => Err(SCI_ERR_ILLEGAL_PARAMETER),
            }
        })();
        done("SCIClose", error, r)
    }
}
