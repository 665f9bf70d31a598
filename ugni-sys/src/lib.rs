//! libugni.so.0: Cray uGNI over the softnic fabric
//!
//! Not built yet: this library exports no symbols until its issue lands.
