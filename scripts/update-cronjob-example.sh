#!/usr/bin/env bash
# Brings examples/cronjob-operator, kubebuilder's "Tutorial: Building CronJob" and "Tutorial:
# Multi-Version API" done with memop, up to date with this checkout's memop. The example is the
# memop commands below plus the files the tutorials' user writes by hand (user_files): memop's
# files are rewritten from a fresh run of the commands, the user's files are left as they are,
# and memop's lock gets the example's own dependencies (croner) added by cargo. tests/cronjob_example.rs runs the same
# commands, checks that the example differs from their output only in user_files, and that
# `memop update` on it (with memop's output in its history, as a user's project has) is a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
target="${CARGO_TARGET_DIR:-target}"   # where cargo put it: CARGO_TARGET_DIR may move it
[[ "$target" == /* ]] || target="$PWD/$target"
memop="$target/debug/memop"
export SOURCE_DATE_EPOCH=1795000000   # the example's license year stays put (see tests/common)

# The files the tutorial writes or regenerates from them (`make manifests`): never overwritten.
user_files=(
    Cargo.toml
    config/crd/bases/batch.tutorial.kubebuilder.io_cronjobs.yaml
    config/rbac/role.yaml
    config/samples/batch_v1_cronjob.yaml
    config/samples/batch_v2_cronjob.yaml
    src/api/batch/v1/cron_job.rs
    src/api/batch/v1/mod.rs
    src/api/batch/v2/cron_job.rs
    src/api/batch/v2/cron_job_conversion.rs
    src/api/batch/v2/mod.rs
    src/controller/cron_job.rs
    src/webhook/cron_job.rs
    tests/cron_job.rs
    tests/cron_job_conversion.rs
    tests/cron_job_webhook.rs
    tests/manager.rs
)

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/cronjob-operator"
cd "$scratch/cronjob-operator"
"$memop" init --domain tutorial.kubebuilder.io --repo tutorial.kubebuilder.io/project >/dev/null
"$memop" create api --group batch --version v1 --kind CronJob >/dev/null
"$memop" create webhook --group batch --version v1 --kind CronJob --defaulting --programmatic-validation >/dev/null
# The book's "Tutorial: Multi-Version API": v2 (a CronSchedule), v1 the storage version and hub.
"$memop" create api --group batch --version v2 --kind CronJob >/dev/null
"$memop" create webhook --group batch --version v1 --kind CronJob --conversion --spoke v2 >/dev/null
rm -rf vendor
cd - >/dev/null

example=examples/cronjob-operator
mkdir -p "$example"
# memop's files: everything the commands wrote but the user's files.
(cd "$scratch/cronjob-operator" && find . -type f | sed 's|^\./||') | while read -r file; do
    keep=false
    for user in "${user_files[@]}"; do
        [[ "$file" == "$user" && -e "$example/$file" ]] && keep=true
    done
    $keep && continue
    mkdir -p "$example/$(dirname "$file")"
    cp "$scratch/cronjob-operator/$file" "$example/$file"
done
# The example builds against memop's own crates/, not a second copy of them.
rm -rf "$example/vendor"
ln -s ../../crates "$example/vendor"
# memop's lock, plus what the example's own dependencies need (nothing else moves).
(cd "$example" && cargo metadata --format-version 1 >/dev/null)
echo "updated memop's files in $example; the user's are as they were (${user_files[*]})"
echo "next: cd $example && make manifests && make test"
