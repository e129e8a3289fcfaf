//! The scratch directory of a client's commands: `$TMPDIR` for bash and background shells, and
//! (besides the root) the one place the sandbox lets them write. Made beneath the system's temp
//! directory on the first command, private to the user (0700), and removed with the client.

use std::path::Path;
use std::sync::OnceLock;

/// A lazily made temp directory, removed when dropped.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    dir: OnceLock<Result<tempfile::TempDir, String>>,
}

impl Scratch {
    /// The directory, made now if it does not exist yet.
    pub fn path(&self) -> std::io::Result<&Path> {
        self.dir
            .get_or_init(|| {
                use std::os::unix::fs::PermissionsExt;
                tempfile::Builder::new()
                    .prefix("contenox-")
                    .permissions(std::fs::Permissions::from_mode(0o700))
                    .tempdir()
                    .map_err(|e| {
                        format!(
                            "cannot make a scratch directory beneath {}: {e}",
                            std::env::temp_dir().display()
                        )
                    })
            })
            .as_ref()
            .map(|d| d.path())
            .map_err(|e| std::io::Error::other(e.clone()))
    }

    /// The directory, if it was made.
    #[cfg(test)]
    pub fn made(&self) -> Option<std::path::PathBuf> {
        match self.dir.get() {
            Some(Ok(d)) => Some(d.path().to_path_buf()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_on_first_use_and_removed_on_drop() {
        let scratch = Scratch::default();
        assert_eq!(scratch.made(), None);
        let path = scratch.path().unwrap().to_path_buf();
        assert!(path.is_dir());
        assert_eq!(scratch.path().unwrap(), path);
        std::fs::write(path.join("f"), "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o700
        );
        drop(scratch);
        assert!(!path.exists());
    }
}
