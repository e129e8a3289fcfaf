//! The environment of bash and background shells: an allowlist of the host's variables plus
//! what the host adds by config (`shell_env`), never the host's whole environment. Names the host
//! marks secret (`secret_env`, and the model API key variables) are withheld whatever else says.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Host variables every command gets, when the host has them: where programs are, who and where
/// the user is, the locale, the terminal type, the time zone, and OpenSSL's CA locations (not
/// secret, and without them TLS fails behind a corporate CA).
///
/// Exact names only, no prefixes: the locale is POSIX's and glibc's categories one by one, because
/// `LC_*` is a namespace anyone can use (SSH forwards `LC_*` by default, and a host may hold an
/// `LC_GITHUB_TOKEN`).
const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
];

/// One entry of `shell_env`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry<'a> {
    /// `NAME`: the host's value, when it has one.
    Pass(&'a str),
    /// `PREFIX*`: every host variable whose name starts with the prefix.
    PassPrefix(&'a str),
    /// `NAME=value`: this value.
    Set(&'a str, &'a str),
}

/// Parse one entry; the error says what is wrong with it.
fn parse(entry: &str) -> Result<Entry<'_>, &'static str> {
    if entry.contains('\0') {
        return Err("contains a NUL byte");
    }
    let (name, value) = match entry.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (entry, None),
    };
    if let Some(prefix) = name.strip_suffix('*') {
        if value.is_some() {
            return Err("sets a value for a pattern; use NAME=value");
        }
        if prefix.is_empty() {
            return Err("would pass the host's whole environment");
        }
        if prefix.contains('*') {
            return Err("may hold `*` only at its end");
        }
        return Ok(Entry::PassPrefix(prefix));
    }
    if name.is_empty() {
        return Err("has no variable name");
    }
    if name.contains('*') {
        return Err("may hold `*` only at the end of a name");
    }
    Ok(match value {
        Some(value) => Entry::Set(name, value),
        None => Entry::Pass(name),
    })
}

/// What is wrong with a `shell_env` list, if anything: the entry's index and why.
pub(crate) fn problem(shell_env: &[String]) -> Option<(usize, &'static str)> {
    shell_env
        .iter()
        .enumerate()
        .find_map(|(i, e)| parse(e).err().map(|why| (i, why)))
}

fn allowed(name: &OsStr, extra: &[Entry<'_>]) -> bool {
    let bytes = name.as_bytes();
    ALLOWED.iter().any(|a| a.as_bytes() == bytes)
        || extra.iter().any(|e| match e {
            Entry::Pass(n) => n.as_bytes() == bytes,
            Entry::PassPrefix(p) => bytes.starts_with(p.as_bytes()),
            Entry::Set(..) => false,
        })
}

/// The environment of a command: the allowlisted variables of `host`, `TMPDIR` set to `tmpdir`,
/// then `shell_env` (pass-throughs and `NAME=value`s, which win), less every name in `secret`.
/// Entries of `shell_env` that do not parse are skipped (the config check refuses them first).
pub(crate) fn shell_env(
    host: impl IntoIterator<Item = (OsString, OsString)>,
    shell_env: &[String],
    secret: &[String],
    tmpdir: Option<&Path>,
) -> BTreeMap<OsString, OsString> {
    let extra: Vec<Entry<'_>> = shell_env.iter().filter_map(|e| parse(e).ok()).collect();
    let mut env: BTreeMap<OsString, OsString> = host
        .into_iter()
        .filter(|(name, _)| allowed(name, &extra))
        .collect();
    if let Some(dir) = tmpdir {
        env.insert("TMPDIR".into(), dir.as_os_str().to_owned());
    }
    for entry in &extra {
        if let Entry::Set(name, value) = entry {
            env.insert((*name).into(), (*value).into());
        }
    }
    for name in secret {
        env.remove(OsStr::new(name));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    fn names(env: &BTreeMap<OsString, OsString>) -> Vec<String> {
        env.keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_the_allowlist_passes() {
        let env = shell_env(
            host(&[
                ("PATH", "/bin"),
                ("HOME", "/home/u"),
                ("LC_ALL", "C"),
                ("AWS_SECRET_ACCESS_KEY", "x"),
                ("GITHUB_TOKEN", "x"),
                ("OPENAI_API_KEY", "x"),
                ("TMPDIR", "/host/tmp"),
            ]),
            &[],
            &[],
            Some(Path::new("/scratch")),
        );
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH", "TMPDIR"]);
        assert_eq!(env[OsStr::new("TMPDIR")], "/scratch");
    }

    /// The locale passes by its categories' exact names; other names that merely start like
    /// them (SSH forwards `LC_*`) do not.
    #[test]
    fn the_locale_passes_by_exact_name_not_by_prefix() {
        let categories = [
            "LANG",
            "LANGUAGE",
            "LC_ALL",
            "LC_CTYPE",
            "LC_NUMERIC",
            "LC_TIME",
            "LC_COLLATE",
            "LC_MONETARY",
            "LC_MESSAGES",
            "LC_PAPER",
            "LC_NAME",
            "LC_ADDRESS",
            "LC_TELEPHONE",
            "LC_MEASUREMENT",
            "LC_IDENTIFICATION",
        ];
        let mut vars: Vec<(&str, &str)> = categories.iter().map(|c| (*c, "C.UTF-8")).collect();
        let impostors = [
            "LC_GITHUB_TOKEN",
            "LC_ALL_SECRET",
            "LC_",
            "lc_all",
            "LANG_TOKEN",
            "LC_CTYPEX",
            "PATHX",
            "XPATH",
        ];
        vars.extend(impostors.iter().map(|n| (*n, "secret")));
        let env = shell_env(host(&vars), &[], &[], None);
        let mut want: Vec<&str> = categories.to_vec();
        want.sort();
        assert_eq!(names(&env), want);
        assert!(env.values().all(|v| v == "C.UTF-8"));
    }

    #[test]
    fn the_host_adds_names_prefixes_and_values() {
        let env = shell_env(
            host(&[
                ("CARGO_HOME", "/c"),
                ("CARGO_TARGET_DIR", "/t"),
                ("GOPATH", "/g"),
                ("OTHER", "o"),
            ]),
            &[
                "GOPATH".into(),
                "CARGO_*".into(),
                "MODE=test".into(),
                "ABSENT".into(),
            ],
            &[],
            None,
        );
        assert_eq!(
            names(&env),
            ["CARGO_HOME", "CARGO_TARGET_DIR", "GOPATH", "MODE"]
        );
        assert_eq!(env[OsStr::new("MODE")], "test");
    }

    #[test]
    fn secrets_are_withheld_even_when_allowlisted() {
        let env = shell_env(
            host(&[("HOME", "/h"), ("DEPLOY_KEY", "k"), ("API_X", "x")]),
            &["DEPLOY_KEY".into(), "API_*".into(), "TOKEN=t".into()],
            &[
                "DEPLOY_KEY".into(),
                "HOME".into(),
                "TOKEN".into(),
                "API_X".into(),
            ],
            None,
        );
        assert!(env.is_empty(), "{:?}", names(&env));
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in ["", "=x", "*", "A*B", "A*=x", "A\0B", "*=1"] {
            let p = problem(&["OK".to_string(), bad.to_string()]);
            assert!(matches!(p, Some((1, _))), "{bad:?}: {p:?}");
        }
        assert_eq!(
            problem(&["A".into(), "B=".into(), "C_*".into(), "D=x=y".into()]),
            None
        );
        assert_eq!(parse("D=x=y"), Ok(Entry::Set("D", "x=y")));
    }
}
