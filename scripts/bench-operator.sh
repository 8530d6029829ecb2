#!/usr/bin/env bash
# Measures the generated Memcached operator (examples/memcached-operator) on this machine:
#   - cold and warm `cargo build` (warm: after touching one source file), in a fresh target dir;
#   - the release manager binary's size;
#   - its reconcile benchmark (`cargo bench --bench memcached`: OBJECTS objects, default 1000)
#     and the benchmark process's peak RSS (GNU time; Debian: apt-get install time), on the
#     in-memory API server and, with KUBEBUILDER_ASSETS set, on the real control plane.
# Results: docs/performance.md. Takes several minutes (it builds kube from scratch, twice).
set -euo pipefail
cd "$(dirname "$0")/../examples/memcached-operator"
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
export CARGO_TARGET_DIR="$target"
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

cargo fetch --locked -q
t0=$(now); cargo build --locked -q; t1=$(now)
touch src/controller/memcached.rs
cargo build --locked -q; t2=$(now)
echo "cold cargo build:   $(secs "$t0" "$t1") s"
echo "warm cargo build:   $(secs "$t1" "$t2") s (after touching src/controller/memcached.rs)"

t0=$(now); cargo build --locked --release -q; t1=$(now)
echo "cold release build: $(secs "$t0" "$t1") s"
size=$(stat -c %s "$target/release/memcached-operator")
echo "release binary:     $size bytes ($(echo "scale=1; $size / 1048576" | bc) MiB)"

cargo bench --locked --bench memcached --no-run -q 2>/dev/null
bench=$(ls -t "$target"/release/deps/memcached-* | grep -v '\.d$' | head -1)
/usr/bin/time -v "$bench" 2> "$target/time.txt"
grep "Maximum resident set size" "$target/time.txt"
# The same on the real control plane, when KUBEBUILDER_ASSETS is set (scripts/envtest/build.sh):
# the peak RSS is then the controller's alone, the control plane running in its own processes.
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
    BACKEND=real /usr/bin/time -v "$bench" 2> "$target/time.txt"
    grep "Maximum resident set size" "$target/time.txt"
fi
