//! Walking a directory the way ripgrep and fd do, with ripgrep's own `ignore` crate: hidden
//! files and directories are skipped, `.gitignore`, `.ignore` and `.rgignore` files are honoured
//! (also outside a git repository: an agent's root is a project whether or not it has `.git`),
//! symlinks are not followed, and the walk runs on every core.
//!
//! The walk goes by path names, so a directory swapped for a symlink while it runs could lead it
//! out of the root. What it reports is therefore looked up again beneath the root
//! ([`Beneath`]): each entry is stat'ed, and each file opened, relative to its directory opened
//! through the root's handle, and dropped when that fails. No name or byte from outside the
//! root reaches a result.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::SystemTime;

use cap_std::fs::Dir;
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::WalkBuilder;

use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstatat, FileStat, Mode};

use super::path::RootDir;
use crate::tool::ToolError;

/// A walker over `dir` with the house defaults.
pub(crate) fn walker(dir: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(dir);
    b.hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .threads(threads());
    b.add_custom_ignore_filename(".rgignore");
    b
}

/// Worker threads for parallel walks: one per core, as ripgrep does (at most 12).
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(12)
}

/// Overrides from glob patterns, with ripgrep's `--glob` meaning: a pattern includes the files
/// it matches (and only those, once there is one), `!pattern` excludes.
pub(crate) fn overrides(dir: &Path, globs: &[&str]) -> Result<Override, ToolError> {
    let mut b = OverrideBuilder::new(dir);
    for g in globs {
        b.add(g)
            .map_err(|e| format!("bad glob pattern {g:?}: {e}"))?;
    }
    b.build()
        .map_err(|e| format!("bad glob patterns: {e}").into())
}

/// ripgrep's file types (`rust`, `py`, `js`, ...) with `name` selected.
pub(crate) fn types(name: &str) -> Result<Types, ToolError> {
    let mut b = TypesBuilder::new();
    b.add_defaults();
    let known = b.definitions().iter().any(|d| d.name() == name);
    if !known {
        return Err(format!(
            "unknown file type {name:?}; use a ripgrep type name such as rust, py, js, ts, go, \
             java, c, cpp, md, json, yaml, or use `glob` instead"
        )
        .into());
    }
    b.select(name);
    b.build()
        .map_err(|e| format!("file type {name:?}: {e}").into())
}

/// `path` relative to `base`, for a `path` the walk produced under `base` (so `base`'s bytes
/// are its prefix): a byte comparison, where `Path::strip_prefix` parses both paths into
/// components, which is a tenth of a walk's CPU over 100k files. A path that is not under
/// `base` comes back whole.
pub(crate) fn under<'p>(base: &Path, path: &'p Path) -> &'p Path {
    use std::os::unix::ffi::OsStrExt;
    let (b, p) = (base.as_os_str().as_bytes(), path.as_os_str().as_bytes());
    let Some(rest) = p.strip_prefix(b) else {
        return path;
    };
    match rest.first() {
        None => Path::new(""),
        Some(b'/') => Path::new(std::ffi::OsStr::from_bytes(&rest[1..])),
        // `base` ends in a separator (`/`), or `path` only shares a name prefix (`/a/bc` under
        // `/a/b`).
        Some(_) if b.ends_with(b"/") => Path::new(std::ffi::OsStr::from_bytes(rest)),
        Some(_) => path,
    }
}

/// Cancellation checked every [`Self::EVERY`] entries: `CancellationToken::is_cancelled` takes a
/// lock, which a walk over 100k entries should not take 100k times.
pub(crate) struct CancelCheck<'c> {
    token: &'c tokio_util::sync::CancellationToken,
    seen: u32,
}

impl<'c> CancelCheck<'c> {
    const EVERY: u32 = 64;

    pub fn new(token: &'c tokio_util::sync::CancellationToken) -> Self {
        CancelCheck { token, seen: 0 }
    }

    /// Whether the walk should stop.
    pub fn cancelled(&mut self) -> bool {
        self.seen = self.seen.wrapping_add(1);
        self.seen.is_multiple_of(Self::EVERY) && self.token.is_cancelled()
    }
}

/// Walked entries looked up again beneath the root, through the root's directory handle. A
/// walker thread visits one directory's entries together, so each directory is opened once (with
/// the kernel resolving it beneath the root) and each entry costs one `*at` call of its bare
/// name, never followed if it is a symlink.
pub(crate) struct Beneath<'r> {
    root: &'r RootDir,
    // The open directory and its path relative to the root, as bytes (compared as bytes:
    // `Path`'s `==` compares components).
    dir: Option<(Vec<u8>, Dir)>,
}

impl<'r> Beneath<'r> {
    pub fn new(root: &'r RootDir) -> Self {
        Beneath { root, dir: None }
    }

    /// The directory of the walked `path` (opened beneath the root) and its name; `None` when
    /// the path is not beneath the root, or its directory cannot be opened beneath it.
    fn parent<'p>(&mut self, path: &'p Path) -> Option<(BorrowedFd<'_>, &'p OsStr)> {
        let rel = under(self.root.path(), path);
        if rel.is_absolute() {
            return None;
        }
        let bytes = rel.as_os_str().as_bytes();
        let (parent, name) = match bytes.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&bytes[..slash], &bytes[slash + 1..]),
            None => (&b""[..], bytes),
        };
        if name.is_empty() {
            return None;
        }
        let name = OsStr::from_bytes(name);
        if parent.is_empty() {
            return Some((self.root.dir().as_fd(), name));
        }
        if self.dir.as_ref().is_none_or(|(p, _)| p != parent) {
            self.dir = None;
            let dir = self.root.dir().open_dir(OsStr::from_bytes(parent)).ok()?;
            self.dir = Some((parent.to_vec(), dir));
        }
        let (_, dir) = self.dir.as_ref()?;
        Some((dir.as_fd(), name))
    }

    /// The entry's status, not following a symlink; `None` when it is not beneath the root.
    pub fn stat(&mut self, path: &Path) -> Option<FileStat> {
        let (fd, name) = self.parent(path)?;
        fstatat(fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()
    }

    /// The entry's modification time; `None` when it is not beneath the root.
    pub fn mtime(&mut self, path: &Path) -> Option<SystemTime> {
        let st = self.stat(path)?;
        let secs = u64::try_from(st.st_mtime).ok()?;
        let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
        Some(std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos))
    }

    /// The walked regular file `path`, opened for reading without blocking and without following
    /// a symlink; `None` when it is not a regular file beneath the root.
    pub fn open_file(&mut self, path: &Path) -> Option<(std::fs::File, std::fs::Metadata)> {
        let (fd, name) = self.parent(path)?;
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let file = std::fs::File::from(openat(fd, name, flags, Mode::empty()).ok()?);
        // Checked on the opened file: the walk saw a file, but it may have been swapped since.
        let meta = file.metadata().ok()?;
        meta.is_file().then_some((file, meta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_strips_a_byte_prefix_at_a_separator_only() {
        let p = Path::new;
        assert_eq!(under(p("/a/b"), p("/a/b/c/d.rs")), p("c/d.rs"));
        assert_eq!(under(p("/a/b/"), p("/a/b/c")), p("c"));
        assert_eq!(under(p("/"), p("/x")), p("x"));
        assert_eq!(under(p("/a/b"), p("/a/b")), p(""));
        // A shared name prefix is not a parent.
        assert_eq!(under(p("/a/b"), p("/a/bc/d")), p("/a/bc/d"));
        assert_eq!(under(p("/a/b"), p("/z/b/c")), p("/z/b/c"));
        // Agrees with `strip_prefix` wherever the walk can produce the path.
        for (base, path) in [("/r", "/r/x/y"), ("/r/s", "/r/s/t.md"), ("./d", "./d/e")] {
            assert_eq!(under(p(base), p(path)), p(path).strip_prefix(base).unwrap());
        }
    }

    #[test]
    fn entries_are_looked_up_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let path = std::fs::canonicalize(dir.path()).unwrap();
        for name in ["a.txt", "sub/b.txt", "sub/c.txt"] {
            let f = path.join(name);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, name).unwrap();
        }
        let root = RootDir::open(&path).unwrap();
        let mut beneath = Beneath::new(&root);
        let mut seen = 0;
        for entry in walker(&path).build().flatten() {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                let want = entry.metadata().unwrap().modified().unwrap();
                assert_eq!(beneath.mtime(entry.path()), Some(want));
                let mut text = String::new();
                use std::io::Read;
                beneath
                    .open_file(entry.path())
                    .unwrap()
                    .0
                    .read_to_string(&mut text)
                    .unwrap();
                assert!(entry.path().ends_with(&text), "{text}");
                seen += 1;
            }
        }
        assert_eq!(seen, 3);
        // Paths outside the root, and through a symlink out of it, are not looked up.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), path.join("link")).unwrap();
        assert!(beneath.stat(&outside.path().join("x")).is_none());
        assert!(beneath.stat(&path.join("link/x")).is_none());
        assert!(beneath.open_file(&path.join("link/x")).is_none());
        // A symlink is stat'ed, not followed, and never opened.
        std::os::unix::fs::symlink("a.txt", path.join("alias")).unwrap();
        assert!(beneath.stat(&path.join("alias")).is_some());
        assert!(beneath.open_file(&path.join("alias")).is_none());
        assert!(beneath.open_file(&path.join("sub")).is_none());
    }
}
