//! The file tools' path resolver (`RootDir::relative`, `RootDir::locate`, `confine`) on a fixed
//! tree with symlinks that stay inside, lead outside, are absolute, dangle or loop, and a
//! hardlink to an outside file. The property, not just "no panic": every `Ok` names a place
//! beneath the root, with every symlink resolved (checked against the kernel's own
//! `realpath`), and names below it that do not exist; no error carries outside content.
#![no_main]

use std::ffi::OsStr;
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use contenox::builtin::{confine, RootDir};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "outside-secret-7f3a";

struct Tree {
    /// The temp directory holding `root/` and `outside/`.
    base: PathBuf,
    /// The canonical root.
    root: PathBuf,
}

/// Made once per process, beneath `$TMPDIR` (bench/fuzz/run.sh points it at a directory it
/// removes afterwards).
fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("contenox-fuzz-path-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let outside = base.join("outside");
        let root = base.join("root");
        for d in [&outside, &root.join("dir/sub"), &root.join("ünï cödé")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        std::fs::write(root.join("dir/b.txt"), "b\n").unwrap();
        std::fs::write(root.join("dir/sub/c.txt"), "c\n").unwrap();
        let links: [(&str, &Path); 11] = [
            ("in", Path::new("dir")),
            ("deep", Path::new("dir/sub")),
            ("dir/same", Path::new("../dir")),
            ("dir/sub/top", Path::new("../..")), // the root itself: inside
            ("dir/up", Path::new("../..")),      // the temp directory: outside
            ("dir/sub/out", Path::new("../../../outside")),
            ("out", Path::new("../outside")),
            ("abs_in", &root.join("dir")),
            ("abs_out", Path::new("/etc")),
            ("dangling", Path::new("nope/nothing")),
            ("loop", Path::new("loop")),
        ];
        for (name, target) in links {
            symlink(target, root.join(name)).unwrap();
        }
        symlink("dir/sub/out/secret.txt", root.join("chain")).unwrap();
        std::fs::hard_link(outside.join("secret.txt"), root.join("hard")).unwrap();
        Tree { base, root }
    })
}

/// The model's path from the input: the first byte picks how it is anchored (relative, under
/// the root's absolute path, under the temp directory, under `/`), so absolute forms are
/// reached without the fuzzer having to guess the root.
fn given(t: &Tree, data: &[u8]) -> String {
    let Some((&mode, rest)) = data.split_first() else {
        return String::new();
    };
    let rest = String::from_utf8_lossy(rest);
    match mode % 4 {
        0 => rest.into_owned(),
        1 => format!("{}/{rest}", t.root.display()),
        2 => format!("{}/{rest}", t.base.display()),
        _ => format!("/{rest}"),
    }
}

fn only_normal(p: &Path) -> bool {
    p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// A single plain name: what `Located::missing` may hold.
fn plain_name(name: &OsStr) -> bool {
    let mut parts = Path::new(name).components();
    matches!(parts.next(), Some(Component::Normal(n)) if n == name) && parts.next().is_none()
}

fuzz_target!(|data: &[u8]| {
    let t = tree();
    let s = given(t, data);
    let dir = RootDir::open(&t.root).unwrap();

    if let Ok(rel) = dir.relative(&s) {
        assert!(
            rel.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::ParentDir)),
            "relative({s:?}) = {rel:?} is not a relative path"
        );
    }

    let located = dir.locate(&s);
    let confined = confine(&t.root, &s);
    match (&located, &confined) {
        (Ok(at), Ok(p)) => {
            assert!(only_normal(&at.real), "locate({s:?}).real = {:?}", at.real);
            let real = t.root.join(&at.real);
            // The kernel agrees: the existing part exists, is fully resolved, and is beneath
            // the root.
            let canonical = std::fs::canonicalize(&real).unwrap_or_else(|e| {
                panic!("locate({s:?}) = {at:?}: {real:?} does not resolve: {e}")
            });
            assert_eq!(canonical, real, "locate({s:?}) left a symlink in {real:?}");
            assert!(
                canonical.starts_with(&t.root),
                "locate({s:?}) escaped: {canonical:?}"
            );
            for name in &at.missing {
                assert!(plain_name(name), "locate({s:?}) missing name {name:?}");
            }
            if let Some(first) = at.missing.first() {
                let below = real.join(first);
                assert!(
                    std::fs::symlink_metadata(&below).is_err(),
                    "locate({s:?}) says {below:?} does not exist"
                );
            }
            assert_eq!(
                p,
                &t.root.join(at.relative()),
                "confine and locate differ on {s:?}"
            );
            assert!(only_normal(p.strip_prefix(&t.root).unwrap()));
        }
        // An error names the given path, so only a path without the secret's text can show
        // that the outside file's content leaked into one.
        (Err(a), Err(b)) if !s.contains(SECRET) => {
            for e in [a, b] {
                assert!(
                    !e.message.contains(SECRET),
                    "error on {s:?} carries outside content"
                );
            }
        }
        (Err(_), Err(_)) => {}
        _ => panic!("locate and confine disagree on {s:?}: {located:?} / {confined:?}"),
    }
});
