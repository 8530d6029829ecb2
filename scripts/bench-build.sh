#!/usr/bin/env bash
# The cold release build of memop's manager against kubebuilder's, one after the other, in CPU
# seconds (user + sys) and wall time, with the machine's load before and after each.
#
#   scripts/bench-build.sh [ROUNDS]        (default 1; each round builds both, alternating order)
#
# Both build what their Dockerfile builds, from nothing:
#   - memop: `cargo build --release --locked --bin memcached-operator` of the project that
#     scripts/bench-sidebyside.sh generated from MEMOP_REF (default HEAD), in an empty target
#     directory, crates already downloaded (as the Dockerfile's `cargo fetch` layer leaves them);
#   - kubebuilder: `go build -o bin/manager cmd/main.go` of its Getting Started operator, with an
#     empty Go build cache, modules already downloaded (as its Dockerfile's `go mod download`).
# It builds what it needs first with `PREPARE_ONLY=1 scripts/bench-sidebyside.sh` (the same cache,
# $CACHE, default ~/.cache/memop-bench). Results: printed, and appended to
# $CACHE/results/build.md. Run it on a quiet machine: CPU seconds grow when other work shares the
# cores (hyper-threads, caches), if less than wall time does.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$HOME/.cache/memop-bench}
KB_VERSION=${KB_VERSION:-v4.16.0}
MEMOP_REF=${MEMOP_REF:-HEAD}
rounds=${1:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }

ORDER="memop kubebuilder" PREPARE_ONLY=1 MEMOP_REF="$MEMOP_REF" "$repo/scripts/bench-sidebyside.sh"
commit=$(git -C "$repo" rev-parse --verify "$MEMOP_REF^{commit}")
memop_project="$CACHE/memop-${commit:0:12}/memcached-operator"
kb_project="$CACHE/kubebuilder-$KB_VERSION/memcached-operator"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Prints "<cpu seconds> <wall seconds>" of the command, run in the current directory.
measure() {
    /usr/bin/time -f '%U %S %e' -o "$scratch/time" "$@" > "$scratch/out" 2>&1 ||
        { cat "$scratch/out" >&2; echo "failed: $*" >&2; exit 1; }
    awk '{ printf "%.0f %.0f\n", $1 + $2, $3 }' "$scratch/time"
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

memop() {
    rm -rf "$scratch/target"
    (cd "$memop_project" && cargo fetch --locked -q &&
        CARGO_TARGET_DIR="$scratch/target" measure cargo build --release --locked -q --bin memcached-operator)
}
kubebuilder() {
    rm -rf "$scratch/gocache"
    (cd "$kb_project" && go mod download &&
        GOCACHE="$scratch/gocache" measure go build -o "$scratch/manager" cmd/main.go)
}

results="$CACHE/results/build.md"
{
    echo
    echo "memop ${commit:0:12} vs kubebuilder $KB_VERSION, cold release build of the manager, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
    echo
    echo "| round | builder | CPU s (user + sys) | wall s | load before / after |"
    echo "|---|---|---:|---:|---|"
} | tee -a "$results"
for ((round = 1; round <= rounds; round++)); do
    order="memop kubebuilder"
    ((round % 2 == 0)) && order="kubebuilder memop"
    for builder in $order; do
        before=$(loadavg)
        result=$($builder)
        read -r cpu wall <<< "$result"
        echo "| $round | $builder | $cpu | $wall | $before / $(loadavg) |" | tee -a "$results"
    done
done
