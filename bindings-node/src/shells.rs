//! Background shells as JavaScript holds them: made by the host (`new BackgroundShells()`) and
//! given to clients, or a client's own (option `background: true`). Both are core's
//! [`contenox::BackgroundShells`], a shared handle.

use contenox::BackgroundShells;
use napi_derive::napi;

/// The shells `bash` with `run_in_background` started.
#[napi]
pub struct NativeBackgroundShells(pub(crate) BackgroundShells);

#[napi]
impl NativeBackgroundShells {
    /// No shells yet; give it to `createClient({ background })`.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NativeBackgroundShells(BackgroundShells::new())
    }

    /// The ids of every shell started so far (`shell_1`, ...), oldest first.
    #[napi]
    pub fn ids(&self) -> Vec<String> {
        self.0.ids()
    }

    /// A shell's status (`running`, `exited N`, `killed`); `null` for an unknown id.
    #[napi]
    pub fn status(&self, id: String) -> Option<String> {
        self.0.status(&id)
    }

    /// Kill every running shell's process group.
    #[napi]
    pub fn close_all(&self) {
        self.0.close_all()
    }
}
