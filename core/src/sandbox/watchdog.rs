//! The watchdog: when the host dies, even by SIGKILL, every process group the engine started is
//! killed.
//!
//! `PR_SET_PDEATHSIG` reaches only a direct child (bash, an MCP server); what that child started
//! (`sleep 1000 &`, `nohup`, a double fork) stays behind in its process group. So the first
//! process group the engine starts also starts one watchdog per host process: a process made
//! with `clone(CLONE_VM | CLONE_FILES)` that shares the host's memory and file table (no copy
//! of either, so no memory cost and no stray copies of pipe ends), blocks every signal, and
//! waits on a pidfd of the host (or, on kernels before 5.3, checks its parent every 200 ms).
//! When the host is gone it sends SIGKILL to every process group in the registry below, which
//! lives in that shared memory, and exits. The sandbox's seccomp filter keeps every process of a
//! command in its group, so the group is everything the command started.
//!
//! The watchdog's code runs beside the host's threads on the host's memory: it only reads
//! atomics and makes raw system calls (no libc wrapper, which would write `errno` into the TLS
//! of the thread that cloned it).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// How many process groups can be watched at once.
const SLOTS: usize = 4096;

/// The registry: process group ids, 0 for a free slot.
static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
/// Where the next search for a free slot starts.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The host's pid and a pidfd of it (-1 without one), read by the watchdog.
static HOST_PID: AtomicI32 = AtomicI32::new(0);
static HOST_PIDFD: AtomicI32 = AtomicI32::new(-1);

/// The watchdog of this process: the pid it watches (a forked host starts its own), and the
/// outcome of starting it.
static STARTED: Mutex<Option<(u32, Result<(), String>)>> = Mutex::new(None);

/// A watched process group; dropping it takes the group out of the registry (after the group was
/// killed, so a reused id is never killed).
#[derive(Debug)]
pub(crate) struct Watched {
    slot: usize,
    pgid: i32,
}

impl Watched {
    /// The watched process group.
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ =
            GROUPS[self.slot].compare_exchange(self.pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Watch process group `pgid`: start the watchdog if this process has none, then register the
/// group. `Err` says why the group is not watched (no watchdog here, or the registry is full).
pub(crate) fn watch(pgid: i32) -> Result<Watched, String> {
    if pgid <= 1 {
        return Err(format!("not a process group: {pgid}"));
    }
    ensure_started()?;
    let start = NEXT.fetch_add(1, Ordering::Relaxed);
    for i in 0..SLOTS {
        let slot = (start + i) % SLOTS;
        if GROUPS[slot]
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Ok(Watched { slot, pgid });
        }
    }
    Err(format!("more than {SLOTS} process groups at once"))
}

/// Whether this process has a watchdog, or why not. It is started with the first process group
/// the engine starts; before that, this says whether the platform has one.
pub(crate) fn state() -> Result<(), String> {
    let started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    match started.as_ref() {
        Some((owner, result)) if *owner == std::process::id() => result.clone(),
        _ => supported(),
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn supported() -> Result<(), String> {
    Ok(())
}

fn ensure_started() -> Result<(), String> {
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    match started.as_ref() {
        Some((owner, result)) if *owner == pid => return result.clone(),
        Some(_) => {
            // A fork of a host that had a watchdog: the registry holds the parent's groups,
            // which are not ours to kill.
            for g in &GROUPS {
                g.store(0, Ordering::SeqCst);
            }
        }
        None => {}
    }
    let result = start(pid as i32);
    if let Err(e) = &result {
        tracing::warn!(target: "contenox::sandbox", "no watchdog: {e}; processes that commands leave behind may outlive a host that is killed");
    }
    *started = Some((pid, result.clone()));
    result
}

/// Stack of the watchdog: its code is a loop of system calls.
const STACK: usize = 64 * 1024;

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn start(host: i32) -> Result<(), String> {
    use std::io::Error;
    HOST_PID.store(host, Ordering::SeqCst);
    // SAFETY: pidfd_open takes a pid and flags; -1 (ENOSYS before Linux 5.3) is handled.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, host, 0u32) } as i32;
    HOST_PIDFD.store(pidfd.max(-1), Ordering::SeqCst);
    // SAFETY: an anonymous private mapping; checked for failure.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(format!(
            "no stack for the watchdog: {}",
            Error::last_os_error()
        ));
    }
    // The watchdog starts with every signal blocked (a host's handler must never run on its
    // stack); this thread's mask is restored right after.
    // SAFETY: sigset operations on local values; clone with a fresh stack and a function that
    // touches only atomics and raw system calls.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let top = (stack as *mut u8).add(STACK) as *mut libc::c_void;
        // No exit signal: the host is never told about it, and no waitpid(-1) of the host's
        // reaps it.
        let pid = libc::clone(
            watchdog_main,
            top,
            libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_UNTRACED,
            std::ptr::null_mut(),
        );
        let err = Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            libc::munmap(stack, STACK);
            return Err(format!("cannot start the watchdog: {err}"));
        }
        pid
    };
    tracing::debug!(target: "contenox::sandbox", "watchdog {pid} watches host {host}");
    Ok(())
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn start(_host: i32) -> Result<(), String> {
    supported()
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn supported() -> Result<(), String> {
    Err(format!(
        "no watchdog for {} on {}",
        std::env::consts::ARCH,
        std::env::consts::OS
    ))
}

/// A system call without libc (so `errno` is never written): returns the kernel's value, a
/// negative errno on failure.
#[cfg(target_arch = "x86_64")]
unsafe fn raw(nr: libc::c_long, a: [usize; 5]) -> isize {
    let ret: isize;
    // SAFETY: the caller passes a valid system call and arguments.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a[0], in("rsi") a[1], in("rdx") a[2], in("r10") a[3], in("r8") a[4],
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(target_arch = "aarch64")]
unsafe fn raw(nr: libc::c_long, a: [usize; 5]) -> isize {
    let ret: isize;
    // SAFETY: the caller passes a valid system call and arguments.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr as usize,
            inlateout("x0") a[0] as isize => ret,
            in("x1") a[1], in("x2") a[2], in("x3") a[3], in("x4") a[4],
            options(nostack),
        );
    }
    ret
}

/// The watchdog process: wait for the host's end, kill every registered group, exit.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
extern "C" fn watchdog_main(_: *mut libc::c_void) -> libc::c_int {
    const NAME: &[u8] = b"contenox-watch\0";
    let host = HOST_PID.load(Ordering::SeqCst);
    let mut pidfd = HOST_PIDFD.load(Ordering::SeqCst);
    // SAFETY: raw system calls on local values and the shared, always-mapped statics.
    unsafe {
        raw(
            libc::SYS_prctl,
            [libc::PR_SET_NAME as usize, NAME.as_ptr() as usize, 0, 0, 0],
        );
        loop {
            if pidfd >= 0 {
                let mut pfd = libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let r = raw(
                    libc::SYS_ppoll,
                    [&mut pfd as *mut libc::pollfd as usize, 1, 0, 0, 8],
                );
                if r == 1 && pfd.revents & libc::POLLIN != 0 {
                    break;
                }
                if r == 1 || (r < 0 && r != -(libc::EINTR as isize)) {
                    // The descriptor was closed under us, or poll failed: fall back to polling.
                    pidfd = -1;
                }
            } else {
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 200_000_000,
                };
                raw(
                    libc::SYS_ppoll,
                    [0, 0, &pause as *const libc::timespec as usize, 0, 8],
                );
                // Reparented: the host is gone.
                if raw(libc::SYS_getppid, [0; 5]) as i32 != host {
                    break;
                }
            }
        }
        for g in &GROUPS {
            let pgid = g.load(Ordering::SeqCst);
            if pgid > 1 {
                raw(
                    libc::SYS_kill,
                    [(-pgid) as isize as usize, libc::SIGKILL as usize, 0, 0, 0],
                );
            }
        }
        loop {
            raw(libc::SYS_exit, [0; 5]);
        }
    }
}
