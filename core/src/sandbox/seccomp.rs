//! seccomp: system calls a command may not make, refused with `EPERM`:
//! - `setsid`, `setpgid`: leaving the process group, which is how the engine kills everything a
//!   command started (`setsid sleep 1000 &` would outlive it);
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`: reading or steering other processes;
//! - `ioctl(TIOCSTI)`, `ioctl(TIOCLINUX)`: typing into a terminal;
//! - `io_uring_*`: its operations bypass seccomp (an `IORING_OP_SOCKET` would dodge the network
//!   filter);
//! - `mount`, `umount2`, `pivot_root`, module loading, `kexec_*`, `reboot`, `swapon`/`swapoff`,
//!   `bpf`: what a host running as root would otherwise lend a command;
//! - with the network off, `socket` of any family but Unix and netlink;
//! - namespaces: `unshare` and `clone` with any `CLONE_NEW*` flag, `setns`. A user namespace
//!   needs no privilege, and inside it a command holds every capability over what it creates
//!   there (the kernel's attack surface of a root user); the engine's own kill of the process
//!   group, its Landlock domain and this filter stay, but nothing a command does needs one;
//! - set-ID bits: `chmod`, `fchmod`, `fchmodat`, `fchmodat2` of a mode with `S_ISUID` or
//!   `S_ISGID`, and `open`, `openat`, `creat`, `mknod`, `mknodat` creating a file with one.
//!   A host running as root would otherwise leave a set-user-ID root program in the root for
//!   whoever runs it later (no_new_privs only guards the command's own execs).
//!
//! Two system calls take their flags in memory, out of a filter's sight: `clone3` (namespace
//! flags) and `openat2` (the mode). They get `ENOSYS`, the answer of a kernel without them,
//! so the C library and runtimes fall back to `clone` and `openat`, which are checked.
//!
//! The crate `seccompiler` compiles the rules to BPF (once per variant, in the parent); the
//! child only installs the program. Its architecture check kills a process that makes system
//! calls of another ABI (32-bit `int 0x80`), and on x86_64 this module adds a check that refuses
//! every x32 system call, which carries the same architecture value as x86_64's.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

/// A compiled filter, ready for `seccomp(SECCOMP_SET_MODE_FILTER)` in the child: the rules
/// refused with `EPERM`, then the calls answered `ENOSYS` (one action per seccompiler
/// program, so two programs; the kernel runs both and an error answer wins over allow).
pub(crate) struct Filter {
    program: BpfProgram,
    absent: BpfProgram,
}

/// `struct sock_fprog` of `<linux/filter.h>`.
#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const sock_filter,
}

impl Filter {
    /// Between fork and exec: install the filter on the calling (single-threaded) child. Only
    /// the raw system call, which is async-signal-safe; no_new_privs must be set already.
    pub(crate) fn install(&self) -> std::io::Result<()> {
        install(&self.program)?;
        install(&self.absent)
    }
}

/// Install one program on the calling thread (async-signal-safe: one system call).
fn install(program: &BpfProgram) -> std::io::Result<()> {
    let prog = SockFprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_ptr(),
    };
    // SAFETY: `prog` points into a program that lives as long as the process (a static); the
    // kernel copies it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const SockFprog,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the kernel takes seccomp filters, or why not.
pub(crate) fn available() -> Result<(), String> {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    AVAILABLE
        .get_or_init(|| {
            let action: u32 = libc::SECCOMP_RET_ERRNO;
            // SAFETY: SECCOMP_GET_ACTION_AVAIL only reads the u32 it is given (Linux 4.14+).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_GET_ACTION_AVAIL,
                    0u32,
                    &action as *const u32,
                )
            };
            if r == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            Err(match e.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EINVAL) => {
                    "the kernel has no seccomp filters (Linux 4.14+ with CONFIG_SECCOMP_FILTER)"
                        .to_string()
                }
                _ => format!("seccomp is not usable here: {e}"),
            })
        })
        .clone()?;
    filter(true).map(|_| ())
}

/// The filter for commands with (`network`) or without the network.
pub(crate) fn filter(network: bool) -> Result<&'static Filter, String> {
    static WITH: OnceLock<Result<Filter, String>> = OnceLock::new();
    static WITHOUT: OnceLock<Result<Filter, String>> = OnceLock::new();
    let cell = if network { &WITH } else { &WITHOUT };
    cell.get_or_init(|| build(network))
        .as_ref()
        .map_err(Clone::clone)
}

/// `kexec_file_load`, which some targets of the libc crate leave out (asm-generic number 294).
#[cfg(target_arch = "x86_64")]
const KEXEC_FILE_LOAD: libc::c_long = libc::SYS_kexec_file_load;
#[cfg(not(target_arch = "x86_64"))]
const KEXEC_FILE_LOAD: libc::c_long = 294;

// The libc crate's ioctl request type is c_ulong with glibc and c_int with musl.
#[allow(clippy::unnecessary_cast)]
const TIOCSTI: u64 = libc::TIOCSTI as u64;
#[allow(clippy::unnecessary_cast)]
const TIOCLINUX: u64 = libc::TIOCLINUX as u64;

/// `fchmodat2` (Linux 6.6), 452 on every architecture this filter is built for.
const FCHMODAT2: libc::c_long = 452;

/// The `CLONE_NEW*` flags `clone` takes (`CLONE_NEWTIME`'s bit is the exit signal's there).
const CLONE_NAMESPACES: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// `CLONE_NEWTIME`, which `unshare` takes too.
const CLONE_NEWTIME: u64 = 0x80;

/// The set-ID bits of a mode.
const SET_ID: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

/// The `open` flags that create a file from the mode: `O_CREAT`, and `O_TMPFILE`'s own bit
/// (`O_TMPFILE` includes `O_DIRECTORY`, which alone creates nothing).
const CREATING: [u64; 2] = [
    libc::O_CREAT as u64,
    (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64,
];

fn build(network: bool) -> Result<Filter, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        format!(
            "no seccomp filter for the {} architecture",
            std::env::consts::ARCH
        )
    })?;
    let fail = |e: seccompiler::BackendError| format!("seccomp filter: {e}");
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(fail)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in [
        libc::SYS_setsid,
        libc::SYS_setpgid,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        KEXEC_FILE_LOAD,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_bpf,
    ] {
        rules.insert(nr, vec![]);
    }
    // The request is an unsigned int in the kernel: compare only the low 32 bits, so high bits
    // set by the caller do not slip past.
    rules.insert(
        libc::SYS_ioctl,
        vec![
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCSTI)?]).map_err(fail)?,
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCLINUX)?]).map_err(fail)?,
        ],
    );
    if !network {
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?,
                cond(0, SeccompCmpOp::Ne, libc::AF_NETLINK as u64)?,
            ])
            .map_err(fail)?],
        );
    }
    // A rule per flag or bit: (arg & bit) == bit, any of them.
    let any_bit = |arg: u8, bits: &[u64]| -> Result<Vec<SeccompRule>, String> {
        bits.iter()
            .map(|&b| {
                SeccompRule::new(vec![cond(arg, SeccompCmpOp::MaskedEq(b), b)?]).map_err(fail)
            })
            .collect()
    };
    let mut unshared = CLONE_NAMESPACES.to_vec();
    unshared.push(CLONE_NEWTIME);
    rules.insert(libc::SYS_unshare, any_bit(0, &unshared)?);
    rules.insert(libc::SYS_clone, any_bit(0, &CLONE_NAMESPACES)?);
    rules.insert(libc::SYS_setns, vec![]);
    // chmod family: the mode is argument `mode`.
    let mut chmods: Vec<(libc::c_long, u8)> = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (FCHMODAT2, 2),
        (libc::SYS_mknodat, 2),
    ];
    #[cfg(target_arch = "x86_64")]
    chmods.extend([
        (libc::SYS_chmod, 1),
        (libc::SYS_creat, 1),
        (libc::SYS_mknod, 1),
    ]);
    for (nr, mode) in chmods {
        rules.insert(nr, any_bit(mode, &SET_ID)?);
    }
    // open family: a set-ID mode counts only when the flags create a file (otherwise the mode
    // argument is whatever the caller's register held).
    let mut opens: Vec<(libc::c_long, u8, u8)> = vec![(libc::SYS_openat, 2, 3)];
    #[cfg(target_arch = "x86_64")]
    opens.push((libc::SYS_open, 1, 2));
    for (nr, flags, mode) in opens {
        let mut both = Vec::new();
        for creating in CREATING {
            for bit in SET_ID {
                both.push(
                    SeccompRule::new(vec![
                        cond(flags, SeccompCmpOp::MaskedEq(creating), creating)?,
                        cond(mode, SeccompCmpOp::MaskedEq(bit), bit)?,
                    ])
                    .map_err(fail)?,
                );
            }
        }
        rules.insert(nr, both);
    }
    let refuse = SeccompAction::Errno(libc::EPERM as u32);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, refuse, arch).map_err(fail)?;
    let mut program: BpfProgram = filter.try_into().map_err(fail)?;
    if arch == TargetArch::x86_64 {
        refuse_x32(&mut program)?;
    }
    let absent: BTreeMap<i64, Vec<SeccompRule>> = [libc::SYS_clone3, libc::SYS_openat2]
        .into_iter()
        .map(|nr| (nr, vec![]))
        .collect();
    let not_here = SeccompAction::Errno(libc::ENOSYS as u32);
    let absent = SeccompFilter::new(absent, SeccompAction::Allow, not_here, arch)
        .map_err(fail)?
        .try_into()
        .map_err(fail)?;
    Ok(Filter { program, absent })
}

/// Insert, right after seccompiler's architecture check (load arch; jump over the kill when it
/// matches; kill), a check that refuses every system call number with the x32 bit set.
fn refuse_x32(program: &mut BpfProgram) -> Result<(), String> {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x15;
    const BPF_JMP_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let arch_check = program.len() >= 4
        && program[0].code == BPF_LD_W_ABS
        && program[0].k == 4 // seccomp_data.arch
        && program[1].code == BPF_JMP_JEQ_K
        && program[1].jt == 1
        && program[1].jf == 0
        && program[2].code == BPF_RET_K;
    if !arch_check {
        return Err("seccomp filter: unexpected layout of the compiled program".into());
    }
    let insn = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    let check = [
        insn(BPF_LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        insn(BPF_JMP_JGE_K, 0, 1, X32_SYSCALL_BIT),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
    ];
    // The rest of the program starts by loading the number itself and only jumps forward
    // within itself, so nothing points across the insertion.
    program.splice(3..3, check);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_variants_compile() {
        let with = filter(true).unwrap();
        let without = filter(false).unwrap();
        assert!(without.program.len() > with.program.len());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_check_follows_the_arch_check() {
        let p = &filter(true).unwrap().program;
        assert_eq!(p[3].code, 0x20);
        assert_eq!(p[3].k, 0);
        assert_eq!(p[4].k, 0x4000_0000);
        assert_eq!(p[5].k, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32);
        // The filter proper starts after the insertion, with its own load of the number.
        assert_eq!((p[6].code, p[6].k), (0x20, 0));
    }
}
