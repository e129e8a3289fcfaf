//! A child starts with exactly the descriptors the engine gives it: stdin, stdout and stderr.
//!
//! Every other descriptor the host holds without close-on-exec (a shell redirect such as
//! `7>>file`, a socket from systemd's socket activation or `pass_fds`, a database connection, a
//! test harness's pipes) would otherwise reach the command, and both other layers check at
//! *open*: Landlock checks a path when it is opened and seccomp checks `socket()`, so a descriptor
//! opened before either would let a command write outside the root or talk through a socket
//! with `sandbox.network: false`.
//!
//! So the child, between fork and exec, marks every descriptor from 3 up close-on-exec: they
//! vanish at the exec and never reach the program. Marked, not closed: the steps that follow in
//! the child still use theirs until the exec (the watchdog's handshake pipes, and the pipe the
//! standard library reports a failed exec through). Nothing the engine passes on purpose sits
//! above 2: the command's output pipe, stdin and stderr are duplicated onto 0, 1 and 2 before
//! these steps run.
//!
//! `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)` does it in one call on Linux 5.11+. Older kernels
//! (ENOSYS before 5.9, EINVAL on 5.9 and 5.10, which lack the flag) fall back to reading
//! `/proc/self/fd` with raw `getdents64` into a buffer on the stack, and without `/proc` to
//! `fcntl` on every number below the descriptor limit. All three are async-signal-safe: system
//! calls on the stack, no allocation, no lock.

use std::io;

/// Between fork and exec: mark every descriptor from 3 up close-on-exec. Only system calls.
pub(crate) fn keep_only_stdio() -> io::Result<()> {
    if close_range_cloexec() {
        return Ok(());
    }
    if proc_self_fd()? {
        return Ok(());
    }
    every_number()
}

/// `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`; false when this kernel does not have it.
fn close_range_cloexec() -> bool {
    // SAFETY: a plain system call on integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    r == 0
}

/// Mark `fd` close-on-exec (its only descriptor flag). EBADF (not open) is fine.
fn set_cloexec(fd: libc::c_int) -> io::Result<()> {
    // SAFETY: fcntl on an integer; a number that is not open is EBADF.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EBADF) {
            return Err(e);
        }
    }
    Ok(())
}

/// The fallback through `/proc/self/fd`: false when it cannot be opened (no `/proc`).
fn proc_self_fd() -> io::Result<bool> {
    const PATH: &[u8] = b"/proc/self/fd\0";
    // SAFETY: open of a NUL-terminated constant.
    let dir = unsafe {
        libc::open(
            PATH.as_ptr().cast(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return Ok(false);
    }
    // A u64-aligned buffer on the stack: struct linux_dirent64 starts with a u64.
    let mut buf = [0u64; 512];
    let result = loop {
        // SAFETY: getdents64 writes at most the buffer's length into it.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            )
        };
        if n < 0 {
            break Err(io::Error::last_os_error());
        }
        if n == 0 {
            break Ok(true);
        }
        // SAFETY: the kernel filled the first n bytes of the buffer.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
        if let Err(e) = each_entry(bytes, |fd| {
            if fd >= 3 && fd != dir {
                set_cloexec(fd)
            } else {
                Ok(())
            }
        }) {
            break Err(e);
        }
    };
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(dir) };
    result
}

/// Call `f` with the number of each entry of a `getdents64` buffer whose name is a number.
/// Entry layout: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated).
fn each_entry(
    mut bytes: &[u8],
    mut f: impl FnMut(libc::c_int) -> io::Result<()>,
) -> io::Result<()> {
    const NAME_AT: usize = 19;
    while bytes.len() >= NAME_AT {
        let reclen = u16::from_ne_bytes([bytes[16], bytes[17]]) as usize;
        if reclen < NAME_AT || reclen > bytes.len() {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let name = &bytes[NAME_AT..reclen];
        let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
        let mut fd: libc::c_int = 0;
        let mut numeric = !name.is_empty();
        for b in name {
            let next = fd
                .checked_mul(10)
                .and_then(|n| n.checked_add(libc::c_int::from(b.wrapping_sub(b'0'))));
            match (b.is_ascii_digit(), next) {
                (true, Some(n)) => fd = n,
                _ => {
                    numeric = false;
                    break;
                }
            }
        }
        if numeric {
            f(fd)?;
        }
        bytes = &bytes[reclen..];
    }
    Ok(())
}

/// The last fallback: every number from 3 below the soft descriptor limit.
fn every_number() -> io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // Linux caps the limit at fs.nr_open (at most 2^30); infinity cannot be set for NOFILE.
    let end = limit.rlim_cur.min(libc::c_int::MAX as libc::rlim_t) as libc::c_int;
    for fd in 3..end {
        set_cloexec(fd)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    /// A descriptor of the test process without close-on-exec, as a shell redirect leaves one.
    fn inheritable(file: &std::fs::File) -> libc::c_int {
        // SAFETY: F_DUPFD returns a new descriptor (without FD_CLOEXEC) or -1.
        let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 200) };
        assert!(fd >= 200, "{}", io::Error::last_os_error());
        fd
    }

    /// The descriptors `bash` holds after `step` ran in its pre-exec, as `ls` of its fd directory
    /// lists them, and whether the inherited descriptor was writable.
    fn child_fds(step: fn() -> io::Result<()>) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        let file = std::fs::File::create(&victim).unwrap();
        let fd = inheritable(&file);
        let mut cmd = std::process::Command::new("bash");
        cmd.arg("-c")
            .arg(format!(
                "echo INJECTED >&{fd} 2>/dev/null; ls /proc/$$/fd; true"
            ))
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: the steps are async-signal-safe (see the module).
        unsafe { cmd.pre_exec(step) };
        let out = cmd.output().unwrap();
        // SAFETY: closing the duplicate made above.
        unsafe { libc::close(fd) };
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            std::fs::read_to_string(&victim).unwrap(),
        )
    }

    #[test]
    fn every_way_leaves_only_stdin_stdout_and_stderr() {
        // The control: without the step the descriptor is inherited and written through.
        let (fds, victim) = child_fds(|| Ok(()));
        assert!(
            fds.lines()
                .any(|f| f.parse::<i32>().is_ok_and(|n| n >= 200)),
            "{fds}"
        );
        assert_eq!(victim, "INJECTED\n");
        for step in [
            keep_only_stdio as fn() -> io::Result<()>,
            || proc_self_fd().map(|done| assert!(done)),
            every_number,
        ] {
            let (fds, victim) = child_fds(step);
            assert_eq!(fds, "0\n1\n2\n", "{fds}");
            assert_eq!(victim, "");
        }
    }

    #[test]
    fn entries_that_are_not_numbers_are_skipped() {
        let entry = |name: &[u8]| {
            let mut e = vec![0u8; 32];
            let reclen = 32u16;
            e[16..18].copy_from_slice(&reclen.to_ne_bytes());
            e[19..19 + name.len()].copy_from_slice(name);
            e
        };
        let mut buf = Vec::new();
        for name in [&b"."[..], b"..", b"12", b"3", b"99999999999", b"7x"] {
            buf.extend(entry(name));
        }
        let mut seen = Vec::new();
        each_entry(&buf, |fd| {
            seen.push(fd);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [12, 3]);
        // A record length that runs past the buffer is an error, never a read beyond it.
        let mut bad = entry(b"5");
        bad[16..18].copy_from_slice(&400u16.to_ne_bytes());
        assert!(each_entry(&bad, |_| Ok(())).is_err());
    }
}
