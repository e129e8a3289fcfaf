//! The hook registry: one SQLite file (`--db`, default `.contenox/local.db`).
//!
//! - A file is read as a registry only once its first 100 bytes (the SQLite header, read
//!   without SQLite and without following a link) say it is one: the SQLite magic,
//!   `PRAGMA application_id` "Cntx" and a `PRAGMA user_version` this build reads. Anything else
//!   (a text file, another program's database, a blank SQLite file, a newer registry) is refused
//!   before anything touches it: no chmod, no write, no journal beside it.
//! - A `--db` that is a symbolic link is refused, naming its target, never followed: give the
//!   registry's own path. (Links among the folders above it are followed as usual.)
//! - The file is created readable by its owner only (mode 0600, and made so again if it was
//!   wider: it holds header values), its folder with mode 0700.
//! - Every write is one `BEGIN IMMEDIATE` transaction, and a busy connection waits (busy
//!   timeout) instead of failing, so two `contenox` processes at once both land. Commands that
//!   only read (`hook list`, `hook show`, `run --hooks`) open it read-only.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use contenox::remote::{Protocol, RemoteHook};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde_json::{Map, Value};

use crate::error::{CliError, CliResult};

/// The schema this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;
/// `PRAGMA application_id` of a contenox registry ("Cntx").
const APPLICATION_ID: i64 = 0x436e_7478;
/// How long a write waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// A hook as the registry keeps it.
#[derive(Clone)]
pub struct StoredHook {
    /// The hook (the engine's own type: name, URL, protocol, headers, inject, timeout, spec).
    pub hook: RemoteHook,
    /// When it was registered (RFC 3339, UTC).
    pub created_at: String,
    /// When it was last changed.
    pub updated_at: String,
}

/// An open registry.
pub struct Registry {
    conn: Connection,
    path: PathBuf,
}

fn db_error(path: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::usage(format!("database {}: {e}", path.display()))
}

/// How a command uses the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only (`list`, `show`, `run`): a missing or empty file is an empty registry, and
    /// nothing is created.
    Read,
    /// Change rows of an existing registry (`update`, `remove`): nothing is created.
    Write,
    /// Add rows (`add`): the file and its folder are created when missing.
    Create,
}

/// What is at `--db`, found without changing it.
enum Found {
    Missing,
    /// A file of no bytes: what this command creates first, or what another one left before
    /// its first write.
    Empty(File),
    /// A contenox registry (its header says so), open for reading.
    Registry(File),
}

/// The SQLite header's first 16 bytes.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Look at `path` without changing it: refuse a link, anything but a regular file, and a file
/// whose SQLite header is not a registry's of a version this build reads.
fn inspect(path: &Path) -> CliResult<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(e) => return Err(db_error(path, e)),
    };
    if meta.file_type().is_symlink() {
        return Err(symlink_refused(path));
    }
    if !meta.is_file() {
        return Err(db_error(path, "is not a file; give another --db"));
    }
    // O_NOFOLLOW: a link put in its place since is refused, not followed; O_NONBLOCK: a FIFO
    // put there does not block the open.
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => symlink_refused(path),
            _ => db_error(path, e),
        })?;
    let meta = file.metadata().map_err(|e| db_error(path, e))?;
    if !meta.is_file() {
        return Err(db_error(path, "is not a file; give another --db"));
    }
    if meta.len() == 0 {
        return Ok(Found::Empty(file));
    }
    let mut header = [0u8; 100];
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(db_error(path, e)),
        }
    }
    if read < header.len() || &header[..16] != SQLITE_MAGIC {
        return Err(db_error(
            path,
            "is not a contenox registry (not an SQLite database); it was left as it was; give \
             another --db",
        ));
    }
    let field = |at: usize| {
        i64::from(i32::from_be_bytes([
            header[at],
            header[at + 1],
            header[at + 2],
            header[at + 3],
        ]))
    };
    let (version, app) = (field(60), field(68));
    check_version(path, app, version)?;
    if app != APPLICATION_ID {
        return Err(db_error(
            path,
            "is not a contenox registry (an SQLite database of another program: no contenox \
             application id); it was left as it was; give another --db",
        ));
    }
    Ok(Found::Registry(file))
}

fn symlink_refused(path: &Path) -> CliError {
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into());
    db_error(
        path,
        format!(
            "is a symbolic link (to {target}); contenox does not follow a link at --db: give \
             the registry's own path"
        ),
    )
}

impl Registry {
    /// Open the registry at `path` for `access`; `None` when there is none (missing, or an
    /// empty file) and `access` does not create one. A file that is not a registry is refused
    /// before anything touches it.
    pub fn open(path: &Path, access: Access) -> CliResult<Option<Registry>> {
        let mut found = inspect(path)?;
        if matches!(found, Found::Missing) {
            if access != Access::Create {
                return Ok(None);
            }
            create_private(path)?;
            // Made here, or by another process in the meantime: look again.
            found = inspect(path)?;
        }
        let exists = match found {
            Found::Missing => return Err(db_error(path, "vanished while it was opened")),
            Found::Empty(_) if access != Access::Create => return Ok(None),
            Found::Empty(file) => {
                restrict_mode(path, &file)?;
                false
            }
            Found::Registry(file) => {
                restrict_mode(path, &file)?;
                true
            }
        };
        // No link at the leaf (checked above, and by SQLite again at its open).
        let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | match access {
                Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
                Access::Write | Access::Create => OpenFlags::SQLITE_OPEN_READ_WRITE,
            };
        let conn = Connection::open_with_flags(path, flags).map_err(|e| db_error(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| db_error(path, e))?;
        let mut registry = Registry {
            conn,
            path: path.to_path_buf(),
        };
        if access == Access::Read {
            registry.check()?;
        } else {
            registry.migrate(exists)?;
        }
        Ok(Some(registry))
    }

    fn err(&self, e: impl std::fmt::Display) -> CliError {
        db_error(&self.path, e)
    }

    /// Through SQLite, the header's marks once more (the file may have changed since it was
    /// inspected): ours, and of a version this build reads.
    fn check(&self) -> CliResult<(i64, i64)> {
        let read = |pragma: &str| -> CliResult<i64> {
            self.conn
                .pragma_query_value(None, pragma, |r| r.get(0))
                .map_err(|e| self.err(e))
        };
        let (app, version) = (read("application_id")?, read("user_version")?);
        check_version(&self.path, app, version)?;
        Ok((app, version))
    }

    /// Check the file is ours and of a version we read; create the schema in a new (empty)
    /// file. `exists`: the file was a registry already, so it must still be one.
    fn migrate(&mut self, exists: bool) -> CliResult<()> {
        let path = self.path.clone();
        let read = |conn: &Connection, pragma: &str| -> CliResult<i64> {
            conn.pragma_query_value(None, pragma, |r| r.get(0))
                .map_err(|e| db_error(&path, e))
        };
        // A read first, so an up-to-date file is never locked for writing just to be opened.
        let (app, version) = self.check()?;
        if exists && app != APPLICATION_ID {
            return Err(self.err("is no longer a contenox registry; it was left as it was"));
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db_error(&path, e))?;
        // Another process may have made the schema while this one waited.
        let (app, version) = (read(&tx, "application_id")?, read(&tx, "user_version")?);
        check_version(&path, app, version)?;
        if version == 0 {
            let tables: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(|e| db_error(&path, e))?;
            if tables > 0 {
                return Err(db_error(
                    &path,
                    "is an SQLite database of another program (it has tables but no contenox \
                     schema); give another --db",
                ));
            }
            tx.execute_batch(
                "CREATE TABLE hooks (
                    name TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    protocol TEXT NOT NULL,
                    timeout_ms INTEGER NOT NULL,
                    spec TEXT,
                    headers TEXT NOT NULL,
                    inject TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL
                );",
            )
            .map_err(|e| db_error(&path, e))?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(|e| db_error(&path, e))?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(|e| db_error(&path, e))?;
        }
        tx.commit().map_err(|e| db_error(&path, e))
    }

    /// The hook of that name.
    pub fn get(&self, name: &str) -> CliResult<Option<StoredHook>> {
        self.conn
            .query_row(
                "SELECT name, url, protocol, timeout_ms, spec, headers, inject, created_at, \
                 updated_at FROM hooks WHERE name = ?1",
                params![name],
                row_to_hook,
            )
            .optional()
            .map_err(|e| self.err(e))?
            .transpose()
            .map_err(|e| self.err(e))
    }

    /// Every hook, by name.
    pub fn list(&self) -> CliResult<Vec<StoredHook>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name, url, protocol, timeout_ms, spec, headers, inject, created_at, \
                 updated_at FROM hooks ORDER BY name",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], row_to_hook)
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| self.err(e))
    }

    /// Add a hook; an existing name is refused (nothing changes).
    pub fn insert(&mut self, hook: &RemoteHook) -> CliResult<StoredHook> {
        let now = now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db_error(&self.path, e))?;
        let exists: bool = tx
            .query_row(
                "SELECT 1 FROM hooks WHERE name = ?1",
                params![hook.name],
                |_| Ok(()),
            )
            .optional()
            .map_err(|e| db_error(&self.path, e))?
            .is_some();
        if exists {
            return Err(already_registered(&hook.name));
        }
        write_hook(&tx, hook, &now, &now, true).map_err(|e| db_error(&self.path, e))?;
        tx.commit().map_err(|e| db_error(&self.path, e))?;
        Ok(StoredHook {
            hook: hook.clone(),
            created_at: now.clone(),
            updated_at: now,
        })
    }

    /// Change the hook `name` with `change` (which checks the result), in one transaction.
    pub fn update(
        &mut self,
        name: &str,
        change: impl FnOnce(&mut RemoteHook) -> CliResult<()>,
    ) -> CliResult<StoredHook> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db_error(&path, e))?;
        let current = tx
            .query_row(
                "SELECT name, url, protocol, timeout_ms, spec, headers, inject, created_at, \
                 updated_at FROM hooks WHERE name = ?1",
                params![name],
                row_to_hook,
            )
            .optional()
            .map_err(|e| db_error(&path, e))?
            .transpose()
            .map_err(|e| db_error(&path, e))?;
        let Some(mut stored) = current else {
            return Err(not_registered(name));
        };
        change(&mut stored.hook)?;
        stored.updated_at = now();
        write_hook(
            &tx,
            &stored.hook,
            &stored.created_at,
            &stored.updated_at,
            false,
        )
        .map_err(|e| db_error(&path, e))?;
        tx.commit().map_err(|e| db_error(&path, e))?;
        Ok(stored)
    }

    /// Remove the hook `name`.
    pub fn remove(&mut self, name: &str) -> CliResult<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db_error(&self.path, e))?;
        let n = tx
            .execute("DELETE FROM hooks WHERE name = ?1", params![name])
            .map_err(|e| db_error(&self.path, e))?;
        if n == 0 {
            return Err(not_registered(name));
        }
        tx.commit().map_err(|e| db_error(&self.path, e))
    }
}

/// The error for a name that is taken.
pub fn already_registered(name: &str) -> CliError {
    CliError::usage(format!(
        "hook {name:?} is already registered; change it with `contenox hook update {name} ...` \
         (or remove it first)"
    ))
}

/// The error for a name that is not registered.
pub fn not_registered(name: &str) -> CliError {
    CliError::usage(format!(
        "no hook named {name:?} is registered (see `contenox hook list`)"
    ))
}

fn check_version(path: &Path, app: i64, version: i64) -> CliResult<()> {
    if app != 0 && app != APPLICATION_ID {
        return Err(db_error(
            path,
            "is not a contenox registry (another program's application id); it was left as it \
             was; give another --db",
        ));
    }
    if version > SCHEMA_VERSION {
        return Err(db_error(
            path,
            format!(
                "was written by a newer contenox (schema version {version}; this contenox reads \
                 version {SCHEMA_VERSION}); use that contenox, or another --db"
            ),
        ));
    }
    if version < 0 || (version > 0 && app != APPLICATION_ID) {
        return Err(db_error(
            path,
            format!(
                "is not a contenox registry (user_version {version}); it was left as it was; \
                 give another --db"
            ),
        ));
    }
    Ok(())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn write_hook(
    tx: &rusqlite::Transaction<'_>,
    hook: &RemoteHook,
    created: &str,
    updated: &str,
    new: bool,
) -> rusqlite::Result<()> {
    // Cannot fail: maps of strings serialize.
    let headers = serde_json::to_string(&hook.headers).expect("headers serialize");
    let inject = serde_json::to_string(&hook.inject).expect("inject serializes");
    let sql = if new {
        "INSERT INTO hooks (name, url, protocol, timeout_ms, spec, headers, inject, created_at, \
         updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    } else {
        "UPDATE hooks SET url = ?2, protocol = ?3, timeout_ms = ?4, spec = ?5, headers = ?6, \
         inject = ?7, created_at = ?8, updated_at = ?9 WHERE name = ?1"
    };
    tx.execute(
        sql,
        params![
            hook.name,
            hook.url,
            hook.protocol.as_str(),
            i64::try_from(hook.timeout_ms).unwrap_or(i64::MAX),
            hook.spec_url,
            headers,
            inject,
            created,
            updated
        ],
    )?;
    Ok(())
}

/// A row as a hook; the inner `Err` is a row this build cannot read (a hand-edited file).
fn row_to_hook(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<StoredHook, String>> {
    let name: String = row.get(0)?;
    let protocol: String = row.get(2)?;
    let timeout: i64 = row.get(3)?;
    let headers: String = row.get(5)?;
    let inject: String = row.get(6)?;
    let bad = |what: &str| format!("hook {name:?}: its stored {what} cannot be read");
    let protocol: Protocol = match serde_json::from_value(Value::String(protocol)) {
        Ok(p) => p,
        Err(_) => return Ok(Err(bad("protocol"))),
    };
    let Ok(headers) = serde_json::from_str::<BTreeMap<String, String>>(&headers) else {
        return Ok(Err(bad("headers")));
    };
    let Ok(inject) = serde_json::from_str::<Map<String, Value>>(&inject) else {
        return Ok(Err(bad("injected parameters")));
    };
    let Ok(timeout_ms) = u64::try_from(timeout) else {
        return Ok(Err(bad("timeout")));
    };
    let mut hook = RemoteHook::new(name.clone(), row.get::<_, String>(1)?);
    hook.protocol = protocol;
    hook.timeout_ms = timeout_ms;
    hook.spec_url = row.get(4)?;
    hook.headers = headers;
    hook.inject = inject;
    Ok(Ok(StoredHook {
        hook,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    }))
}

/// Create the file (mode 0600) and its missing folders (mode 0700).
fn create_private(path: &Path) -> CliResult<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| db_error(path, format!("cannot create its folder: {e}")))?;
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        // Another process created it first.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(db_error(path, format!("cannot create it: {e}"))),
    }
}

/// The registry holds header values: readable and writable by its owner only. Through the
/// descriptor the header was read from, so the mode changes on that file and no other.
fn restrict_mode(path: &Path, file: &File) -> CliResult<()> {
    let meta = file.metadata().map_err(|e| db_error(path, e))?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| db_error(path, format!("cannot make it private (mode 0600): {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/local.db");
        assert!(Registry::open(&path, Access::Read).unwrap().is_none());
        let mut reg = Registry::open(&path, Access::Create).unwrap().unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);

        let mut hook = RemoteHook::new("nws", "https://api.weather.gov");
        hook.headers.insert("X-Key".into(), "secret".into());
        hook.inject.insert("tenant".into(), "acme".into());
        reg.insert(&hook).unwrap();
        assert_eq!(reg.insert(&hook).err().unwrap().code, 2);
        let got = reg.get("nws").unwrap().unwrap();
        assert_eq!(got.hook, hook);
        let updated = reg
            .update("nws", |h| {
                h.timeout_ms = 30_000;
                Ok(())
            })
            .unwrap();
        assert_eq!(updated.hook.timeout_ms, 30_000);
        assert_eq!(updated.created_at, got.created_at);
        // A failing change leaves the row as it was.
        let e = reg
            .update("nws", |h| {
                h.timeout_ms = 1;
                Err(CliError::usage("no"))
            })
            .err()
            .unwrap();
        assert_eq!(e.message, "no");
        assert_eq!(reg.get("nws").unwrap().unwrap().hook.timeout_ms, 30_000);
        assert_eq!(reg.update("other", |_| Ok(())).err().unwrap().code, 2);
        assert_eq!(reg.list().unwrap().len(), 1);
        reg.remove("nws").unwrap();
        assert_eq!(reg.remove("nws").err().unwrap().code, 2);
    }

    /// An empty file is an empty registry to a reader (and stays as it was); `add` makes it a
    /// registry, private. A link at the path is refused, even to a registry.
    #[test]
    fn empty_files_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        for access in [Access::Read, Access::Write] {
            assert!(Registry::open(&path, access).unwrap().is_none());
        }
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (0, 0o644));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut reg = Registry::open(&path, Access::Create).unwrap().unwrap();
        reg.insert(&RemoteHook::new("a", "http://127.0.0.1:9"))
            .unwrap();
        drop(reg);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let link = dir.path().join("link.db");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        for access in [Access::Read, Access::Write, Access::Create] {
            let e = Registry::open(&link, access).err().unwrap();
            assert!(e.message.contains("symbolic link"), "{}", e.message);
        }
        let read = Registry::open(&path, Access::Read).unwrap().unwrap();
        assert_eq!(read.list().unwrap().len(), 1);
    }

    #[test]
    fn newer_and_foreign_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("local.db");
        drop(Registry::open(&path, Access::Create).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
        drop(conn);
        let e = Registry::open(&path, Access::Create).err().unwrap();
        assert!(
            e.message.contains("newer contenox") && e.message.contains('7'),
            "{}",
            e.message
        );

        let other = dir.path().join("other.db");
        let conn = Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE t (x)").unwrap();
        drop(conn);
        let e = Registry::open(&other, Access::Create).err().unwrap();
        assert!(e.message.contains("another program"), "{}", e.message);

        let junk = dir.path().join("junk.db");
        std::fs::write(&junk, "this is not sqlite at all, not even close........").unwrap();
        assert_eq!(Registry::open(&junk, Access::Create).err().unwrap().code, 2);

        // A wide mode is made private again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        drop(conn);
        drop(Registry::open(&path, Access::Create).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
