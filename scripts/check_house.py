#!/usr/bin/env python3
"""The shape of the house, checked (scripts/test.sh step `house`):

- one integration test binary per crate: each test binary links the whole engine again, so a
  crate's tests live as modules of one binary (tests/all/main.rs), never as tests/NAME.rs beside it;
- no import cycle between the files of a crate's src/ (read from `use crate::`, `use super::`,
  `crate::` paths and child-module `use`s; a module's own declaration of its children is
  structure, not an import), nor, in core, between its top-level modules (`tool/` as one).

Every cycle fails (the ones that existed when the check came were broken in issue 26).

- imports in the direction of the layers: ARCHITECTURE.md places each top-level module of core
  and each file of a binding in a layer (its ```layers blocks); a module may import its own layer
  and the ones below, never one above. A module the map does not place, or a placed one that is
  gone, fails too: the map and the code stay one.

- bindings-node/hot-code.ld names no function by a build-specific name (a symbol hash, LLVM's
  copy number, a crate disambiguator): its patterns stay valid for every build.

- no `unwrap()` / `expect(..)` outside tests without its reason: product code (core, cli, the
  bindings; not tests.rs, *_tests.rs, `#[cfg(test)]` modules) says in a comment with the words
  `cannot fail`, on the line or the six above, why the call cannot panic. `--unwraps` lists
  every call with its file and line (issue 26's count).

Exits non-zero with one line per violation.
"""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent

# Crate source trees whose files must not import each other in a circle.
SOURCE_TREES = [
    "core/src",
    "cli/src",
    "tests/src",
    "bindings-node/src",
    "bindings-python/src",
    "bindings-uniffi/src",
]

def workspace_crates() -> list[pathlib.Path]:
    # The members line of the root manifest (tomllib is Python 3.11+; the test command needs 3.10).
    manifest = (REPO / "Cargo.toml").read_text()
    members = re.search(r"^members\s*=\s*\[([^\]]*)\]", manifest, re.MULTILINE)
    if members is None:
        sys.exit("check_house: no `members = [...]` in Cargo.toml")
    return [REPO / m for m in re.findall(r'"([^"]+)"', members.group(1))]


def test_binaries(crate: pathlib.Path) -> list[str]:
    """The integration test targets cargo finds by itself: tests/*.rs and tests/*/main.rs."""
    tests = crate / "tests"
    if not tests.is_dir():
        return []
    found = list(tests.glob("*.rs")) + list(tests.glob("*/main.rs"))
    return sorted(str(p.relative_to(REPO)) for p in found)


def check_test_binaries() -> list[str]:
    problems = []
    for crate in workspace_crates():
        binaries = test_binaries(crate)
        if len(binaries) > 1:
            problems.append(
                f"{crate.relative_to(REPO)}: {len(binaries)} integration test binaries "
                f"({', '.join(binaries)}); make each a module of one (tests/all/main.rs)"
            )
    return problems


Module = tuple[str, ...]


def modules_of(tree: pathlib.Path) -> dict[Module, pathlib.Path]:
    """Each file's module path: core/src/remote/service.rs -> ("remote", "service")."""
    files = {}
    for path in tree.rglob("*.rs"):
        parts = list(path.relative_to(tree).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        files[tuple(parts)] = path
    return files


def code_of(path: pathlib.Path) -> str:
    """The file's code: a trailing `#[cfg(test)] mod` and `//` comments left out."""
    text = path.read_text()
    tests = text.find("#[cfg(test)]\nmod ")
    if tests >= 0:
        text = text[:tests]
    return re.sub(r"//[^\n]*", "", text)


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e as f}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        return [tree.split(" as ")[0].strip()]
    head, body = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += (ch == "{") - (ch == "}")
        cur += ch
    parts.append(cur)
    return [p for part in parts if part.strip() for p in expand_use(head + part)]


def imports(tree: pathlib.Path) -> dict[Module, set[Module]]:
    """For each file, the files it imports (structure edges to its own children left out)."""
    files = modules_of(tree)
    root = code_of(files[()])
    # Names the crate root re-exports (`pub use module::{A, B}`), so `crate::A` finds its file.
    reexported: dict[str, Module] = {}
    for m in re.finditer(r"pub use (?:crate::)?([\w:]+)::\{([^}]*)\}", root):
        for name in re.split(r"[,\s]+", m.group(2)):
            if name:
                reexported[name] = tuple(m.group(1).split("::"))
    for m in re.finditer(r"pub use (?:crate::)?([\w:]+)::(\w+);", root):
        reexported[m.group(2)] = tuple(m.group(1).split("::"))

    def resolve(path: list[str]) -> Module:
        if path and (path[0],) not in files and path[0] in reexported:
            path = list(reexported[path[0]]) + path[1:]
        for k in range(len(path), 0, -1):
            if tuple(path[:k]) in files:
                return tuple(path[:k])
        return ()

    edges: dict[Module, set[Module]] = {}
    for module, path in files.items():
        code = code_of(path)
        paths = []
        for m in re.finditer(r"\buse\s+([^;]*);", code):
            paths += [p.replace("::self", "") for p in expand_use(m.group(1))]
        rest = re.sub(r"\buse\s+[^;]*;", "", code)
        paths += re.findall(r"\b(?:crate|super)(?:::\w+)+", rest)
        deps = set()
        for p in paths:
            parts = p.split("::")
            if parts[0] == "crate":
                deps.add(resolve(parts[1:]))
            elif parts[0] == "super":
                up = 0
                while up < len(parts) and parts[up] == "super":
                    up += 1
                deps.add(resolve(list(module[: len(module) - up]) + parts[up:]))
            elif module + (parts[0],) in files:
                deps.add(module + (parts[0],))
        edges[module] = {
            d for d in deps if d and d != module and d[: len(module)] != module
        }
    return edges


def cycles(edges: dict[Module, set[Module]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan), as sorted names."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    on_stack: set[Module] = set()
    found = []

    def visit(v: Module) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted("/".join(c) for c in component)))

    sys.setrecursionlimit(10_000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def top_level(edges: dict[Module, set[Module]]) -> dict[Module, set[Module]]:
    """The same imports between top-level modules (a directory module as one)."""
    top: dict[Module, set[Module]] = {}
    for v, deps in edges.items():
        top.setdefault(v[:1], set()).update(d[:1] for d in deps if d[:1] != v[:1])
    return top


def check_cycles() -> list[str]:
    problems = []
    for tree in SOURCE_TREES:
        edges = imports(REPO / tree)
        levels = [("file", edges)] + (
            [("top", top_level(edges))] if tree == "core/src" else []
        )
        for level, graph in levels:
            for cycle in cycles(graph):
                problems.append(
                    f"{tree}: the {'modules' if level == 'top' else 'files'} "
                    f"{{{', '.join(cycle)}}} import each other in a circle"
                )
    return problems


LAYERS_BLOCK = re.compile(
    r"<!-- layers (\S+?):[^>]*-->\s*```layers\n(.*?)```", re.DOTALL
)


def layer_maps() -> dict[str, dict[str, tuple[int, str]]]:
    """ARCHITECTURE.md's layer tables: tree -> module -> (layer number, layer name)."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    maps: dict[str, dict[str, tuple[int, str]]] = {}
    for block in LAYERS_BLOCK.finditer(text):
        tree, table = block.group(1), {}
        for line in block.group(2).splitlines():
            if not line.strip():
                continue
            number, name, *modules = line.split()
            for module in modules:
                table[module] = (int(number), name)
        maps[tree] = table
    return maps


def check_directions() -> list[str]:
    problems = []
    maps = layer_maps()
    for tree in ("core/src", "bindings-node/src", "bindings-python/src", "bindings-uniffi/src"):
        if tree not in maps:
            problems.append(f"ARCHITECTURE.md: no layers block for {tree}")
            continue
        layers = maps[tree]
        graph = top_level(imports(REPO / tree))
        present = {v[0] for v in graph if v}
        for module in sorted(present - layers.keys()):
            problems.append(
                f"{tree}: module `{module}` is in no layer of ARCHITECTURE.md: place it there"
            )
        for module in sorted(layers.keys() - present):
            problems.append(
                f"ARCHITECTURE.md: `{module}` is in a layer of {tree} but there is no such module"
            )
        for v, deps in sorted(graph.items()):
            if not v or v[0] not in layers:
                continue
            for d in sorted(deps):
                if not d or d[0] not in layers:
                    continue
                (mine, my_name), (theirs, their_name) = layers[v[0]], layers[d[0]]
                if theirs > mine:
                    problems.append(
                        f"{tree}: `{v[0]}` ({my_name}) imports `{d[0]}` ({their_name}), a layer "
                        "above it (ARCHITECTURE.md: imports go down the layers)"
                    )
    return problems


# A README shows a runnable example as `<!-- example: PATH -->` and the fenced block right after
# it; the block must be the file, which the test command runs (examples' own tests).
EXAMPLE_MARK = re.compile(r"^<!-- example: (\S+) -->\n```[a-z]*\n(.*?)```", re.S | re.M)


def check_readme_examples() -> list[str]:
    problems = []
    # READMEs, and the concept pages of docs/ (docs/images.md, ...).
    for readme in sorted([*REPO.glob("**/README.md"), *REPO.glob("docs/*.md")]):
        if "node_modules" in readme.parts or "target" in readme.parts:
            continue
        text = readme.read_text()
        marks = len(re.findall(r"^<!-- example: ", text, re.M))
        found = EXAMPLE_MARK.findall(text)
        where = readme.relative_to(REPO)
        if len(found) != marks:
            problems.append(f"{where}: an example mark not followed by a fenced block")
        for path, block in found:
            file = REPO / path
            if not file.is_file():
                problems.append(f"{where}: the example {path} does not exist")
            elif file.read_text() != block:
                problems.append(f"{where}: the block shown as {path} differs from the file")
    return problems


# Product code whose unwraps must say why they cannot fail (the harness in tests/src is test code).
PRODUCT_TREES = [t for t in SOURCE_TREES if t != "tests/src"]
UNWRAP = re.compile(r"\.unwrap\(\)|\.expect\(")
TEST_MOD_DECL = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))? )?mod (\w+);")
TEST_MOD_BLOCK = re.compile(r"\s*#\[cfg\(test\)\]\n\s*(?:pub(?:\([a-z]+\))? )?mod \w+ \{")


def unwraps() -> list[tuple[str, int, bool]]:
    """Every unwrap/expect call outside tests: (file, line, justified)."""
    test_files: set[pathlib.Path] = set()
    for tree in PRODUCT_TREES:
        for f in (REPO / tree).rglob("*.rs"):
            for name in TEST_MOD_DECL.findall(f.read_text()):
                base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") else f.parent / f.stem
                test_files.update({base / f"{name}.rs", base / name / "mod.rs"})
    found = []
    for tree in PRODUCT_TREES:
        for f in sorted((REPO / tree).rglob("*.rs")):
            if f.name == "tests.rs" or f.name.endswith("_tests.rs") or f in test_files:
                continue
            text = f.read_text()
            # A test module comes last in its file: what follows it is test code.
            block = TEST_MOD_BLOCK.search(text)
            if block:
                text = text[: block.start()]
            lines = text.splitlines()
            for n, line in enumerate(lines, 1):
                if line.strip().startswith("//"):
                    continue
                for _ in UNWRAP.findall(line):
                    near = " ".join(lines[max(0, n - 7) : n]).lower()
                    found.append((str(f.relative_to(REPO)), n, "cannot fail" in near))
    return found


def check_unwraps() -> list[str]:
    return [
        f"{file}:{line}: an unwrap/expect outside tests without a `cannot fail` comment saying why"
        for file, line, justified in unwraps()
        if not justified
    ]


# What in a mangled symbol name changes from build to build: a legacy hash, LLVM's numbering of
# a copy, a v0 crate disambiguator. bindings-node/hot-code.ld names functions by pattern only,
# so that it stays valid for every build (hot-code.mjs writes it that way).
BUILD_SPECIFIC = re.compile(r"17h[0-9a-f]{16}E|\.llvm\.\d|\.\d+\)|Cs[0-9A-Za-z]+_")


def check_hot_code() -> list[str]:
    script = REPO / "bindings-node" / "hot-code.ld"
    if not script.exists():
        return []
    return [
        f"bindings-node/hot-code.ld:{n}: a build-specific symbol name (hash or copy number): "
        "regenerate it with bindings-node/scripts/hot-code.mjs, which writes patterns"
        for n, line in enumerate(script.read_text().splitlines(), 1)
        if BUILD_SPECIFIC.search(line)
    ]


def main() -> int:
    if "--unwraps" in sys.argv:
        found = unwraps()
        for file, line, justified in found:
            print(f"{file}:{line}{'' if justified else ' (no reason given)'}")
        print(f"{len(found)} unwrap/expect outside tests, {sum(not j for *_, j in found)} without a reason")
        return 0
    problems = (
        check_test_binaries()
        + check_cycles()
        + check_directions()
        + check_readme_examples()
        + check_unwraps()
        + check_hot_code()
    )
    for p in problems:
        print(f"check_house: {p}", file=sys.stderr)
    if not problems:
        print(
            "check_house: ok (one test binary per crate, no import cycle, imports down the layers,"
            " every unwrap outside tests with its reason, hot-code.ld without build hashes)"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
