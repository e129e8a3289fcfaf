//! The sandbox of bash and background shells, tried as a hostile command would: writing outside
//! the root, reading the host's environment through `/proc`, leaving the process group, opening
//! sockets with the network off; and a host killed with SIGKILL, after which none of the
//! processes its bash, background shells and MCP stdio servers started may be left.
//!
//! Some tests run a small host: this test binary again, running the ignored `sandbox::host_process`
//! test with `CONTENOX_SANDBOX_HOST` set.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use contenox::sandbox::{self, Layer};
use contenox::{Client, Message, Outcome, ScriptEntry};
use serde_json::{json, Value};

/// A bash-only scripted client rooted at `root`, with extra config.
fn client(root: &Path, script: Vec<ScriptEntry>, extra: Value) -> Client {
    let mut config = json!({"style": "scripted", "builtins": ["bash"], "background": true});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let mut config: contenox::Config = serde_json::from_value(config).unwrap();
    config.script = Some(script);
    config.root = Some(root.to_path_buf());
    Client::from_config(config).unwrap()
}

fn bash(command: &str) -> ScriptEntry {
    ScriptEntry::tool_call("c1", "bash", json!({ "command": command }))
}

/// Run one bash command in a client and return its result's text.
async fn run_bash(root: &Path, command: &str, extra: Value) -> String {
    let c = client(root, vec![bash(command), ScriptEntry::text("ok")], extra);
    let r = c.run("go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    tool_results(&c).pop().expect("a tool result")
}

fn tool_results(c: &Client) -> Vec<String> {
    c.transcript()
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { .. } => Some(m.text().into_owned()),
            _ => None,
        })
        .collect()
}

fn require(layer: &Layer, what: &str) {
    assert!(
        layer.is_active(),
        "{what} is not active on this kernel: {}",
        sandbox::status().summary()
    );
}

#[tokio::test]
async fn writes_only_beneath_the_root_and_the_scratch_directory() {
    require(&sandbox::status().landlock, "Landlock");
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("planted.txt");
    let out = run_bash(
        root.path(),
        &format!(
            "echo a > in-root.txt && echo root-ok; echo b > \"$TMPDIR/t\" && echo tmp-ok; \
             echo c > {0}; echo d >> {0}; mkdir {1}/dir; ln -s / {1}/link; \
             echo e > /dev/null && echo null-ok; echo $TMPDIR",
            target.display(),
            outside.path().display()
        ),
        json!({}),
    )
    .await;
    assert!(out.contains("root-ok"), "{out}");
    assert!(out.contains("tmp-ok"), "{out}");
    assert!(out.contains("null-ok"), "{out}");
    assert_eq!(out.matches("Permission denied").count(), 4, "{out}");
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(root.path().join("in-root.txt")).unwrap(),
        "a\n"
    );
}

#[tokio::test]
async fn the_scratch_directory_goes_with_the_client() {
    let root = tempfile::tempdir().unwrap();
    let c = client(
        root.path(),
        vec![
            bash("echo $TMPDIR; touch $TMPDIR/x"),
            ScriptEntry::text("ok"),
        ],
        json!({}),
    );
    c.run("go").await.unwrap();
    let out = tool_results(&c).pop().unwrap();
    let scratch = std::path::PathBuf::from(out.lines().next().unwrap());
    assert!(scratch.starts_with(std::env::temp_dir()), "{out}");
    assert!(scratch.join("x").exists());
    drop(c);
    assert!(!scratch.exists(), "{} was left", scratch.display());
}

#[tokio::test]
async fn configured_directories_are_writable() {
    require(&sandbox::status().landlock, "Landlock");
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let out = run_bash(
        root.path(),
        &format!("echo x > {}/f && echo cache-ok", cache.path().display()),
        json!({"sandbox": {"writable": [cache.path()]}}),
    )
    .await;
    assert!(out.contains("cache-ok"), "{out}");
}

#[tokio::test]
async fn leaving_the_group_and_tracing_are_refused() {
    require(&sandbox::status().seccomp, "seccomp");
    let root = tempfile::tempdir().unwrap();
    let out = run_bash(
        root.path(),
        "setsid true; echo setsid=$?; \
         python3 -c 'import os; os.setpgid(0, 0)' 2>&1 | tail -1; \
         python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); \
         r = libc.ptrace(16, os.getppid(), 0, 0); print(\"ptrace\", r, ctypes.get_errno())'",
        json!({}),
    )
    .await;
    assert!(out.contains("setsid=1"), "{out}");
    assert!(
        out.contains("PermissionError: [Errno 1] Operation not permitted"),
        "{out}"
    );
    assert!(out.contains("ptrace -1 1"), "{out}");
}

/// A command runs with `no_new_privs` (a setuid binary gains nothing), and a host running as
/// root lends it at most Docker's default capabilities less CAP_MKNOD, CAP_SETFCAP and
/// CAP_FSETID, in every set: with CAP_SYS_ADMIN or CAP_DAC_READ_SEARCH it would get past
/// Landlock, with CAP_MKNOD write disks, with CAP_SETFCAP leave a program with file
/// capabilities behind.
#[tokio::test]
async fn commands_get_no_new_privileges_and_no_dangerous_capability() {
    require(&sandbox::status().seccomp, "seccomp");
    /// chown, dac_override, fowner, kill, setgid, setuid, setpcap, net_bind_service, net_raw,
    /// sys_chroot, audit_write.
    const DOCKER_LESS_MKNOD: u64 = (1 << 0)
        | (1 << 1)
        | (1 << 3)
        | (1 << 5)
        | (1 << 6)
        | (1 << 7)
        | (1 << 8)
        | (1 << 10)
        | (1 << 13)
        | (1 << 18)
        | (1 << 29);
    let root = tempfile::tempdir().unwrap();
    let out = run_bash(
        root.path(),
        "grep -E '^(NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status",
        json!({}),
    )
    .await;
    let field = |status: &str, name: &str| -> u64 {
        let value = status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .unwrap_or_else(|| panic!("no {name} in {status}"));
        u64::from_str_radix(value.trim(), if name.starts_with("Cap") { 16 } else { 10 })
            .unwrap_or_else(|e| panic!("{name}: {e} in {status}"))
    };
    assert_eq!(field(&out, "NoNewPrivs"), 1, "{out}");
    // The bounding set is what a root process regains at exec; a host without a capability
    // beyond the kept ones (not root) has none to lend, whatever its bounding set says.
    let host = std::fs::read_to_string("/proc/self/status").unwrap();
    let host_has_more = field(&host, "CapEff") & !DOCKER_LESS_MKNOD != 0;
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"]
        .into_iter()
        .chain(host_has_more.then_some("CapBnd"))
    {
        let extra = field(&out, set) & !DOCKER_LESS_MKNOD;
        assert_eq!(
            extra, 0,
            "{set} holds capabilities {extra:#x} beyond the kept ones: {out}"
        );
    }
}

/// No namespaces: a user namespace needs no privilege and gives a command every capability
/// inside it. `unshare` and `clone` with a namespace flag and `setns` get EPERM; `clone3`, whose
/// flags a filter cannot read, gets ENOSYS, so threads and forks fall back to `clone` (and
/// still work: the controls).
#[tokio::test]
async fn namespaces_are_refused() {
    require(&sandbox::status().seccomp, "seccomp");
    let root = tempfile::tempdir().unwrap();
    let script = r#"import ctypes, os, platform, threading
l = ctypes.CDLL(None, use_errno=True)
def show(name, r): print(name, r, ctypes.get_errno() if r == -1 else 0, flush=True)
x86 = platform.machine() == 'x86_64'
for name, flag in [('user', 0x10000000), ('mount', 0x20000), ('pid', 0x20000000),
        ('net', 0x40000000), ('uts', 0x04000000), ('ipc', 0x08000000),
        ('cgroup', 0x02000000), ('time', 0x80)]:
    show('unshare-' + name, l.unshare(flag))
r = l.syscall(56 if x86 else 220, 0x10000000 | 17, 0, 0, 0, 0)
if r == 0: os._exit(0)
show('clone-user', r)
show('clone3', l.syscall(435, None, 0))
show('setns', l.setns(-1, 0))
t = threading.Thread(target=print, args=('thread-ok',)); t.start(); t.join()
pid = os.fork()
if pid == 0: os._exit(7)
print('fork-ok', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"#;
    let out = run_bash(
        root.path(),
        &format!(
            "python3 -c \"{script}\"; unshare -U true; echo unshare-command=$?; \
             (echo subshell-ok)"
        ),
        json!({}),
    )
    .await;
    for ns in [
        "user", "mount", "pid", "net", "uts", "ipc", "cgroup", "time",
    ] {
        assert!(out.contains(&format!("unshare-{ns} -1 1\n")), "{ns}: {out}");
    }
    assert!(out.contains("clone-user -1 1\n"), "{out}");
    assert!(out.contains("clone3 -1 38\n"), "{out}");
    // The kernel's own answer to setns(-1) would be EBADF (9).
    assert!(out.contains("setns -1 1\n"), "{out}");
    assert!(out.contains("unshare-command=1"), "{out}");
    assert!(out.contains("thread-ok"), "{out}");
    assert!(out.contains("fork-ok 7"), "{out}");
    assert!(out.contains("subshell-ok"), "{out}");
}

/// No set-ID bits: `chmod u+s` / `g+s`, a file created with a set-ID mode (`open`, `openat`,
/// `O_TMPFILE`, `mknod`, `fchmodat2`) get EPERM and leave the file as it was; `openat2`, whose
/// mode a filter cannot read, gets ENOSYS. Plain modes still work (the controls). As root this
/// is what keeps a command from leaving a set-user-ID root program behind.
#[tokio::test]
async fn set_id_bits_are_refused() {
    require(&sandbox::status().seccomp, "seccomp");
    let root = tempfile::tempdir().unwrap();
    let script = r#"import ctypes, os, stat
l = ctypes.CDLL(None, use_errno=True)
def show(name, r): print(name, r, ctypes.get_errno() if r == -1 else 0, flush=True)
def tryit(name, f):
    try:
        f()
        print(name, 'ok', flush=True)
    except OSError as e:
        print(name, 'errno', e.errno, flush=True)
tryit('open-suid', lambda: os.close(os.open('suid', os.O_CREAT | os.O_WRONLY, 0o4755)))
tryit('open-sgid', lambda: os.close(os.open('sgid', os.O_CREAT | os.O_WRONLY, 0o2755)))
tryit('open-plain', lambda: os.close(os.open('plain', os.O_CREAT | os.O_WRONLY, 0o755)))
tryit('tmpfile-suid', lambda: os.close(os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755)))
tryit('mknod-suid', lambda: os.mknod('node', stat.S_IFREG | 0o4755))
tryit('fchmod-suid', lambda: os.fchmod(os.open('plain', os.O_RDONLY), 0o4755))
show('fchmodat2-suid', l.syscall(452, -100, b'plain', 0o4755, 0))
show('openat2', l.syscall(437, -100, b'plain', None, 0))
print('mode', oct(os.stat('plain').st_mode & 0o7777))
print('made', sorted(n for n in os.listdir('.') if n in ('suid', 'sgid', 'node')))
"#;
    let out = run_bash(
        root.path(),
        &format!(
            "python3 -c \"{script}\"; touch f; chmod u+s f; echo chmod-u=$?; \
             chmod g+s f; echo chmod-g=$?; chmod 4755 f; echo chmod-4755=$?; \
             chmod 750 f; echo chmod-plain=$?; stat -c mode=%a f; \
             install -m 4755 f g; echo install=$?"
        ),
        json!({}),
    )
    .await;
    for refused in [
        "open-suid errno 1",
        "open-sgid errno 1",
        "tmpfile-suid errno 1",
        "mknod-suid errno 1",
        "fchmod-suid errno 1",
        "fchmodat2-suid -1 1\n",
        "openat2 -1 38\n",
        "chmod-u=1",
        "chmod-g=1",
        "chmod-4755=1",
    ] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert!(out.contains("open-plain ok"), "{out}");
    assert!(out.contains("mode 0o755"), "{out}");
    assert!(out.contains("made []"), "{out}");
    assert!(out.contains("chmod-plain=0"), "{out}");
    assert!(out.contains("mode=750"), "{out}");
    assert!(!out.contains("install=0"), "{out}");
    // Nothing in the root carries a set-ID bit.
    for entry in std::fs::read_dir(root.path()).unwrap() {
        let entry = entry.unwrap();
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&entry.metadata().unwrap().permissions());
        assert_eq!(
            mode & 0o6000,
            0,
            "{:?} has mode {mode:o}",
            entry.file_name()
        );
    }
}

#[tokio::test]
async fn the_filter_has_no_side_doors() {
    require(&sandbox::status().seccomp, "seccomp");
    let root = tempfile::tempdir().unwrap();
    // errno 1 (EPERM) is the filter's answer; the kernel's own would be ENOTTY, EFAULT, ENOSYS.
    let script = "import ctypes\n\
        l = ctypes.CDLL(None, use_errno=True)\n\
        def show(name, r): print(name, r, ctypes.get_errno())\n\
        show('tiocsti', l.ioctl(0, 0x5412, b'x'))\n\
        show('tiocsti-high-bits', l.ioctl(0, ctypes.c_ulong(0x100005412), b'x'))\n\
        show('io_uring_setup', l.syscall(425, 1, None))\n\
        if __import__('platform').machine() == 'x86_64': show('x32-setsid', l.syscall(0x40000000 | 112))\n";
    let out = run_bash(
        root.path(),
        &format!("python3 -c \"{script}\"; kill -0 $PPID; echo kill=$?"),
        json!({}),
    )
    .await;
    assert!(out.contains("tiocsti -1 1\n"), "{out}");
    assert!(out.contains("tiocsti-high-bits -1 1\n"), "{out}");
    assert!(out.contains("io_uring_setup -1 1\n"), "{out}");
    if cfg!(target_arch = "x86_64") {
        assert!(out.contains("x32-setsid -1 1\n"), "{out}");
    }
    // Landlock ABI 6 scopes signals: the host is outside the command's domain.
    if sandbox::status().landlock_abi >= Some(6) {
        assert!(out.contains("kill=1"), "{out}");
    }
}

/// A listener on 127.0.0.1 that greets one connection at a time, for as long as the test runs.
async fn greeter() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.write_all(b"hello\n").await;
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_is_on_by_default_and_off_by_config() {
    require(&sandbox::status().seccomp, "seccomp");
    let root = tempfile::tempdir().unwrap();
    let port = greeter().await;
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && head -1 <&3");
    let on = run_bash(root.path(), &command, json!({})).await;
    assert!(on.starts_with("hello\n"), "{on}");
    let off = run_bash(
        root.path(),
        &command,
        json!({"sandbox": {"network": false}}),
    )
    .await;
    assert!(off.contains("Operation not permitted"), "{off}");
    assert!(!off.contains("hello"), "{off}");
    assert!(
        !sandbox::status_for(&contenox::SandboxConfig {
            network: false,
            ..Default::default()
        })
        .network
    );
}

#[test]
fn the_environment_is_the_allowlist_and_what_the_host_adds() {
    crate::alone::run("sandbox::the_environment_is_the_allowlist_and_what_the_host_adds_alone");
}

#[tokio::test]
#[ignore = "run by the_environment_is_the_allowlist_and_what_the_host_adds, alone in a process of its own (it sets environment variables)"]
async fn the_environment_is_the_allowlist_and_what_the_host_adds_alone() {
    if !crate::alone::here("sandbox::the_environment_is_the_allowlist_and_what_the_host_adds_alone")
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // Names unique to this test, set for the children to inherit.
    std::env::set_var("CONTENOX_SBX_AWS_SECRET", "aws-marker");
    std::env::set_var("CONTENOX_SBX_PASS", "pass-marker");
    std::env::set_var("CONTENOX_SBX_KEPT_SECRET", "kept-marker");
    // SSH forwards LC_*: a name that only looks like a locale category is not one.
    std::env::set_var("LC_GITHUB_TOKEN", "lc-marker");
    std::env::set_var("LC_MESSAGES", "C");
    let out = run_bash(
        root.path(),
        "env",
        json!({
            "shell_env": ["CONTENOX_SBX_PASS", "CONTENOX_SBX_KEPT_*", "MODE=ci"],
            "secret_env": ["CONTENOX_SBX_KEPT_SECRET"],
        }),
    )
    .await;
    assert!(out.contains("CONTENOX_SBX_PASS=pass-marker"), "{out}");
    assert!(out.contains("MODE=ci"), "{out}");
    assert!(out.contains("PATH="), "{out}");
    assert!(!out.contains("aws-marker"), "{out}");
    assert!(!out.contains("kept-marker"), "{out}");
    assert!(!out.contains("lc-marker"), "{out}");
    assert!(out.contains("LC_MESSAGES=C"), "{out}");
    crate::alone::done();
}

#[test]
fn bad_sandbox_config_is_a_config_error() {
    for (config, says) in [
        (json!({"shell_env": ["*"]}), "shell_env"),
        (json!({"shell_env": ["=x"]}), "shell_env"),
        (
            json!({"sandbox": {"writable": ["relative/dir"]}}),
            "absolute",
        ),
    ] {
        let mut config: contenox::Config = serde_json::from_value(config).unwrap();
        config.style = contenox::Style::Scripted;
        config.script = Some(vec![]);
        let err = Client::from_config(config).err().expect("an error");
        assert!(err.to_string().contains(says), "{err}");
    }
    let err = serde_json::from_value::<contenox::Config>(json!({"sandbox": {"netwrk": false}}))
        .unwrap_err();
    assert!(err.to_string().contains("netwrk"), "{err}");
}

#[test]
fn the_description_says_only_what_is_in_force() {
    let specs = |extra: Value| {
        let root = tempfile::tempdir().unwrap();
        let c = client(root.path(), vec![], extra);
        c.tools()
            .into_iter()
            .find(|s| s.name == "bash")
            .unwrap()
            .description
    };
    let on = specs(json!({"sandbox": {"network": false}}));
    let off = specs(json!({"sandbox": {"enabled": false, "network": false}}));
    let status = sandbox::status();
    assert_eq!(
        on.contains("write only beneath the working directory"),
        status.landlock.is_active(),
        "{on}"
    );
    assert_eq!(
        on.contains("There is no network access"),
        status.seccomp.is_active(),
        "{on}"
    );
    assert!(!off.contains("sandbox"), "{off}");
    assert!(!off.contains("no network"), "{off}");
}

#[tokio::test]
async fn with_the_sandbox_off_a_command_may_write_anywhere() {
    // The control of the write test: what `enabled: false` gives up.
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("f");
    run_bash(
        root.path(),
        &format!("echo x > {}", target.display()),
        json!({"sandbox": {"enabled": false}}),
    )
    .await;
    assert!(target.exists());
}

// ---- a host process of its own ----

const HOST_ENV: &str = "CONTENOX_SANDBOX_HOST";
const SECRET_NAME: &str = "CONTENOX_SBX_HOST_SECRET";

/// Start this binary as a host: `mode` is `environ` or `linger`.
fn start_host(mode: &str, marker: &str, sandbox: Value) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "sandbox::host_process",
            "--exact",
            "--ignored",
            "--nocapture",
            marker,
        ])
        .env(HOST_ENV, mode)
        .env("CONTENOX_SANDBOX_HOST_MARKER", marker)
        .env("CONTENOX_SANDBOX_HOST_CONFIG", sandbox.to_string())
        .env(SECRET_NAME, format!("secret-{marker}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The host side (run by `start_host`, never on its own): `environ` runs one bash command that
/// reads the host's environment through /proc and prints its result; `linger` starts a
/// foreground bash, a background shell and an MCP stdio server that all sleep with the marker,
/// prints `ready`, and waits to be killed.
#[test]
#[ignore = "the host process of the sandbox tests; they start it themselves"]
fn host_process() {
    let Ok(mode) = std::env::var(HOST_ENV) else {
        return;
    };
    let m = std::env::var("CONTENOX_SANDBOX_HOST_MARKER").unwrap();
    let sandbox: Value =
        serde_json::from_str(&std::env::var("CONTENOX_SANDBOX_HOST_CONFIG").unwrap()).unwrap();
    let root = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        if mode == "environ" {
            let out = run_bash(
                root.path(),
                &format!(
                    "tr '\\0' '\\n' < /proc/$PPID/environ | grep {SECRET_NAME}; \
                     cat /proc/$PPID/environ > /dev/null"
                ),
                json!({ "sandbox": sandbox }),
            )
            .await;
            println!("RESULT {}", serde_json::to_string(&out).unwrap());
            return;
        }
        let c = client(
            root.path(),
            vec![
                ScriptEntry::tool_call(
                    "bg",
                    "bash",
                    json!({"command": format!("sleep {m} & sleep {m}"), "run_in_background": true}),
                ),
                ScriptEntry::tool_call(
                    "fg",
                    "bash",
                    json!({"command": format!(
                        "nohup sleep {m} >/dev/null 2>&1 & (sleep {m} &); setsid -f sleep {m}; sleep {m}"
                    )}),
                ),
                ScriptEntry::text("unreachable"),
            ],
            json!({ "sandbox": sandbox }),
        );
        let mcp = contenox::McpConfig::from_json(
            &json!({"mcpServers": {"sleeper": {
                "command": "sh", "args": ["-c", format!("sleep {m} & sleep {m}; :")]
            }}})
            .to_string(),
        )
        .unwrap();
        tokio::spawn(async move {
            let _source = contenox::load_mcp(mcp, |_, _| {}).await;
            std::future::pending::<()>().await;
        });
        let _run = c.stream("go").unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        println!("ready");
        std::future::pending::<()>().await;
    });
}

/// The pids of running (not zombie) processes whose command line holds `marker`.
fn running_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
        {
            found.push(pid);
        }
    }
    found
}

fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("700.{:09}", nanos ^ std::process::id())
}

fn host_output(mut host: std::process::Child) -> String {
    let mut out = String::new();
    use std::io::Read;
    host.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(host.wait().unwrap().success(), "{out}");
    out
}

fn host_result(out: &str) -> String {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no result from the host: {out}"));
    serde_json::from_str(line).unwrap()
}

#[test]
fn the_host_environment_is_out_of_reach() {
    require(&sandbox::status().landlock, "Landlock");
    let m = marker();
    let out = host_result(&host_output(start_host("environ", &m, json!({}))));
    assert!(!out.contains(&format!("secret-{m}")), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    // The control: without the sandbox the same command reads the host's secret.
    let open = host_result(&host_output(start_host(
        "environ",
        &m,
        json!({"enabled": false}),
    )));
    assert!(open.contains(&format!("secret-{m}")), "{open}");
}

#[test]
fn a_killed_host_leaves_nothing() {
    require(&sandbox::status().watchdog, "the watchdog");
    let m = marker();
    let mut host = start_host("linger", &m, json!({}));
    let mut stdout = std::io::BufReader::new(host.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    stdout.read_line(&mut line).unwrap();
    // The host (the marker is one of its arguments; its watchdog shows the same command line),
    // the background shell (bash and two sleeps), the foreground bash (bash, nohup's sleep, the
    // double fork's sleep, the last sleep) and the MCP server (sh and two sleeps).
    let start = Instant::now();
    while running_with(&m).len() < 11 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the host did not start its processes ({line:?}): {:?}",
            running_with(&m)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = running_with(&m).len();
    // SAFETY: SIGKILL to the host this test started.
    unsafe {
        libc::kill(host.id() as i32, libc::SIGKILL);
    }
    host.wait().unwrap();
    let start = Instant::now();
    loop {
        let left = running_with(&m);
        if left.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{} of {started} processes left after the host was killed: {left:?}",
            left.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- descriptors the host holds ----

/// A copy of `fd` at 300 or above without close-on-exec, as a shell redirect (`7>>file`),
/// systemd's socket activation or `pass_fds` leave one in a host.
fn inheritable(fd: &impl std::os::fd::AsRawFd) -> i32 {
    // SAFETY: F_DUPFD returns a new descriptor (FD_CLOEXEC clear) or -1.
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD, 300) };
    assert!(copy >= 300, "{}", std::io::Error::last_os_error());
    copy
}

/// A loopback server that greets its one connection and keeps every byte it receives, until
/// the peer closes or 10 s pass.
fn recording_server() -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(b"hello\n").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        got
    });
    (port, server)
}

/// What a child tries with the host's descriptors `file` (a file outside the root, opened for
/// appending) and `socket` (a connected TCP socket), and the list of its own descriptors.
fn descriptor_probe(file: i32, socket: i32) -> String {
    format!(
        "echo INJECTED >&{file}; echo file=$?; \
         printf 'GET /hello HTTP/1.0\\r\\n\\r\\n' >&{socket}; echo send=$?; \
         timeout 2 head -c 6 <&{socket}; echo recv=$?; \
         echo fds:; ls /proc/$$/fd; echo end"
    )
}

/// Every child the engine starts (bash with the network off, bash unsandboxed, a background
/// shell, an MCP stdio server) starts with only stdin, stdout and stderr: a file the host opened
/// outside the root is not written, a socket the host holds carries no byte either way, and the
/// child's `/proc/self/fd` holds 0, 1 and 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_descriptors_never_reach_a_child() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&victim)
        .unwrap();
    let file_fd = inheritable(&file);
    let (port, server) = recording_server();
    let socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let socket_fd = inheritable(&socket);
    let probe = descriptor_probe(file_fd, socket_fd);
    let check = |who: &str, out: &str| {
        // `ls` lists the shell's descriptors (it runs in a child of its own, so its
        // own directory handle is not among them).
        assert!(out.contains("fds:\n0\n1\n2\nend\n"), "{who}: {out}");
        for tried in ["file", "send", "recv"] {
            assert!(!out.contains(&format!("{tried}=0")), "{who}: {out}");
        }
        assert!(!out.contains("hello"), "{who}: {out}");
    };

    let off = run_bash(root.path(), &probe, json!({"sandbox": {"network": false}})).await;
    check("bash, network off", &off);
    let open = run_bash(root.path(), &probe, json!({"sandbox": {"enabled": false}})).await;
    check("bash, sandbox off", &open);

    // A background shell, which writes its output into the root for this test to read (with
    // `exec`: a redirected `{ ...; }` would keep copies of 1 and 2 at 10 and 11).
    let c = client(
        root.path(),
        vec![
            ScriptEntry::tool_call(
                "bg",
                "bash",
                json!({"command": format!("exec > bg.out 2>&1; {probe}; mv bg.out bg.done"),
                       "run_in_background": true}),
            ),
            ScriptEntry::text("ok"),
        ],
        json!({}),
    );
    c.run("go").await.unwrap();
    let done = root.path().join("bg.done");
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no background output"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check("background shell", &std::fs::read_to_string(&done).unwrap());

    // An MCP stdio server (it exits after the probe; its load fails, which is fine here).
    let out = root.path().join("mcp.out");
    let mcp = contenox::McpConfig::from_value(json!({"mcpServers": {"probe": {
        "command": "bash",
        "args": ["-c", format!("exec > {} 2>&1; {probe}", out.display())]
    }}}))
    .unwrap();
    let source = contenox::load_mcp(mcp, |_, _| {}).await;
    source.close().await;
    check("MCP stdio server", &std::fs::read_to_string(&out).unwrap());

    // SAFETY: closing the copies made above; the server then sees the end of its connection.
    unsafe {
        libc::close(file_fd);
        libc::close(socket_fd);
    }
    drop(socket);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "");
    let received = server.join().unwrap();
    assert!(
        received.is_empty(),
        "the server received {:?}",
        String::from_utf8_lossy(&received)
    );
}
