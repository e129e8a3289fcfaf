//! Loading a whole file beneath the root, capped: what `edit`, `multi_edit`, `notebook_edit`
//! and `read` of a notebook work on. The file is opened without blocking and must be regular
//! (see [`RootDir::open_regular`]); a file over the cap is a clear error, and a file that grows
//! past the cap while it is read is cut off at the cap rather than read to its end.

use std::io::Read;

use super::path::{shown, RootDir};
use crate::tool::ToolError;

/// The largest file the editing tools (and `read` of a notebook) load: 16 MiB.
pub const MAX_LOAD_BYTES: u64 = 16 << 20;

/// The bytes of the regular file `given` beneath `root`, at most `cap` of them.
pub(crate) fn load_bytes(root: &RootDir, given: &str, cap: u64) -> Result<Vec<u8>, ToolError> {
    let (file, meta) = root.open_regular(given)?;
    let too_big = |size: u64| -> ToolError {
        format!(
            "{} is {size} bytes, over the {} MiB this tool loads; use bash (sed, head, split) for \
             files this large",
            shown(given),
            cap >> 20
        )
        .into()
    };
    if meta.len() > cap {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| root.error("read", given, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`load_bytes`] as UTF-8 text.
pub(crate) fn load_text(root: &RootDir, given: &str, cap: u64) -> Result<String, ToolError> {
    let bytes = load_bytes(root, given, cap)?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{} is not UTF-8 text (invalid byte at offset {}); only text files can be edited",
            shown(given),
            e.utf8_error().valid_up_to()
        )
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_and_regular_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = std::fs::canonicalize(dir.path()).unwrap();
        let root = RootDir::open(&path).unwrap();
        std::fs::write(path.join("small.txt"), "hello").unwrap();
        std::fs::write(path.join("big.txt"), vec![b'x'; 100]).unwrap();
        std::fs::write(path.join("bad.txt"), b"ok\xff").unwrap();
        nix::unistd::mkfifo(
            &path.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        assert_eq!(load_text(&root, "small.txt", 10).unwrap(), "hello");
        let err = load_text(&root, "big.txt", 10).unwrap_err();
        assert!(err.message.contains("100 bytes"), "{err:?}");
        let err = load_text(&root, "bad.txt", 10).unwrap_err();
        assert!(err.message.contains("not UTF-8"), "{err:?}");
        // A FIFO is refused without blocking (nobody writes to it).
        let err = load_text(&root, "fifo", 10).unwrap_err();
        assert!(err.message.contains("a FIFO"), "{err:?}");
        let err = load_text(&root, ".", 10).unwrap_err();
        assert!(err.message.contains("directory"), "{err:?}");
    }
}
