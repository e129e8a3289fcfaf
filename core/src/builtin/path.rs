//! Confining file-tool paths to the root directory, with the kernel's help.
//!
//! A file tool opens the root once per call ([`RootDir`]) and does every open, create, rename,
//! mkdir and stat through that directory handle with `cap-std`. On Linux 5.6 and later cap-std
//! asks the kernel to resolve each path beneath the handle (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS`); on older kernels and other systems it resolves one component at a
//! time with `O_NOFOLLOW` and follows symlinks itself, never above the handle. No path is
//! checked first and used by name later: a `..` after a missing directory, a symlink that leads
//! outside, or a symlink swapped while a tool runs fails inside the lookup that does the work.
//!
//! Symlinks are followed while they stay beneath the root and are relative; a symlink with an
//! absolute target is refused even when it points inside the root (the kernel's
//! `RESOLVE_BENEATH` rule). What confinement promises and what it does not: docs/decisions.md,
//! "Builtins".

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, Metadata, OpenOptions, OpenOptionsExt};

use crate::tool::ToolError;

/// The root directory, opened: every file-tool operation goes through it.
#[derive(Debug)]
pub struct RootDir {
    dir: Dir,
    path: PathBuf,
}

/// Where a path leads beneath the root: the part that exists, resolved by the kernel, and the
/// names below it that do not exist yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The existing part, relative to the root, every symlink resolved (`""` for the root).
    pub real: PathBuf,
    /// The plain names below `real` that do not exist (empty when the whole path exists).
    pub missing: Vec<OsString>,
}

impl Located {
    /// The whole path relative to the root: `real` joined with the missing names.
    pub fn relative(&self) -> PathBuf {
        let mut p = self.real.clone();
        p.extend(&self.missing);
        p
    }
}

impl RootDir {
    /// Open the root directory `path` (the client's canonical root).
    pub fn open(path: &Path) -> io::Result<RootDir> {
        let dir = Dir::open_ambient_dir(path, ambient_authority())?;
        Ok(RootDir {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// Open the root of a tool call, as an error result when it cannot be opened.
    pub(crate) fn for_call(path: &Path) -> Result<RootDir, ToolError> {
        RootDir::open(path)
            .map_err(|e| format!("cannot open the root directory {}: {e}", path.display()).into())
    }

    /// The root's path, as the client gave it (canonical).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory handle itself.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The model's path as a path relative to the root, without touching the file system: a
    /// relative path stays as it is (`.` parts dropped), an absolute path must start with the
    /// root. `..` and symlinks are left for the kernel to resolve. `""` stands for the root.
    pub fn relative(&self, given: &str) -> Result<PathBuf, ToolError> {
        if given.is_empty() {
            return Err("empty path".into());
        }
        if given.contains('\0') {
            return Err(format!("path {} contains a NUL byte", shown(given)).into());
        }
        let path = Path::new(given);
        let rest = if path.is_absolute() {
            path.strip_prefix(&self.path)
                .map_err(|_| self.outside(given))?
        } else {
            path
        };
        Ok(rest
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect())
    }

    /// Resolve the model's path beneath the root: the deepest part of it that exists, through
    /// the kernel, and the plain names below that do not exist yet. A `..` below a missing
    /// directory, a dangling symlink and every way out of the root are errors naming `given`.
    pub fn locate(&self, given: &str) -> Result<Located, ToolError> {
        self.locate_relative(&self.relative(given)?, given)
    }

    /// [`Self::locate`] for a path already relative to the root; errors name `given`.
    pub(crate) fn locate_relative(&self, rel: &Path, given: &str) -> Result<Located, ToolError> {
        use std::os::unix::ffi::OsStrExt;
        if rel.as_os_str().as_bytes().contains(&0) {
            return Err(format!("path {} contains a NUL byte", shown(given)).into());
        }
        let parts: Vec<Component<'_>> = rel.components().collect();
        let prefix = |cut: usize| -> PathBuf {
            if cut == 0 {
                PathBuf::from(".")
            } else {
                parts[..cut].iter().collect()
            }
        };
        // The longest prefix that exists; the names after it must be plain names.
        let found = longest_resolving(parts.len(), |cut| {
            match self.dir.canonicalize(prefix(cut)) {
                Ok(real) => Ok(Some(real)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(self.error("resolve", given, e)),
            }
        })?;
        let Some((cut, real)) = found else {
            return Err(format!("cannot resolve {}", shown(given)).into());
        };
        // The first name that does not resolve may be a symlink whose target is missing (the
        // names after it cannot be looked at: the walk fails at it).
        if cut < parts.len() && self.dir.symlink_metadata(prefix(cut + 1)).is_ok() {
            return Err(format!(
                "path {} leads through a symlink whose target does not exist",
                shown(given)
            )
            .into());
        }
        let mut missing = Vec::with_capacity(parts.len() - cut);
        for part in &parts[cut..] {
            match part {
                Component::Normal(name) => missing.push(name.to_os_string()),
                _ => {
                    return Err(format!(
                        "cannot resolve {}: `..` below a directory that does not exist",
                        shown(given)
                    )
                    .into())
                }
            }
        }
        let real = if real == Path::new(".") {
            PathBuf::new()
        } else {
            real
        };
        Ok(Located { real, missing })
    }

    /// The real absolute path of an existing file or directory beneath the root.
    pub(crate) fn existing(&self, given: &str) -> Result<(PathBuf, Metadata), ToolError> {
        let at = self.locate(given)?;
        if !at.missing.is_empty() {
            return Err(format!("path {} does not exist", shown(given)).into());
        }
        let meta = self
            .dir
            .metadata(dot(&at.real))
            .map_err(|e| self.error("read", given, e))?;
        Ok((self.path.join(&at.real), meta))
    }

    /// Open an existing regular file beneath the root for reading, without blocking: FIFOs,
    /// devices, sockets and directories are refused, checked on the opened file itself.
    pub(crate) fn open_regular(
        &self,
        given: &str,
    ) -> Result<(std::fs::File, std::fs::Metadata), ToolError> {
        let rel = self.relative(given)?;
        let rel = dot(&rel);
        // Looked at first so that a device or a FIFO is not even opened (opening some devices
        // has effects); checked again on the opened file, which is what counts.
        let before = self
            .dir
            .metadata(rel)
            .map_err(|e| self.error("read", given, e))?;
        refuse_non_regular(given, before.file_type().is_dir(), kind_of(&before))?;
        let mut opts = OpenOptions::new();
        opts.read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC);
        let file = self
            .dir
            .open_with(rel, &opts)
            .map_err(|e| self.error("read", given, e))?
            .into_std();
        let meta = file.metadata().map_err(|e| self.error("read", given, e))?;
        refuse_non_regular(given, meta.is_dir(), std_kind_of(&meta))?;
        Ok((file, meta))
    }

    /// The error result for a failed operation on `given`: a way out of the root says so, any
    /// other error names the operation and the system's reason.
    pub(crate) fn error(&self, verb: &str, given: &str, e: io::Error) -> ToolError {
        if is_escape(&e) {
            self.outside(given)
        } else {
            format!("cannot {verb} {}: {e}", shown(given)).into()
        }
    }

    /// The error result for a path that leads outside the root.
    pub(crate) fn outside(&self, given: &str) -> ToolError {
        format!(
            "path {} is outside the root directory {} (only relative symlinks that stay inside \
             it are followed)",
            shown(given),
            self.path.display()
        )
        .into()
    }
}

/// The longest of the prefixes `0..=len` of a path that resolves, and what `probe` found for it,
/// in O(log len) probes: `probe(k)` resolves the first `k` components and answers `Some` (it
/// resolves), `None` (not found) or an error, which ends the search. The kernel walks a path one
/// component at a time, so if a prefix resolves every shorter one does, and every prefix longer
/// than the first missing component fails as that component does: a binary search finds the
/// same prefix as trying every length from the longest down (which was quadratic in the path's
/// length, seconds for a path of thousands of components). The whole path is probed first,
/// since it usually exists. `None` when not even the empty prefix (the root) resolves.
fn longest_resolving<T, E>(
    len: usize,
    mut probe: impl FnMut(usize) -> Result<Option<T>, E>,
) -> Result<Option<(usize, T)>, E> {
    if let Some(whole) = probe(len)? {
        return Ok(Some((len, whole)));
    }
    // Invariant: every prefix of length >= hi is missing; `best` is the longest found below lo.
    let (mut lo, mut hi) = (0, len);
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match probe(mid)? {
            Some(found) => {
                best = Some((mid, found));
                lo = mid + 1;
            }
            None => hi = mid,
        }
    }
    Ok(best)
}

/// Whether `e` is cap-std's (or the kernel's) refusal of a path that leaves the directory.
fn is_escape(e: &io::Error) -> bool {
    // cap-std reports an escape as a PermissionDenied error of its own, without an OS code;
    // a refused absolute symlink or `..` above the handle surfaces as EXDEV.
    (e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none())
        || e.raw_os_error() == Some(libc::EXDEV)
}

/// `"."` for the root itself (cap-std takes `.`, not `""`).
pub(crate) fn dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

fn refuse_non_regular(given: &str, is_dir: bool, kind: Option<&str>) -> Result<(), ToolError> {
    if is_dir {
        return Err(format!("{} is a directory, not a file", shown(given)).into());
    }
    match kind {
        None => Ok(()),
        Some(kind) => Err(format!(
            "{} is {kind}, not a regular file; file tools only read and write regular files",
            shown(given)
        )
        .into()),
    }
}

/// What a non-regular, non-directory entry is (`None` for a regular file or a directory).
fn kind_of(meta: &Metadata) -> Option<&'static str> {
    use cap_std::fs::FileTypeExt;
    let t = meta.file_type();
    special_kind(
        t.is_file() || t.is_dir(),
        [
            t.is_fifo(),
            t.is_char_device(),
            t.is_block_device(),
            t.is_socket(),
        ],
    )
}

/// [`kind_of`] for the metadata of an opened file.
fn std_kind_of(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    special_kind(
        t.is_file() || t.is_dir(),
        [
            t.is_fifo(),
            t.is_char_device(),
            t.is_block_device(),
            t.is_socket(),
        ],
    )
}

/// The name of a special file's kind, from `[fifo, char device, block device, socket]`.
fn special_kind(ordinary: bool, kinds: [bool; 4]) -> Option<&'static str> {
    if ordinary {
        return None;
    }
    let names = ["a FIFO", "a character device", "a block device", "a socket"];
    Some(
        kinds
            .iter()
            .zip(names)
            .find(|(is, _)| **is)
            .map_or("a special file", |(_, name)| name),
    )
}

/// The model's path as messages show it: control and invisible formatting characters escaped,
/// cut at 300 characters ([`crate::shown`]).
pub(crate) use crate::shown::shown;

/// Resolve `path` (relative to `root`, or absolute inside it) beneath `root` with the kernel,
/// and return the real path it names: the file or directory when it exists (every symlink
/// resolved), else its deepest existing directory joined with the names that do not exist.
/// `root` must be canonical. A path that leaves the root, through `..`, an absolute path or a
/// symlink, is an error; so is a dangling symlink and a `..` below a missing directory.
///
/// This is the resolver the file tools use, as one plain function (the fuzz target's entry
/// point). The returned path is for showing and comparing: tools do their work through
/// [`RootDir`], never by a path checked first and opened later.
pub fn confine(root: &Path, path: &str) -> Result<PathBuf, ToolError> {
    let dir = RootDir::for_call(root)?;
    let at = dir.locate(path)?;
    Ok(root.join(at.relative()))
}

/// How a confined path is shown to the model: relative to the root.
pub fn display_path(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn the_longest_resolving_prefix_takes_logarithmic_probes() {
        // A path of 4096 components whose first `exist` prefixes resolve: the search finds the
        // same prefix as trying every length would, in at most 2 + log2(4097) probes.
        let len = 4096;
        for exist in [0, 1, 2, 7, 2048, 4095, 4096] {
            let mut probes = 0;
            let found = longest_resolving::<usize, ()>(len, |k| {
                probes += 1;
                Ok((k <= exist).then_some(k * 10))
            })
            .unwrap();
            assert_eq!(found, Some((exist, exist * 10)), "exist {exist}");
            assert!(probes <= 14, "exist {exist}: {probes} probes");
        }
        // The root itself missing: nothing resolves.
        assert_eq!(longest_resolving::<(), ()>(3, |_| Ok(None)).unwrap(), None);
        // An error ends the search and is returned.
        let err =
            longest_resolving::<(), &str>(100, |k| if k > 40 { Ok(None) } else { Err("denied") });
        assert_eq!(err, Err("denied"));
    }

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        assert_eq!(confine(&root, "sub/a.txt").unwrap(), root.join("sub/a.txt"));
        assert_eq!(
            confine(&root, "sub/../new.txt").unwrap(),
            root.join("new.txt")
        );
        assert_eq!(confine(&root, "a/b/c").unwrap(), root.join("a/b/c"));
        assert_eq!(confine(&root, ".").unwrap(), root);
        assert_eq!(
            confine(&root, root.join("sub/a.txt").to_str().unwrap()).unwrap(),
            root.join("sub/a.txt")
        );
        for bad in [
            "../outside.txt",
            "sub/../../etc/passwd",
            "/etc/passwd",
            "..",
            "/",
        ] {
            let err = confine(&root, bad).unwrap_err();
            assert!(err.message.contains("outside the root"), "{bad}: {err:?}");
        }
        // `..` below a missing directory is never resolved lexically.
        assert!(confine(&root, "missing/../../x").is_err());
        assert!(confine(&root, "missing/../sub").is_err());
        assert!(confine(&root, "").is_err());
        assert!(confine(&root, "a\0b").unwrap_err().message.contains("NUL"));
    }

    #[test]
    fn symlinks_are_resolved_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path(), root.join("link")).unwrap();
        symlink("inside.txt", root.join("dangling")).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/target.txt"), "t").unwrap();
        symlink("real/target.txt", root.join("good")).unwrap();
        symlink("real", root.join("alias")).unwrap();
        symlink(root.join("real"), root.join("absolute")).unwrap();
        assert!(confine(&root, "link/secret").is_err());
        assert!(confine(&root, "link/new-file").is_err());
        assert!(confine(&root, "nope/../link/secret").is_err());
        let err = confine(&root, "dangling").unwrap_err();
        assert!(err.message.contains("does not exist"), "{err:?}");
        assert_eq!(
            confine(&root, "good").unwrap(),
            root.join("real/target.txt")
        );
        assert_eq!(
            confine(&root, "alias/new.txt").unwrap(),
            root.join("real/new.txt")
        );
        assert_eq!(
            confine(&root, "alias/../good").unwrap(),
            root.join("real/target.txt")
        );
        // An absolute symlink is refused even when it points inside.
        assert!(confine(&root, "absolute/target.txt").is_err());
    }

    #[test]
    fn shown_paths_are_cut_and_escaped() {
        assert_eq!(shown("a/b"), "a/b");
        assert_eq!(shown("a\nb"), "a\\nb");
        let long = "x".repeat(1000);
        assert_eq!(shown(&long).chars().count(), 301);
    }
}
