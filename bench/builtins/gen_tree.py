#!/usr/bin/env python3
"""Generate the benchmark tree for grep / glob against ripgrep / fd.

Deterministic (seeded): FILES files (default 100000) under 1000 directories three levels deep,
about 11 KB each (>= 1 GiB in all), five extensions, lines of random words. Some files carry
needles: `needle_<k> found here` (k = file number % 1000, so each needle is in ~100 files),
`fn main() {` in every 20th .rs file. A .gitignore leaves one directory out, and the tree is a
git repository (`git init`), so ripgrep and fd honour it as the builtins do.

usage: gen_tree.py DIR [FILES]
"""
import os
import random
import subprocess
import sys

def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rng = random.Random(1234)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(5000)]
    lines = []
    size = 0
    while size < 48 * 1024 * 1024:
        line = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 16)))
        lines.append(line)
        size += len(line) + 1
    corpus = "\n".join(lines) + "\n"
    exts = [".rs", ".py", ".js", ".md", ".txt"]
    os.makedirs(root, exist_ok=True)
    total = 0
    per_dir = max(1, files // 1000)
    n = 0
    for a in range(10):
        for b in range(10):
            for c in range(10):
                d = os.path.join(root, f"d{a}", f"s{b}", f"t{c}")
                os.makedirs(d, exist_ok=True)
                for _ in range(per_dir):
                    if n >= files:
                        break
                    ext = exts[n % len(exts)]
                    want = rng.randint(2_000, 20_500)
                    start = rng.randrange(0, len(corpus) - want - 1)
                    start = corpus.index("\n", start) + 1
                    end = corpus.index("\n", start + want) + 1
                    body = corpus[start:end]
                    extra = []
                    if n % 10 == 3:
                        extra.append(f"needle_{n % 1000} found here\n")
                    if ext == ".rs" and n % 20 == 0:
                        extra.append("fn main() {\n")
                    if extra:
                        cut = body.index("\n", len(body) // 2) + 1
                        body = body[:cut] + "".join(extra) + body[cut:]
                    with open(os.path.join(d, f"file_{n:06d}{ext}"), "w") as f:
                        f.write(body)
                    total += len(body)
                    n += 1
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("d9/s9/\n")
    subprocess.run(["git", "init", "-q", root], check=True)
    print(f"{n} files, {total / (1 << 30):.2f} GiB in {root}")

if __name__ == "__main__":
    main()
