//! Confining paths to the root directory.

use std::path::{Component, Path, PathBuf};

use crate::tool::ToolError;

/// Resolve `path` (relative to `root`, or absolute) to a path inside `root`, following symlinks
/// of every part that exists. `root` must be canonical. A path that leaves the root, through
/// `..`, an absolute path or a symlink, is an error.
pub fn confine(root: &Path, path: &str) -> Result<PathBuf, ToolError> {
    if path.is_empty() {
        return Err("empty path".into());
    }
    let given = Path::new(path);
    let mut cur = if given.is_absolute() {
        PathBuf::from("/")
    } else {
        root.to_path_buf()
    };
    // Once a part does not exist, nothing below it can be a symlink.
    let mut exists = true;
    for comp in given.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                cur.pop();
            }
            Component::Normal(part) => {
                cur.push(part);
                if exists {
                    match std::fs::canonicalize(&cur) {
                        Ok(real) => cur = real,
                        Err(_) => {
                            // A dangling symlink points somewhere we cannot check: refuse it.
                            if std::fs::symlink_metadata(&cur).is_ok() {
                                return Err(format!(
                                    "path {path} is a symlink whose target does not exist"
                                )
                                .into());
                            }
                            exists = false;
                        }
                    }
                }
            }
        }
    }
    if cur.starts_with(root) {
        Ok(cur)
    } else {
        Err(format!(
            "path {path} is outside the root directory {}",
            root.display()
        )
        .into())
    }
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
        assert_eq!(
            confine(&root, root.join("sub/a.txt").to_str().unwrap()).unwrap(),
            root.join("sub/a.txt")
        );
        assert!(confine(&root, "../outside.txt").is_err());
        assert!(confine(&root, "sub/../../etc/passwd").is_err());
        assert!(confine(&root, "/etc/passwd").is_err());
        assert!(confine(&root, "missing/../../x").is_err());
        assert!(confine(&root, "").is_err());
    }

    #[test]
    fn symlinks_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("inside.txt"), root.join("dangling")).unwrap();
        std::fs::write(root.join("target.txt"), "t").unwrap();
        std::os::unix::fs::symlink(root.join("target.txt"), root.join("good")).unwrap();
        assert!(confine(&root, "link/secret").is_err());
        assert!(confine(&root, "link/new-file").is_err());
        assert!(confine(&root, "dangling").is_err());
        assert_eq!(confine(&root, "good").unwrap(), root.join("target.txt"));
    }
}
