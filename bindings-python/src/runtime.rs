//! The tokio runtime the engine runs on, guarded against `fork()`, and its glue to
//! pyo3-async-runtimes.
//!
//! A forked child inherits the parent's memory but none of its threads: a tokio runtime made in
//! the parent has no workers there, and anything spawned on it would never run. So the runtime
//! remembers the pid that built it; the first use in another process builds a fresh runtime (the
//! parent's is leaked: dropping it would wait for threads that do not exist). lancedb and delta-rs
//! guard theirs the same way.
//!
//! Engine threads enter Python only through [`with_python`], which counts them: at interpreter
//! exit (an `atexit` hook calls [`shutdown`]) no new entry is made and the hook waits for the
//! ones under way, so no engine thread touches an interpreter that is finalizing.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::bridge::bridge;
pub use crate::completer::{produce, Produce};
use crate::completer::{Completer, Queue};

static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static PID: AtomicU32 = AtomicU32::new(0);
static BUILD: Mutex<()> = Mutex::new(());

/// The runtime of this process (built on first use, and again on first use after a fork).
pub fn runtime() -> &'static Runtime {
    let pid = std::process::id();
    if let Some(rt) = current(pid) {
        return rt;
    }
    let _one_builder = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = current(pid) {
        return rt;
    }
    let rt: &'static Runtime = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads())
            .enable_all()
            .thread_name("contenox")
            .build()
            // Cannot fail short of the OS refusing threads, and then nothing of the binding
            // can run: the panic reaches Python as a PanicException.
            .expect("contenox: cannot start the tokio runtime"),
    ));
    // Threads that were inside Python in the parent do not exist here.
    INFLIGHT.store(0, Ordering::SeqCst);
    // The pointer first, then the pid: a reader that sees the new pid sees the new runtime.
    RUNTIME.store(rt as *const Runtime as *mut Runtime, Ordering::Release);
    PID.store(pid, Ordering::Release);
    rt
}

/// The most engine worker threads a setting may ask for (a bigger number is a mistake, not a
/// reason to start thousands of threads).
const MAX_WORKER_THREADS: usize = 256;

/// How many worker threads the runtime gets: `CONTENOX_WORKER_THREADS`, else tokio's own
/// `TOKIO_WORKER_THREADS`, else one. One by default because in a Python process the engine's
/// work between network waits is short and the host's is serialized by the GIL anyway: a
/// second worker mostly wakes up to find nothing to steal, which on a small machine takes a core
/// from the model server and the interpreter (docs/benchmarks.md, "Python binding: the gap to
/// the floor"). Sync host callbacks run on the blocking pool, not on the workers.
fn worker_threads() -> usize {
    ["CONTENOX_WORKER_THREADS", "TOKIO_WORKER_THREADS"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .map_or(1, |n| n.min(MAX_WORKER_THREADS))
}

/// The pid that built the runtime now in use (0 before the first use).
pub fn runtime_pid() -> u32 {
    PID.load(Ordering::Acquire)
}

fn current(pid: u32) -> Option<&'static Runtime> {
    if PID.load(Ordering::Acquire) != pid {
        return None;
    }
    let ptr = RUNTIME.load(Ordering::Acquire);
    // SAFETY: the pointer comes from `Box::leak` and is never freed.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

static SHUTDOWN: AtomicBool = AtomicBool::new(false);
static INFLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Run `f` attached to the interpreter, from any thread; `None` once the interpreter is shutting
/// down (nothing may enter it then).
pub fn with_python<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    if SHUTDOWN.load(Ordering::SeqCst) {
        return None;
    }
    INFLIGHT.fetch_add(1, Ordering::SeqCst);
    let r = if SHUTDOWN.load(Ordering::SeqCst) {
        None
    } else {
        Python::try_attach(f)
    };
    INFLIGHT.fetch_sub(1, Ordering::SeqCst);
    r
}

/// Called at interpreter exit: refuse new entries into Python, then wait (without the GIL, at
/// most 3 s) for the engine threads that are inside it.
#[pyfunction]
pub fn shutdown(py: Python<'_>) {
    SHUTDOWN.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = Instant::now() + Duration::from_secs(3);
        while INFLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Cancels the Rust side when the asyncio future is cancelled (or collected unfinished).
#[pyclass(frozen, module = "contenox._native")]
pub struct OnDone {
    tx: Mutex<Option<oneshot::Sender<()>>>,
}

#[pymethods]
impl OnDone {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if fut.call_method0("cancelled")?.is_truthy()? {
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
        }
        Ok(())
    }
}

/// The completer queue of `event_loop` (`contenox._bridge.completer`, called on the loop's
/// thread), or None for a loop that cannot watch a file descriptor (then the future is
/// completed through `call_soon_threadsafe`).
fn completer_of(event_loop: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Queue>>> {
    let c = bridge(event_loop.py())?.call_method1("completer", (event_loop,))?;
    if c.is_none() {
        return Ok(None);
    }
    Ok(Some(c.cast::<Completer>()?.get().queue.clone()))
}

/// An asyncio future on `event_loop` completed by `fut`, which runs on the engine's runtime.
/// Cancelling the asyncio future drops `fut` (so its guards cancel what it was waiting for).
pub fn py_future<'py, F>(event_loop: Bound<'py, PyAny>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Produce> + Send + 'static,
{
    let py_fut = event_loop.call_method0("create_future")?;
    let (tx, rx) = oneshot::channel::<()>();
    py_fut.call_method1(
        "add_done_callback",
        (OnDone {
            tx: Mutex::new(Some(tx)),
        },),
    )?;
    let target = py_fut.clone().unbind();
    let completer = completer_of(&event_loop)?;
    let event_loop = event_loop.unbind();
    runtime().spawn(async move {
        let produce: Produce = tokio::select! {
            biased;
            _ = rx => return,
            r = AssertUnwindSafe(fut).catch_unwind() => match r {
                Ok(p) => p,
                Err(_) => Box::new(|_py| Err(PyRuntimeError::new_err("contenox: the engine panicked"))),
            },
        };
        if let Some(queue) = completer {
            // The loop makes the value itself (see `completer`): no GIL, no thread hop here.
            queue.push(target, produce);
            return;
        }
        // Entering Python may wait for the GIL: not on a runtime worker.
        runtime().spawn_blocking(move || {
            with_python(|py| {
                let (value, error) = match produce(py) {
                    Ok(v) => (v, py.None()),
                    Err(e) => (py.None(), e.into_value(py).into_any()),
                };
                let set = bridge(py)?.getattr("set_future")?;
                event_loop
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (set, target, value, error))
                    .map(|_| ())
            });
        });
    });
    Ok(py_fut)
}

/// The caller's running asyncio loop (with its context), or the error that says `what` needs
/// one.
pub(crate) fn running_loop(py: Python<'_>, what: &str) -> PyResult<TaskLocals> {
    TaskLocals::with_running_loop(py)
        .and_then(|l| l.copy_context(py))
        .map_err(|_| {
            PyRuntimeError::new_err(format!(
                "{what} needs a running asyncio event loop (await it from async code); \
                 in a script without one use client.run_sync(...)"
            ))
        })
}
