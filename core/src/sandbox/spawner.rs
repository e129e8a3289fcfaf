//! The thread every child of the engine is forked from.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends, not the process: a
//! child forked from a short-lived thread (a `spawn_blocking` worker, a host thread that called
//! a sync `run`) would be killed when that thread exits, long before the host does. So children
//! are forked from one thread that lives as long as the process; callers wait for it (the fork
//! itself is as synchronous as before).

use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

type Job = Box<dyn FnOnce() + Send>;

/// The spawner of this process: its pid (a forked host starts its own) and its queue.
static SPAWNER: Mutex<Option<(u32, Sender<Job>)>> = Mutex::new(None);

fn sender() -> std::io::Result<Sender<Job>> {
    let mut slot = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if let Some((owner, tx)) = slot.as_ref() {
        if *owner == pid {
            return Ok(tx.clone());
        }
    }
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("contenox-spawner".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            for job in rx {
                job();
            }
        })?;
    *slot = Some((pid, tx.clone()));
    Ok(tx)
}

/// Spawn `cmd` on the spawner thread, inside the caller's tokio runtime.
pub(crate) fn spawn(mut cmd: tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| std::io::Error::other("starting a process needs a tokio runtime"))?;
    let (done, result) = channel();
    let job: Job = Box::new(move || {
        let _runtime = handle.enter();
        let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cmd.spawn()))
            .unwrap_or_else(|_| Err(std::io::Error::other("spawning the process panicked")));
        // `cmd` (and its copies of the child's pipe ends) is dropped here, before the caller
        // reads the child's output.
        drop(cmd);
        let _ = done.send(spawned);
    });
    let mut job = Some(job);
    // A spawner that died (it never should) is replaced once.
    for _ in 0..2 {
        let tx = sender()?;
        // Cannot fail: the job is taken once per pass and put back when the send fails.
        match tx.send(job.take().expect("job")) {
            Ok(()) => {
                return result
                    .recv()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread stopped")))
            }
            Err(returned) => {
                job = Some(returned.0);
                *SPAWNER.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
        }
    }
    Err(std::io::Error::other(
        "the spawner thread cannot be started",
    ))
}
