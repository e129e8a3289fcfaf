//! `BackgroundShells`: background shells as a UniFFI object, host-made or a client's own.

use std::sync::Arc;

/// Background shells: the processes that `bash` with `run_in_background` started. Make one
/// (`BackgroundShells()`) and give it to clients (`Client(config, backgroundShells = shells)`;
/// clients given the same one share its shells) and call `closeAll()` on shutdown; or let a
/// client make its own (config `background: true`) and get it with
/// `Client.backgroundShells()`. Every shell is killed (its whole process group) by
/// `closeAll()`, when the turn that started it is cancelled, and by `shutdown()` of the client
/// whose turn started it (freeing a client kills only the shells it made itself).
///
/// A view of the shells, not a copy: it stays readable after a client is shut down or freed.
#[derive(uniffi::Object)]
pub struct BackgroundShells {
    inner: contenox::BackgroundShells,
}

impl BackgroundShells {
    pub(crate) fn of(inner: contenox::BackgroundShells) -> Self {
        BackgroundShells { inner }
    }

    pub(crate) fn handle(&self) -> contenox::BackgroundShells {
        self.inner.clone()
    }
}

#[uniffi::export]
impl BackgroundShells {
    /// No shells yet; give it to clients.
    #[uniffi::constructor]
    pub fn new() -> Arc<Self> {
        Arc::new(BackgroundShells::of(contenox::BackgroundShells::new()))
    }

    /// The ids of every shell started so far, oldest first (`shell_1`, `shell_2`, ...), finished
    /// ones included.
    pub fn ids(&self) -> Vec<String> {
        self.inner.ids()
    }

    /// A shell's status: `running`, `exited N` or `killed`; `null` for an unknown id.
    pub fn status(&self, id: String) -> Option<String> {
        self.inner.status(&id)
    }

    /// Kill every running shell's process group. The client stays open. Idempotent.
    pub fn close_all(&self) {
        self.inner.close_all();
    }
}
