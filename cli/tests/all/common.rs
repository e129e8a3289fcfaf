//! What the CLI tests share: the binary, a FastAPI service (tests/remote/app.py in the venv
//! tests/remote/install.sh makes) started on 127.0.0.1 and killed and reaped when dropped, and a
//! dump of the registry.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The built `contenox` binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_contenox");

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// `contenox --db DB` with no contenox settings from the environment of the test runner.
pub fn contenox(db: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CONTENOX_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("--db").arg(db);
    cmd.timeout(Duration::from_secs(120));
    cmd
}

/// The Python with FastAPI and uvicorn, found as tests/tests/all/remote_fastapi.rs finds it:
/// $CONTENOX_REMOTE_PYTHON, else the project's venv ($CONTENOX_VENV, else .venv; scripts/setup.sh
/// runs tests/remote/install.sh into it).
fn python() -> String {
    if let Ok(p) = std::env::var("CONTENOX_REMOTE_PYTHON") {
        return p;
    }
    let venv = std::env::var("CONTENOX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join(".venv"));
    let p = venv.join("bin/python");
    assert!(
        p.exists(),
        "FastAPI venv not found at {}: run tests/remote/install.sh first",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// A FastAPI app of tests/remote/app.py under uvicorn.
pub struct Service {
    child: Option<std::process::Child>,
    pub url: String,
}

impl Service {
    /// `app.py KIND PORT ARGS...`, once it listens.
    pub fn start(kind: &str, args: &[&str]) -> Service {
        let port = free_port();
        let child = std::process::Command::new(python())
            .arg(repo_root().join("tests/remote/app.py"))
            .arg(kind)
            .arg(port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start uvicorn");
        let mut service = Service {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                service.stop();
                panic!("uvicorn did not listen on {port}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        service
    }

    /// Kill the server and check its process is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            let _ = child.kill();
            child.wait().expect("reap uvicorn");
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "uvicorn {pid} is still there"
            );
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The registry's rows and schema marks as text, and the file's bytes: equal before and after
/// a refused command means nothing was written.
pub fn dump(db: &Path) -> (String, Vec<u8>) {
    let bytes = std::fs::read(db).unwrap_or_default();
    if bytes.is_empty() {
        return (String::new(), bytes);
    }
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the registry read-only");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mut out = format!("user_version={version}\n");
    let mut stmt = conn
        .prepare(
            "SELECT name, url, protocol, timeout_ms, coalesce(spec, ''), headers, inject, \
             created_at, updated_at FROM hooks ORDER BY name",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let cols: Vec<String> = (0..9)
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                })
                .collect::<Result<_, _>>()?;
            Ok(cols.join(" | "))
        })
        .unwrap();
    for row in rows {
        out.push_str(&row.unwrap());
        out.push('\n');
    }
    (out, bytes)
}

/// stdout and stderr of a finished command, as one text.
pub fn both(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
