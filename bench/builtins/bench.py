#!/usr/bin/env python3
"""The grep and glob builtins side by side with ripgrep and fd, on the tree of gen_tree.py.

For each case: run both once and check they print the same lines (as sets: ripgrep and fd print
in the order their threads finish, the builtins sort); then time both with hyperfine, in
several rounds that alternate which command goes first, and report the medians and their ratio.

usage: bench.py TREE TOOL [--rounds 3] [--runs 10] [--json OUT]
  TREE  the generated tree (gen_tree.py)
  TOOL  the build of `cargo build --profile profiling -p contenox --example tool` (the release
        settings plus line tables: target/profiling/examples/tool)
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

CASES = [
    ("grep files_with_matches, literal",
     ["rg", "-l", "needle_123"],
     ("grep", {"pattern": "needle_123", "head_limit": 0})),
    ("grep content, regex, line numbers",
     ["rg", "-n", "needle_12[0-9] found"],
     ("grep", {"pattern": "needle_12[0-9] found", "output_mode": "content", "head_limit": 0})),
    ("grep count, type rust",
     ["rg", "-c", "-t", "rust", r"fn\s+main"],
     ("grep", {"pattern": r"fn\s+main", "output_mode": "count", "type": "rust", "head_limit": 0})),
    ("grep files, case-insensitive, glob *.md",
     ["rg", "-l", "-i", "-g", "*.md", "NEEDLE_5"],
     ("grep", {"pattern": "NEEDLE_5", "case_insensitive": True, "glob": "*.md", "head_limit": 0})),
    ("glob **/*.rs (19800 paths)",
     ["fdfind", "-t", "f", "-g", "*.rs"],
     ("glob", {"pattern": "**/*.rs", "limit": 0})),
    ("glob d3/**/file_0*.md (2000 paths)",
     ["fdfind", "-t", "f", "-g", "file_0*.md", "d3"],
     ("glob", {"pattern": "d3/**/file_0*.md", "limit": 0})),
]


def lines(cmd, cwd):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"{cmd} failed: {out.stderr}")
    return sorted(l[2:] if l.startswith("./") else l for l in out.stdout.splitlines())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("tool")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    tool = os.path.abspath(a.tool)
    results = []
    for title, peer, (name, args) in CASES:
        ours = [tool, "--text", name, json.dumps(args)]
        want, got = lines(peer, a.tree), lines(ours, a.tree)
        if want != got:
            sys.exit(f"{title}: different output: {len(want)} vs {len(got)} lines; "
                     f"only peer: {sorted(set(want) - set(got))[:5]}, only ours: {sorted(set(got) - set(want))[:5]}")
        peer_s, ours_s = shlex.join(peer), shlex.join(ours)
        times = {"peer": [], "ours": []}
        ratios = []
        for r in range(a.rounds):
            order = [("peer", peer_s), ("ours", ours_s)]
            if r % 2:
                order.reverse()
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                cmd = ["hyperfine", "-N", "--style", "none", "--warmup", "2", "--runs", str(a.runs),
                       "--export-json", f.name]
                for label, c in order:
                    cmd += ["-n", label, c]
                subprocess.run(cmd, cwd=a.tree, check=True, stdout=subprocess.DEVNULL)
                data = json.load(open(f.name))
            round_medians = {}
            for res in data["results"]:
                times[res["command"]] += res["times"]
                round_medians[res["command"]] = statistics.median(res["times"])
            ratios.append(round_medians["ours"] / round_medians["peer"])
        row = {
            "case": title,
            "lines": len(want),
            "peer": peer_s,
            "ours": ours_s.replace(tool, "tool"),
            "peer_median_ms": statistics.median(times["peer"]) * 1000,
            "ours_median_ms": statistics.median(times["ours"]) * 1000,
            "round_ratios": ratios,
            "median_ratio": statistics.median(ratios),
        }
        results.append(row)
        print(f"{title}: {row['peer_median_ms']:.1f} ms vs {row['ours_median_ms']:.1f} ms, "
              f"ratio {row['median_ratio']:.2f} (rounds {', '.join(f'{x:.2f}' for x in ratios)})",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    print()
    print("| case | output lines | rg / fd (median) | builtin (median) | median ratio |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['case']} | {r['lines']} | {r['peer_median_ms']:.1f} ms | "
              f"{r['ours_median_ms']:.1f} ms | {r['median_ratio']:.2f}x |")


if __name__ == "__main__":
    main()
