//! Walking a directory the way ripgrep and fd do, with ripgrep's own `ignore` crate: hidden
//! files and directories are skipped, `.gitignore`, `.ignore` and `.rgignore` files are honoured
//! (also outside a git repository: an agent's root is a project whether or not it has `.git`),
//! symlinks are not followed (so a walk never leaves the root), and the walk runs on every core.

use std::path::Path;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::WalkBuilder;

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

/// Modification times of walked files, looked up relative to their directory: a walker thread
/// visits one directory's entries together, so each directory is opened once and each file
/// costs one `fstatat` of its bare name instead of a lookup of its whole path.
#[derive(Default)]
pub(crate) struct Mtimes {
    // The open directory and its path's bytes (compared as bytes: `Path`'s `==` compares
    // components).
    dir: Option<(Vec<u8>, std::os::fd::OwnedFd)>,
}

impl Mtimes {
    /// The entry's modification time (the epoch when it cannot be read).
    pub fn of(&mut self, entry: &ignore::DirEntry) -> std::time::SystemTime {
        self.fast(entry.path()).unwrap_or_else(|| {
            entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(std::time::SystemTime::UNIX_EPOCH)
        })
    }

    fn fast(&mut self, path: &Path) -> Option<std::time::SystemTime> {
        use nix::fcntl::{open, AtFlags, OFlag};
        use nix::sys::stat::{fstatat, Mode};
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let slash = bytes.iter().rposition(|&b| b == b'/')?;
        let (parent, name) = (&bytes[..slash.max(1)], &bytes[slash + 1..]);
        if name.is_empty() {
            return None;
        }
        let name = std::ffi::OsStr::from_bytes(name);
        if self.dir.as_ref().is_none_or(|(p, _)| p != parent) {
            let fd = open(
                std::ffi::OsStr::from_bytes(parent),
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            self.dir = Some((parent.to_vec(), fd));
        }
        let (_, fd) = self.dir.as_ref()?;
        let st = fstatat(fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        let secs = u64::try_from(st.st_mtime).ok()?;
        let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
        Some(std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos))
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
    fn mtimes_match_metadata() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.txt", "sub/b.txt", "sub/c.txt"] {
            let f = dir.path().join(name);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, name).unwrap();
        }
        let mut mtimes = Mtimes::default();
        let mut seen = 0;
        for entry in walker(dir.path()).build().flatten() {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                let want = entry.metadata().unwrap().modified().unwrap();
                assert_eq!(mtimes.of(&entry), want, "{}", entry.path().display());
                seen += 1;
            }
        }
        assert_eq!(seen, 3);
    }
}
