#!/usr/bin/env bash
# Refreshes the Cargo.lock that every generated project ships (templates/_lock/Cargo.lock):
# updates the example's dependencies to the newest semver-compatible releases, records that
# lock, and regenerates the example. Then run the README's test command: it builds and tests
# generated projects with --locked against exactly this lock.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd examples/memcached-operator && cargo update)
cp examples/memcached-operator/Cargo.lock templates/_lock/Cargo.lock
scripts/update-example.sh
