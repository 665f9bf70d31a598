//! libpmi.so.0: Cray PMI (PMI-1 + Cray extensions) over the softnic bootstrap
//!
//! Not built yet: this library exports no symbols until its issue lands.
