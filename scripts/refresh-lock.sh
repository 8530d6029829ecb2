#!/usr/bin/env bash
# Refreshes the Cargo.lock that every generated project ships (templates/_lock/Cargo.lock), which
# is the lock of examples/memcached-operator:
#   scripts/refresh-lock.sh            after editing templates/init/Cargo.toml.tera: resolves the
#                                      new manifest, changing as few versions as possible;
#   scripts/refresh-lock.sh --upgrade  moves every dependency to its newest compatible release.
# Then run the README's test command: it builds and tests generated projects with --locked
# against exactly this lock.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/update-example.sh
(
    cd examples/memcached-operator
    if [ "${1:-}" = "--upgrade" ]; then
        cargo update
    else
        cargo metadata --format-version 1 >/dev/null   # writes the lock, updating only what must
    fi
)
cp examples/memcached-operator/Cargo.lock templates/_lock/Cargo.lock
scripts/update-example.sh
git --no-pager diff --stat -- templates/_lock/Cargo.lock
