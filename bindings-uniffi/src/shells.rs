//! `BackgroundShells`: the client's background shells as a UniFFI object.

/// The background shells of a client (config `background: true`): the processes that `bash`
/// with `run_in_background` started. Get it with `Client.backgroundShells()`. Every shell is
/// killed (its whole process group) by `closeAll()`, by `client.shutdown()` / freeing the
/// client, and when the turn that started it is cancelled.
///
/// A view of the client's shells, not a copy: it stays readable after the client is shut down or
/// freed (the shells are killed then all the same).
#[derive(uniffi::Object)]
pub struct BackgroundShells {
    inner: contenox::BackgroundShells,
}

impl BackgroundShells {
    pub(crate) fn new(inner: contenox::BackgroundShells) -> Self {
        BackgroundShells { inner }
    }
}

#[uniffi::export]
impl BackgroundShells {
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
