//! Atomic file writes beneath the root: a temporary file in the target's directory, created
//! and renamed through the same confined directory handle, synced, then renamed over the
//! target; the directory is synced after the rename. A crash or a full disk leaves the old file
//! whole, and the temporary file is removed on every failure.
//!
//! Modes: a replaced file keeps its mode (and, where the process may, its owner and group); a
//! new file gets what the umask gives (`0666 & !umask`, applied by the kernel). A target without
//! write permission for its owner is refused unless the caller says otherwise.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};

use super::path::{dot, shown, RootDir};
use crate::tool::ToolError;

/// How an atomic write treats the file it replaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Replace a file that has no write permission for its owner (default: refuse). No builtin
    /// sets it.
    pub replace_read_only: bool,
}

impl WriteOptions {
    /// Replace read-only files too.
    pub fn replace_read_only(mut self, yes: bool) -> Self {
        self.replace_read_only = yes;
        self
    }
}

/// What an atomic write did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Written {
    /// Whether a file was replaced (else one was created).
    pub existed: bool,
    /// The written file relative to the root, symlinks resolved, as shown to the model (control
    /// and invisible formatting characters escaped, cut at 300 characters).
    pub shown: String,
}

/// Write `bytes` atomically to the model's path `given` beneath `root`, creating missing parent
/// directories. A symlink as the target is followed when it stays beneath the root (its target
/// is replaced, the link stays). Directories, FIFOs, devices and sockets are refused, and so is
/// a read-only file unless `options` allow it.
pub fn atomic_write(
    root: &RootDir,
    given: &str,
    bytes: &[u8],
    options: WriteOptions,
) -> Result<Written, ToolError> {
    if given.ends_with('/') {
        return Err(format!("{} names a directory, not a file", shown(given)).into());
    }
    let at = root.locate(given)?;
    let target = at.relative();
    let shown_target = target.display().to_string();
    let (Some(name), Some(parent)) = (target.file_name(), target.parent()) else {
        return Err(format!("{} is a directory, not a file", shown(given)).into());
    };
    // The directories to create: every missing name but the last.
    let mut dir_path = at.real.clone();
    for part in at.missing.iter().take(at.missing.len().saturating_sub(1)) {
        dir_path.push(part);
        if let Err(e) = root.dir().create_dir(&dir_path) {
            let exists = e.kind() == io::ErrorKind::AlreadyExists && root.dir().is_dir(&dir_path);
            if !exists {
                return Err(root.error("create the directories of", given, e));
            }
        }
    }
    let dir = root
        .dir()
        .open_dir(dot(parent))
        .map_err(|e| root.error("write", given, e))?;
    let existed = write_in(&dir, name, bytes, options).map_err(|e| match e {
        Refused::Io(e) => root.error("write", given, e),
        Refused::Because(why) => format!("{} {why}", shown(given)).into(),
    })?;
    Ok(Written {
        existed,
        shown: shown(&shown_target).into_owned(),
    })
}

/// Why a write did not happen.
#[derive(Debug)]
enum Refused {
    /// The target is of a kind the write refuses (the sentence after the path).
    Because(&'static str),
    Io(io::Error),
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        Refused::Io(e)
    }
}

/// Write `bytes` as `name` in `dir`: a temporary file renamed over it. Returns whether a file
/// was replaced.
fn write_in(dir: &Dir, name: &OsStr, bytes: &[u8], options: WriteOptions) -> Result<bool, Refused> {
    write_in_then(dir, name, bytes, options, || {})
}

/// [`write_in`], running `before_rename` between the synced temporary file and the rename (the
/// tests make the rename fail there, as a racing process would).
fn write_in_then(
    dir: &Dir,
    name: &OsStr,
    bytes: &[u8],
    options: WriteOptions,
    before_rename: impl FnOnce(),
) -> Result<bool, Refused> {
    let existing = match dir.symlink_metadata(name) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(m) = &existing {
        let t = m.file_type();
        if t.is_dir() {
            return Err(Refused::Because("is a directory, not a file"));
        }
        if t.is_symlink() {
            // The path was resolved through its symlinks a moment ago: it changed since.
            return Err(Refused::Because(
                "was replaced by a symlink while it was written; it was left unchanged",
            ));
        }
        if !t.is_file() {
            return Err(Refused::Because(
                "is not a regular file (a FIFO, device or socket); write only replaces regular \
                 files",
            ));
        }
        if m.mode() & 0o200 == 0 && !options.replace_read_only {
            return Err(Refused::Because(
                "is read-only (its owner has no write permission); it was left unchanged",
            ));
        }
    }
    let (tmp_name, file) = create_temp(dir)?;
    let mut tmp = TempFile {
        dir,
        name: tmp_name,
        kept: false,
    };
    let mut file = file;
    file.write_all(bytes)?;
    if let Some(m) = &existing {
        file.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
        keep_owner(&file, m.uid(), m.gid());
    }
    file.sync_all()?;
    drop(file);
    before_rename();
    dir.rename(&tmp.name, dir, name)?;
    tmp.kept = true;
    sync_dir(dir)?;
    Ok(existing.is_some())
}

/// A new temporary file in `dir`, created exclusively (never through a planted symlink) with
/// mode 0666, which the kernel narrows by the umask.
fn create_temp(dir: &Dir) -> io::Result<(String, std::fs::File)> {
    let mut opts = OpenOptions::new();
    opts.write(true)
        .create_new(true)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    let mut last = None;
    for _ in 0..16 {
        let name = format!(".contenox-{:016x}.tmp", rand::random::<u64>());
        match dir.open_with(&name, &opts) {
            Ok(f) => return Ok((name, f.into_std())),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("cannot create a temporary file")))
}

/// Give the new file the replaced file's owner and group, where the process may (root, or a
/// group the user is in); a file the process may not chown keeps the writer's.
fn keep_owner(file: &std::fs::File, uid: u32, gid: u32) {
    use std::os::unix::fs::{fchown, MetadataExt as _};
    let Ok(now) = file.metadata() else { return };
    if now.uid() == uid && now.gid() == gid {
        return;
    }
    if fchown(file, Some(uid), Some(gid)).is_err() {
        let _ = fchown(file, None, Some(gid));
    }
}

/// fsync a directory, so a rename in it survives a crash. The handle cap-std opens may be an
/// `O_PATH` one, which cannot be synced, so the directory is opened again (beneath itself) for
/// reading. File systems that cannot sync a directory (some FUSE ones answer EINVAL) are taken
/// at their word.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    let readable = dir.open_with(".", OpenOptions::new().read(true))?;
    match readable.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

/// A temporary file that is removed when dropped, unless it was renamed into place.
struct TempFile<'d> {
    dir: &'d Dir,
    name: String,
    kept: bool,
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = self.dir.remove_file(Path::new(&self.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn root() -> (tempfile::TempDir, RootDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = std::fs::canonicalize(dir.path()).unwrap();
        let root = RootDir::open(&path).unwrap();
        (dir, root)
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn entries(p: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn keeps_the_mode_and_leaves_no_temp() {
        let (_d, root) = root();
        let p = root.path().join("x.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
        let w = atomic_write(&root, "x.sh", b"new", WriteOptions::default()).unwrap();
        assert!(w.existed);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(mode(&p), 0o751);
        assert_eq!(entries(root.path()), ["x.sh"]);
        let w = atomic_write(&root, "a/b/c.txt", b"deep", WriteOptions::default()).unwrap();
        assert!(!w.existed);
        assert_eq!(w.shown, "a/b/c.txt");
        assert_eq!(
            std::fs::read_to_string(root.path().join("a/b/c.txt")).unwrap(),
            "deep"
        );
    }

    #[test]
    fn new_files_get_the_umask_mode() {
        // The umask is process-wide: read it back without changing it for long, in a child.
        let out = std::process::Command::new("sh")
            .args(["-c", "umask"])
            .output()
            .unwrap();
        let umask = u32::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 8).unwrap();
        let (_d, root) = root();
        atomic_write(&root, "new.txt", b"x", WriteOptions::default()).unwrap();
        assert_eq!(mode(&root.path().join("new.txt")), 0o666 & !umask);
        assert_ne!(
            0o666 & !umask,
            0o600,
            "the test needs a umask other than 077"
        );
    }

    #[test]
    fn read_only_targets_are_refused_unless_allowed() {
        let (_d, root) = root();
        let p = root.path().join("ro.txt");
        std::fs::write(&p, "keep").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = atomic_write(&root, "ro.txt", b"new", WriteOptions::default()).unwrap_err();
        assert!(err.message.contains("read-only"), "{err:?}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep");
        assert_eq!(entries(root.path()), ["ro.txt"]);
        let opts = WriteOptions::default().replace_read_only(true);
        atomic_write(&root, "ro.txt", b"new", opts).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(mode(&p), 0o444);
    }

    #[test]
    fn special_files_and_directories_are_refused() {
        let (_d, root) = root();
        nix::unistd::mkfifo(
            &root.path().join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        std::fs::create_dir(root.path().join("d")).unwrap();
        for p in ["fifo", "d", "d/", "."] {
            let err = atomic_write(&root, p, b"x", WriteOptions::default()).unwrap_err();
            assert!(
                err.message.contains("not a regular file") || err.message.contains("directory"),
                "{p}: {err:?}"
            );
        }
        assert_eq!(entries(root.path()), ["d", "fifo"]);
    }

    #[test]
    fn the_temp_file_is_removed_when_the_rename_fails() {
        let (_d, root) = root();
        let dir = root.dir().open_dir(".").unwrap();
        // A non-empty directory appears where the file was about to be renamed to.
        let full = root.path().join("full");
        let r = write_in_then(
            &dir,
            OsStr::new("full"),
            b"x",
            WriteOptions::default(),
            || {
                std::fs::create_dir(&full).unwrap();
                std::fs::write(full.join("x"), "x").unwrap();
            },
        );
        assert!(matches!(r, Err(Refused::Io(_))), "{r:?}");
        assert_eq!(entries(root.path()), ["full"]);
        assert_eq!(entries(&full), ["x"]);
    }
}
