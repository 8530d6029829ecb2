#!/usr/bin/env bash
# Rewrites examples/memcached-operator with the README's two commands, using this checkout's
# memop. Run it after changing templates/ (tests/example.rs fails until you do).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
target="${CARGO_TARGET_DIR:-target}"   # where cargo put it: CARGO_TARGET_DIR may move it
[[ "$target" == /* ]] || target="$PWD/$target"
memop="$target/debug/memop"
export SOURCE_DATE_EPOCH=1795000000   # the example's license year stays put (see tests/common)
rm -rf examples/memcached-operator
mkdir -p examples/memcached-operator
cd examples/memcached-operator
"$memop" init --domain example.com >/dev/null
"$memop" create api --group cache --kind Memcached >/dev/null
# The example builds against memop's own crates/, not a second copy of them (tests/example.rs
# checks that the link is all that differs from what memop generates).
rm -rf vendor
ln -s ../../crates vendor
echo "rewrote examples/memcached-operator"
