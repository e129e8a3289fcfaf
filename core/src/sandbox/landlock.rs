//! Landlock (Linux 5.13+): commands may read everything but write only beneath the root, the
//! scratch directory, the configured `writable` directories and a few harmless devices. Being in
//! a Landlock domain also denies ptrace-class access to processes outside it, so
//! `/proc/<host>/environ` and `/proc/<host>/mem` are unreadable; from ABI 6 on, signals to
//! processes outside the domain and connections to abstract Unix sockets made outside it are
//! refused; from ABI 4 on, with the network off, TCP bind and connect are refused too.
//!
//! The crate `landlock` builds the ruleset (it knows which access rights each ABI has); the
//! ruleset is made in the parent and only `landlock_restrict_self` runs in the child.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::OnceLock;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

/// Devices every command may write to (and, from ABI 5, send ioctls to). No terminal: commands
/// run in a session of their own without one, and `/dev/pts` is left out on purpose (a writable
/// pseudo-terminal of the user's would let a command type into it).
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// The kernel's Landlock ABI version, or why there is none.
pub(crate) fn abi() -> Result<u32, String> {
    static ABI_VERSION: OnceLock<Result<u32, String>> = OnceLock::new();
    ABI_VERSION
        .get_or_init(|| {
            // SAFETY: the version query takes no pointer (NULL, 0) and has no side effect.
            let v = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<u8>(),
                    0usize,
                    1u32, // LANDLOCK_CREATE_RULESET_VERSION
                )
            };
            if v >= 1 {
                return Ok(v as u32);
            }
            let e = std::io::Error::last_os_error();
            Err(match e.raw_os_error() {
                Some(libc::ENOSYS) => "the kernel has no Landlock (Linux 5.13+ built with \
                                       CONFIG_SECURITY_LANDLOCK)"
                    .to_string(),
                Some(libc::EOPNOTSUPP) => {
                    "Landlock is built in but not enabled (add `landlock` to the lsm= boot \
                     parameter)"
                        .to_string()
                }
                _ => format!("the Landlock version query failed: {e}"),
            })
        })
        .clone()
}

/// A ruleset for one command, as the file descriptor `landlock_restrict_self` takes.
pub(crate) fn ruleset(
    abi: u32,
    writable: &[&Path],
    extra: &[std::path::PathBuf],
    network: bool,
) -> Result<OwnedFd, String> {
    let abi = ABI::from(abi as i32);
    // Every write right, less making device nodes (nothing a project needs; a block device made
    // beneath the root would be a way to write the disk).
    let handled = AccessFs::from_write(abi);
    let write = handled & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let fail = |e: landlock::RulesetError| format!("Landlock ruleset: {e}");
    // The rights asked for are those of the kernel's own ABI, so anything the kernel does not
    // do is an error here rather than a silent downgrade.
    let mut rules = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(fail)?;
    if abi >= ABI::V6 {
        rules = rules.scope(Scope::from_all(abi)).map_err(fail)?;
    }
    if !network && abi >= ABI::V4 {
        rules = rules
            .handle_access(AccessNet::from_all(abi))
            .map_err(fail)?;
    }
    let mut created = rules.create().map_err(fail)?;
    for dir in writable {
        let fd = PathFd::new(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        created = created
            .add_rule(PathBeneath::new(fd, write))
            .map_err(fail)?;
    }
    // Devices and configured directories that do not exist are left out.
    created = created
        .add_rules(path_beneath_rules(DEVICES, write))
        .map_err(fail)?
        .add_rules(path_beneath_rules(extra, write))
        .map_err(fail)?;
    Option::<OwnedFd>::from(created).ok_or_else(|| "Landlock made no ruleset".to_string())
}

/// Between fork and exec: enforce `ruleset` on the calling (single-threaded) child. Only the
/// raw system call, which is async-signal-safe; no_new_privs must be set already.
pub(crate) fn restrict_self(ruleset: libc::c_int) -> std::io::Result<()> {
    // SAFETY: a plain system call on a valid ruleset descriptor.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
