#!/usr/bin/env bash
# Benchmarks scaffolding: `memop init` + `memop create api` for the Memcached operator, next to
# copying the very same tree with `cp -r`, in one hyperfine run (Debian: apt-get install
# hyperfine). A third command shows memop without its rustfmt pass (RUSTFMT=true: a formatter
# that changes nothing), to tell templating from formatting. Results: docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --quiet
memop="$PWD/target/release/memop"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scaffold="$memop -C $work/out init --domain example.com --project-name memcached-operator >/dev/null && $memop -C $work/out create api --group cache --kind Memcached >/dev/null"
eval "${scaffold//\/out/\/ref}"
hyperfine --warmup 3 --runs "${RUNS:-30}" --prepare "rm -rf $work/out" \
    --command-name "memop init + create api" "$scaffold" \
    --command-name "memop without rustfmt" "RUSTFMT=true $scaffold" \
    --command-name "cp -r of the same tree" "cp -r $work/ref $work/out" \
    --export-markdown "${EXPORT:-/dev/null}"
