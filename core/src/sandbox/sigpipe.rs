//! SIGPIPE in a host that kept its default action.
//!
//! The engine writes to pipes whose reader may be gone: a hooks-file command or an MCP server
//! that exits without reading its stdin. Rust programs, CPython and Node ignore SIGPIPE, so such a
//! write is an `EPIPE` error the engine handles; a Swift (or C) host keeps the default action,
//! and the same write kills the whole host process. A client therefore sets SIGPIPE to ignored
//! when, and only when, its action is still the default: a host's own handler is never replaced.
//! Children are unaffected: Rust's process spawning restores the default action in each child.

use std::sync::Once;

/// Ignore SIGPIPE if its action is the default (once per process; a no-op afterwards).
pub(crate) fn ignore_sigpipe_if_default() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sigaction reads the current action into a zeroed struct; the action is only
        // changed from SIG_DFL to SIG_IGN, which needs no handler code.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == libc::SIG_DFL
            {
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            }
        }
    });
}

// Tested where it matters: a Swift host (the `bindings-swift` step's conformance runner, whose
// hooks_file scenarios end a hook command before it reads its stdin). Inside a Rust test binary
// SIGPIPE is already ignored, so a unit test here could not fail.
