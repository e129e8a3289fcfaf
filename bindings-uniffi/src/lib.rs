//! placeholder: the binding crate is being written.
