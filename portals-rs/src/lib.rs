//! libportals.so: Portals 3.2 over the softnic fabric
//!
//! Not built yet: this library exports no symbols until its issue lands.
