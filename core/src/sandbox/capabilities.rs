//! A host running as root lends its commands root's capabilities, and some of them defeat the
//! other layers: with CAP_SYS_ADMIN, CAP_SYS_RESOURCE or CAP_PERFMON a process in a Landlock
//! domain still reads `/proc/<host>/environ` (measured on Linux 6.18); CAP_DAC_READ_SEARCH
//! opens files by handle, past every path rule; CAP_MKNOD makes device nodes to write disks
//! through. CAP_SETFCAP writes file capabilities (`setcap cap_sys_admin+ep prog`: a program
//! that is root's powers for whoever runs it later), CAP_FSETID keeps set-ID bits through
//! writes and chmods they would clear; no command needs either (the seccomp filter refuses
//! setting set-ID bits themselves). So a confined command keeps at most Docker's default
//! capabilities without CAP_MKNOD, CAP_SETFCAP and CAP_FSETID, in its bounding set too (root
//! regains the bounding set at every exec).

/// The capabilities a command may keep: chown, dac_override, fowner, kill, setgid, setuid,
/// setpcap, net_bind_service, net_raw, sys_chroot, audit_write.
const KEEP: u64 = (1 << 0) // CAP_CHOWN
    | (1 << 1) // CAP_DAC_OVERRIDE
    | (1 << 3) // CAP_FOWNER
    | (1 << 5) // CAP_KILL
    | (1 << 6) // CAP_SETGID
    | (1 << 7) // CAP_SETUID
    | (1 << 8) // CAP_SETPCAP
    | (1 << 10) // CAP_NET_BIND_SERVICE
    | (1 << 13) // CAP_NET_RAW
    | (1 << 18) // CAP_SYS_CHROOT
    | (1 << 29); // CAP_AUDIT_WRITE

const CAP_SETPCAP: u32 = 8;
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
#[derive(Clone, Copy)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The capability cut of a command, prepared in the parent.
#[derive(Clone, Copy)]
pub(crate) struct CapDrop {
    /// Whether the host may drop from the bounding set (it holds CAP_SETPCAP).
    bounding: bool,
    /// The host's sets less what a command may not keep.
    data: [Data; 2],
}

fn current() -> Option<[Data; 2]> {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget fills the two structs it is given.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    (r == 0).then_some(data)
}

/// The cut for this host, or `None` when the host holds no capability a command may not keep
/// (any non-root host).
pub(crate) fn cut() -> Option<CapDrop> {
    let data = current()?;
    let held = |f: fn(&Data) -> u32| u64::from(f(&data[0])) | (u64::from(f(&data[1])) << 32);
    let all = held(|d| d.effective) | held(|d| d.permitted) | held(|d| d.inheritable);
    if all & !KEEP == 0 {
        return None;
    }
    let mut kept = data;
    for (i, d) in kept.iter_mut().enumerate() {
        let keep = (KEEP >> (32 * i)) as u32;
        d.effective &= keep;
        d.permitted &= keep;
        d.inheritable &= keep;
    }
    Some(CapDrop {
        bounding: held(|d| d.effective) & (1 << CAP_SETPCAP) != 0,
        data: kept,
    })
}

impl CapDrop {
    /// Between fork and exec: drop what a command may not keep from the bounding, ambient,
    /// effective, permitted and inheritable sets. Only system calls.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        // SAFETY: prctl and capset on values prepared before the fork.
        unsafe {
            if self.bounding {
                for cap in 0..64u32 {
                    if KEEP & (1 << cap) == 0
                        && libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) < 0
                        && *libc::__errno_location() != libc::EINVAL
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            // Ambient capabilities (Linux 4.3+); EINVAL on older kernels, which have none.
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            );
            let header = Header {
                version: VERSION_3,
                pid: 0,
            };
            if libc::syscall(libc::SYS_capset, &header, self.data.as_ptr()) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}
