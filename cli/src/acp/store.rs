//! Where sessions are kept between editor restarts: one JSON file per session
//! (`<data dir>/acp/sessions/<id>.json`: its working directory and transcript), written
//! atomically after every prompt, read by `session/load` and `session/resume`.
//!
//! Session ids are made here (`sess_` and 32 random hex digits) and a client's id is used as a
//! file name only when it has exactly that shape: no path can be smuggled in.

use std::path::{Path, PathBuf};

use contenox::Transcript;
use serde_json::{json, Value};

use crate::setup::write_atomically;

/// The largest session file read (a transcript can be long; an editor loads it whole anyway).
const MAX_SESSION_FILE: u64 = 64 << 20;

/// The sessions directory under a data directory.
pub struct Store {
    dir: PathBuf,
}

/// A saved session.
#[derive(Debug)]
pub struct Saved {
    /// The working directory it was created in.
    pub cwd: PathBuf,
    /// The conversation.
    pub transcript: Transcript,
}

/// The default data directory: $XDG_DATA_HOME/contenox, else ~/.local/share/contenox.
pub fn default_data_dir() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        let x = PathBuf::from(x);
        if x.is_absolute() {
            return Some(x.join("contenox"));
        }
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".local/share/contenox"))
}

/// A new session id.
pub fn new_id() -> String {
    let n: u128 = rand::random();
    format!("sess_{n:032x}")
}

/// Whether `id` has the shape [`new_id`] makes.
pub fn valid_id(id: &str) -> bool {
    id.len() == 37
        && id.starts_with("sess_")
        && id[5..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Store {
    /// The store under `data_dir` (created when first written).
    pub fn new(data_dir: &Path) -> Store {
        Store {
            dir: data_dir.join("acp").join("sessions"),
        }
    }

    fn path(&self, id: &str) -> Option<PathBuf> {
        valid_id(id).then(|| self.dir.join(format!("{id}.json")))
    }

    /// Save a session (its directory made readable by its owner only).
    pub fn save(&self, id: &str, cwd: &Path, transcript: &Transcript) -> std::io::Result<()> {
        let path = self
            .path(id)
            .ok_or_else(|| std::io::Error::other("not a session id"))?;
        if !self.dir.exists() {
            std::fs::create_dir_all(&self.dir)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
            }
        }
        let doc = json!({"version": 1, "cwd": cwd, "transcript": transcript});
        write_atomically(&path, doc.to_string().as_bytes())
    }

    /// Load a session; `Err` says why not (no such session, a damaged file).
    pub fn load(&self, id: &str) -> Result<Saved, String> {
        let path = self.path(id).ok_or("no session has that id")?;
        let text = match crate::setup::read_text(&path, "session") {
            Ok(t) => t,
            Err(_) if !path.exists() => return Err("no session has that id".into()),
            Err(e) => return Err(e.message),
        };
        if text.len() as u64 > MAX_SESSION_FILE {
            return Err("the session file is too large".into());
        }
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| format!("the session file is damaged: {e}"))?;
        let cwd = doc
            .get("cwd")
            .and_then(Value::as_str)
            .ok_or("the session file has no cwd")?;
        let transcript = doc
            .get("transcript")
            .cloned()
            .unwrap_or(json!({"messages": []}));
        let transcript = Transcript::from_json(&transcript.to_string())
            .map_err(|e| format!("the session's transcript is damaged: {e}"))?;
        Ok(Saved {
            cwd: PathBuf::from(cwd),
            transcript,
        })
    }

    /// Forget a session (`session/close` keeps it: an editor may load it later).
    #[cfg(test)]
    fn remove(&self, id: &str) {
        if let Some(p) = self.path(id) {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_name_other_files() {
        let id = new_id();
        assert!(valid_id(&id), "{id}");
        for bad in [
            "../../etc/passwd",
            "sess_../../x",
            "sess_",
            &format!("{id}0"),
            "SESS_0",
        ] {
            assert!(!valid_id(bad), "{bad}");
        }
        assert_ne!(new_id(), new_id());
    }

    #[test]
    fn saves_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let id = new_id();
        assert!(store.load(&id).unwrap_err().contains("no session"));
        let t = Transcript::from_json(r#"{"messages":[{"role":"user","content":"hi"}]}"#)
            .unwrap_or_default();
        store.save(&id, Path::new("/w"), &t).unwrap();
        let s = store.load(&id).unwrap();
        assert_eq!((s.cwd, s.transcript), (PathBuf::from("/w"), t));
        std::fs::write(
            dir.path().join("acp/sessions").join(format!("{id}.json")),
            "{",
        )
        .unwrap();
        assert!(store.load(&id).unwrap_err().contains("damaged"));
        store.remove(&id);
        assert!(store.load("../x").is_err());
    }
}
