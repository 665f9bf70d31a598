//! (placeholder: owned by the helper building this module)
