//! libdmapp.so.1: Cray DMAPP over the softnic fabric
//!
//! Not built yet: this library exports no symbols until its issue lands.
