//! Calls up the layers without knowing who answers: a lower module (ring, mem, node)
//! declares a [`Hook`]; the layer above that cares (the network engine, the registration
//! layer) sets it when the library is loaded.  So the lower modules never name the upper
//! ones, and run as well without them (an unset hook does nothing).  A hook that must
//! answer something is a `OnceLock` of a `fn` instead (`registry::THIS_PROCESS`,
//! `net::SERVE_ON_MEMORY`).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One function `fn(A)`, set at most once in practice (a later `set` replaces it).
pub struct Hook<A> {
    f: AtomicUsize,
    _arg: PhantomData<fn(A)>,
}

impl<A> Hook<A> {
    pub const fn new() -> Self {
        Hook { f: AtomicUsize::new(0), _arg: PhantomData }
    }

    pub fn set(&self, f: fn(A)) {
        self.f.store(f as usize, Ordering::Release);
    }

    /// Calls the function, if one is set.
    #[inline]
    pub fn call(&self, a: A) {
        let p = self.f.load(Ordering::Acquire);
        if p != 0 {
            // SAFETY: only `set` stores here, and only a `fn(A)`.
            let f: fn(A) = unsafe { std::mem::transmute::<usize, fn(A)>(p) };
            f(a);
        }
    }
}

impl<A> Default for Hook<A> {
    fn default() -> Self {
        Self::new()
    }
}
