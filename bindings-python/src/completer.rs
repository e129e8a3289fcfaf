//! The `Completer` class of `contenox._native`: hands finished engine futures to their asyncio
//! loop without a thread hop and without taking the GIL on an engine thread.
//!
//! Completing an asyncio future from another thread takes the GIL there and then
//! `loop.call_soon_threadsafe`, which wakes the loop through its self-pipe; a runtime worker
//! must not wait for the GIL, so that ran on a blocking thread: one wake-up of that thread, one
//! of the loop, and a GIL hand-off between them, per future (per turn of `client.run`, per
//! batch of a stream). On a busy two-core machine each wake-up waits for a core. Here the
//! worker only queues the finished value and writes one byte to a socket the loop watches
//! (`loop.add_reader`); the loop's callback [`Completer::drain`], already on the loop thread and
//! holding the GIL, turns every queued value into Python and completes its future.
//!
//! The socket pair belongs to the completer and lives as long as anything can write to it (the
//! queue's `Arc`), so a byte never lands in an fd that was closed and reused.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use crate::bridge::bridge;

/// Makes the Python value of a finished future, under the GIL.
pub type Produce = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;

/// A [`Produce`] from a closure (so the closure gets the higher-ranked signature).
pub fn produce<F>(f: F) -> Produce
where
    F: for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send + 'static,
{
    Box::new(f)
}

/// What one loop's finished futures go through.
pub(crate) struct Queue {
    ready: Mutex<Vec<(Py<PyAny>, Produce)>>,
    /// The loop watches this end.
    reader: UnixStream,
    /// Engine threads write one byte here when the queue stops being empty.
    writer: UnixStream,
}

impl Queue {
    /// Queue `produce` (the value of the asyncio future `target`) and wake the loop if it was
    /// not woken already. No GIL needed.
    pub(crate) fn push(&self, target: Py<PyAny>, produce: Produce) {
        let was_empty = {
            let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
            let was_empty = ready.is_empty();
            ready.push((target, produce));
            was_empty
        };
        if was_empty {
            // A full socket (`WouldBlock`) already holds a wake-up the loop has not read.
            let _ = (&self.writer).write(&[1]);
        }
    }
}

/// One asyncio loop's completer (made by `contenox._bridge.completer(loop)`, which registers
/// [`Completer::drain`] as the loop's reader of [`Completer::fileno`]).
#[pyclass(frozen, module = "contenox._native")]
pub struct Completer {
    pub(crate) queue: Arc<Queue>,
}

#[pymethods]
impl Completer {
    #[new]
    fn new() -> PyResult<Self> {
        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        Ok(Completer {
            queue: Arc::new(Queue {
                ready: Mutex::new(Vec::new()),
                reader,
                writer,
            }),
        })
    }

    /// The file descriptor the loop watches for reading.
    fn fileno(&self) -> i32 {
        self.queue.reader.as_raw_fd()
    }

    /// On the loop: read the wake-up bytes, then complete every queued future (in the order
    /// they finished). The socket is read first: a value queued after that is either taken
    /// now or comes with a byte of its own.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let mut buf = [0u8; 64];
        loop {
            match (&self.queue.reader).read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break, // WouldBlock: drained
            }
        }
        let ready =
            std::mem::take(&mut *self.queue.ready.lock().unwrap_or_else(|e| e.into_inner()));
        if ready.is_empty() {
            return Ok(());
        }
        let set = bridge(py)?.getattr("set_future")?;
        for (target, produce) in ready {
            let (value, error) = match produce(py) {
                Ok(v) => (v, py.None()),
                Err(e) => (py.None(), e.into_value(py).into_any()),
            };
            // One future failing to take its value must not strand the others.
            if let Err(e) = set.call1((target, value, error)) {
                e.write_unraisable(py, Some(set.as_any()));
            }
        }
        Ok(())
    }
}
