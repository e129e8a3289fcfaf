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

/// Modification times of walked files, looked up relative to their directory: a walker thread
/// visits one directory's entries together, so each directory is opened once and each file
/// costs one `fstatat` of its bare name instead of a lookup of its whole path.
#[derive(Default)]
pub(crate) struct Mtimes {
    dir: Option<(std::path::PathBuf, std::os::fd::OwnedFd)>,
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
        let (parent, name) = (path.parent()?, path.file_name()?);
        if self.dir.as_ref().is_none_or(|(p, _)| p != parent) {
            let fd = open(
                parent,
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            self.dir = Some((parent.to_path_buf(), fd));
        }
        let (_, fd) = self.dir.as_ref()?;
        let st = fstatat(fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        let secs = u64::try_from(st.st_mtime).ok()?;
        let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
        Some(std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos))
    }
}
