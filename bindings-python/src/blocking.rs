//! Waiting for the engine from a thread with no event loop (`client.run_sync`): the turn runs on
//! the engine's runtime as it does for `await client.run()`, and the calling thread waits for its
//! result without the GIL, so sync host callbacks (tools, hooks, `wait_for`), which run on the
//! runtime's blocking pool and take the GIL only while Python runs, are never blocked by it.
//!
//! Nothing here needs asyncio: a script that only wants an answer does not import it (issue 27).
//!
//! Ctrl-C: Python's signal handlers run only when the main thread is in the interpreter, so the
//! wait wakes every [`SIGNAL_POLL`] to let them run ([`Python::check_signals`]). When one raises
//! (KeyboardInterrupt, or whatever a handler raises) the turn is cancelled and the wait goes on
//! until the turn has ended (its running tools told, its background shells killed, its asks
//! withdrawn) for at most [`CANCEL_GRACE`], then the exception reaches the caller. A second
//! exception during that grace ends the wait at once.

use std::future::Future;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use contenox::CancellationToken;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::runtime::runtime;

/// How often a waiting caller lets Python's signal handlers run. Short enough that Ctrl-C feels
/// immediate, long enough that an idle wait costs nothing measurable; a result that arrives
/// wakes the caller at once, whatever this is.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// How long a cancelled turn may take to end before the exception is raised anyway (a sync tool
/// that ignores its cancel signal keeps its thread until it returns; the turn does not wait for
/// it, but its `after_tool` or a slow model server might be mid-way).
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// Run `fut` on the engine's runtime and wait for its output without the GIL. `cancel` is the
/// turn's outside cancel token: cancelled when a signal handler raises during the wait.
pub(crate) fn wait<T, F>(py: Python<'_>, fut: F, cancel: &CancellationToken) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, mut rx) = sync_channel::<T>(1);
    runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    loop {
        match recv(py, &mut rx, SIGNAL_POLL) {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(lost()),
        }
        if let Err(interrupt) = py.check_signals() {
            cancel.cancel();
            let deadline = Instant::now() + CANCEL_GRACE;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                match recv(py, &mut rx, left.min(SIGNAL_POLL)) {
                    Ok(_) | Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if py.check_signals().is_err() {
                    break; // a second Ctrl-C: stop waiting for the turn to wind down
                }
            }
            return Err(interrupt);
        }
    }
}

/// Wait up to `timeout` for the result, without the GIL (`&mut`: the receiver is `Send` but not
/// `Sync`, so only an exclusive borrow may cross into the detached closure).
fn recv<T: Send>(
    py: Python<'_>,
    rx: &mut Receiver<T>,
    timeout: Duration,
) -> Result<T, RecvTimeoutError> {
    py.detach(move || rx.recv_timeout(timeout))
}

fn lost() -> PyErr {
    PyRuntimeError::new_err(
        "contenox: the turn's task ended without a result (the runtime shut down)",
    )
}
