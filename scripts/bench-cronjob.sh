#!/usr/bin/env bash
# memop's CronJob operator (examples/cronjob-operator) against the book's own Go operator
# (kubebuilder's CronJob tutorial, docs/book/src/cronjob-tutorial/testdata/project), side by side,
# on a real control plane (issue 46, item 5).
#
#   scripts/bench-cronjob.sh [N...]          (default: 1000)
#
# For each N, four runs in the order memop, go, go, memop (ORDER=... to change it), each on a
# control plane of its own: etcd + kube-apiserver from scripts/envtest/build.sh, loopback only, with
# an audit log of every request (level Metadata), as scripts/bench-sidebyside.sh starts them. No
# kube-controller-manager: the Jobs are created and never run, which is all a CronJob operator
# does with them. A run:
#   1. installs the operator's own CRD (config/crd/bases) and creates N CronJobs
#      (batch.tutorial.kubebuilder.io/v1, schedule SCHEDULE, `*/1 * * * *`) in NAMESPACES (10)
#      namespaces, every field given as in the book's sample (Allow, startingDeadlineSeconds 60,
#      not suspended, history limits 3 and 1), before the manager starts;
#   2. starts the manager as a user of its own (a client certificate with CN memop-manager or
#      kubebuilder-manager, group system:masters for both, so RBAC plays no part), with
#      ENABLE_WEBHOOKS=false (both operators' main turns its webhooks off so), no leader election,
#      no metrics or probe ports;
#   3. the first scheduled minute at least WARMUP (30) seconds after the start is the manager's
#      first run: it has converged once every CronJob has its Job for that minute;
#   4. the measured window starts half a minute after a scheduled minute, the first such point
#      after convergence, and holds MINUTES (3) scheduled minutes; the run then waits up to
#      GRACE (60) seconds more for the last minute's Jobs;
#   5. reads the manager's peak RSS (VmHWM) and CPU seconds (utime + stime, at the window's start
#      and end) from /proc, lists the Jobs, stops everything and reads the audit log:
#      - the delay from each measured scheduled time to its Job's creationTimestamp (whole
#        seconds: the API server truncates it), median, 99th percentile and max over the
#        MINUTES x N Jobs, and the Jobs missing;
#      - the same delay to the API server's receipt of the Job's create (the audit log's
#        requestReceivedTimestamp, microseconds; the Job's name carries its scheduled time);
#      - the manager's requests in the window, by verb and resource, per Job created in it.
# `uptime`'s load averages are recorded at the start and end of each run. A Markdown table is
# printed at the end and written to $CACHE/results/.
#
# What it builds, in $CACHE (default ~/.cache/memop-bench; nothing in the repository):
#   - memop: `git archive` of MEMOP_REF (default HEAD: commit first what you want measured), and
#     `cargo build --release --locked --bin cronjob-operator` of its examples/cronjob-operator
#     (the project's release profile; the example's vendor/ is a link to crates/, so the whole
#     tree is archived); reused while the commit is the same.
#   - go: the book's project as kubebuilder's own docs generator makes it. The module zip of
#     sigs.k8s.io/kubebuilder/v4@KB_VERSION (v4.16.0) from the Go module proxy has no
#     docs/book/src/cronjob-tutorial/testdata/project (a directory with its own go.mod is left out
#     of a module zip), but it has hack/docs, the generator that writes that directory: it runs
#     the kubebuilder CLI (`init`, `create api`, `create webhook`), then edits the scaffold into
#     the book's types, controller, webhooks, main.go and tests, `go get github.com/robfig/cron`
#     and `make generate manifests`. The script copies the module out of the Go module cache,
#     adds a main package beside hack/docs/generate_samples.go that runs the CronJob tutorial's
#     steps only (not Prepare, which deletes controller-gen and kustomize found on PATH, nor
#     CodeGen's `make all build-installer` and Helm plugin, of which only `go fmt` is kept),
#     into $CACHE, with the kubebuilder CLI of the same version (`go install`, shared with
#     bench-sidebyside.sh); then `go build -o bin/manager cmd/main.go`. Its controller is the
#     book's line for line (gofmt'ed; checked against the repository's testdata/project).
# Before its runs, memop's release manager is run as a black box by the example's
# tests/manager.rs (CRONJOB_MANAGER=<the manager>: the book's behaviour on a control plane of its
# own, as the operator's ServiceAccount); BLACKBOX=0 skips that.
# Builds run under `nice -n 10`. PREPARE_ONLY=1 builds and stops. KEEP=1 keeps each run's
# directory (audit log, manager log); otherwise only its result and manager log are kept.
# Needs: go, cargo, python3, openssl, curl, kubectl, make.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
here="$repo/scripts/bench-cronjob"
CACHE=${CACHE:-$HOME/.cache/memop-bench}
KB_VERSION=${KB_VERSION:-v4.16.0}
MEMOP_REF=${MEMOP_REF:-HEAD}
ORDER=${ORDER:-memop go go memop}
NAMESPACES=${NAMESPACES:-10}
SCHEDULE=${SCHEDULE:-*/1 * * * *}
WARMUP=${WARMUP:-30}
MINUTES=${MINUTES:-3}
GRACE=${GRACE:-60}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-5400}
if [ $# -eq 0 ]; then set -- 1000; fi
for n in "$@"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N...]  (N: number of CronJobs)" >&2; exit 2; }
done
[ "$SCHEDULE" = "*/1 * * * *" ] || { echo "SCHEDULE: only */1 * * * * (the windows count whole minutes)" >&2; exit 2; }
[[ $MINUTES =~ ^[1-9][0-9]*$ ]] || { echo "MINUTES: a positive number" >&2; exit 2; }
for op in $ORDER; do
    case $op in memop | go) ;; *) echo "ORDER: unknown operator $op (memop, go)" >&2; exit 2 ;; esac
done

mkdir -p "$CACHE/bin" "$CACHE/results" "$CACHE/runs"
# The same lock as bench-sidebyside.sh: one benchmark at a time on the machine's cores.
exec 9> "$CACHE/.lock"
flock -n 9 || { echo "another benchmark is running ($CACHE/.lock)" >&2; exit 1; }

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# Every process this script starts and leaves running is in PIDS; all go on exit, however it exits.
PIDS=()
stop_pid() { # pid [seconds before SIGKILL]
    local pid=$1 grace=${2:-10} i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}" 5; done
    PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

assets=$("$repo/scripts/envtest/build.sh")
[ -x "$assets/kube-apiserver" ] && [ -x "$assets/etcd" ] || die "no kube-apiserver/etcd in $assets"

# ---------------------------------------------------------------------------------------------
# Builds
# ---------------------------------------------------------------------------------------------
commit=$(git -C "$repo" rev-parse --verify "$MEMOP_REF^{commit}")
short=${commit:0:12}
memop_dir="$CACHE/cronjob-memop-$short"
memop_project="$memop_dir/src/examples/cronjob-operator"
memop_manager="$memop_dir/manager"
memop_crds="$memop_project/config/crd/bases"
build_memop() {
    [ ! -x "$memop_manager" ] || return 0
    log "memop $short: cargo build --release --locked of examples/cronjob-operator from git archive $MEMOP_REF"
    rm -rf "$memop_dir" && mkdir -p "$memop_dir/src"
    git -C "$repo" archive "$commit" | tar -x -C "$memop_dir/src"
    [ -d "$memop_project" ] || die "no examples/cronjob-operator at $MEMOP_REF"
    local t0
    t0=$(now)
    (cd "$memop_project" && CARGO_TARGET_DIR="$CACHE/target-cronjob" \
        timeout "$BUILD_TIMEOUT" nice -n 10 cargo build --release --locked -q --bin cronjob-operator) ||
        die "building examples/cronjob-operator's manager failed"
    log "memop $short: manager built in $(echo "$(now) - $t0" | bc | cut -d. -f1) s"
    cp "$CACHE/target-cronjob/release/cronjob-operator" "$memop_manager.tmp"
    mv "$memop_manager.tmp" "$memop_manager"
}

go_dir="$CACHE/cronjob-go-$KB_VERSION"
go_project="$go_dir/project"
go_manager="$go_project/bin/manager"
go_crds="$go_project/config/crd/bases"
kubebuilder="$CACHE/bin/kubebuilder-$KB_VERSION"
build_go() {
    [ ! -x "$go_manager" ] || return 0
    if [ ! -x "$kubebuilder" ]; then
        log "kubebuilder $KB_VERSION: go install from the Go module proxy"
        rm -rf "$CACHE/bin/tmp"
        GOBIN="$CACHE/bin/tmp" timeout "$BUILD_TIMEOUT" nice -n 10 go install "sigs.k8s.io/kubebuilder/v4@$KB_VERSION"
        mv "$CACHE/bin/tmp/kubebuilder" "$kubebuilder" && rmdir "$CACHE/bin/tmp"
    fi
    if [ ! -f "$go_project/.generated" ]; then
        log "kubebuilder $KB_VERSION: the book's CronJob project from hack/docs (the module's docs generator)"
        local module
        mkdir -p "$go_dir"
        module=$(cd "$go_dir" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kubebuilder/v4@$KB_VERSION" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') ||
            die "go mod download sigs.k8s.io/kubebuilder/v4@$KB_VERSION failed"
        [ -d "$module/hack/docs/internal/cronjob-tutorial" ] || die "no hack/docs/internal/cronjob-tutorial in $module"
        rm -rf "$go_dir/kubebuilder" "$go_project"
        cp -r "$module" "$go_dir/kubebuilder"
        chmod -R u+w "$go_dir/kubebuilder"
        # The CronJob tutorial's steps of generate_samples.go, nothing else (see the top).
        mkdir -p "$go_dir/kubebuilder/hack/docs/bench-cronjob"
        cat > "$go_dir/kubebuilder/hack/docs/bench-cronjob/main.go" <<'EOF'
// Written by memop's scripts/bench-cronjob.sh: the CronJob tutorial's sample project, as
// hack/docs/generate_samples.go makes it, without Prepare (which deletes tools found on PATH)
// and CodeGen (make all, build-installer, the Helm plugin).
package main

import (
	"os"

	cronjob "sigs.k8s.io/kubebuilder/v4/hack/docs/internal/cronjob-tutorial"
)

func main() {
	if err := os.MkdirAll(os.Args[2], 0o755); err != nil {
		panic(err)
	}
	sp := cronjob.NewSample(os.Args[1], os.Args[2])
	sp.GenerateSampleProject()
	sp.UpdateTutorial()
}
EOF
        (
            cd "$go_dir/kubebuilder"
            timeout "$BUILD_TIMEOUT" nice -n 10 go run ./hack/docs/bench-cronjob "$kubebuilder" "$go_project"
            # CodeGen's `make all` would gofmt the edits (the book's copy is formatted); only that.
            cd "$go_project" && go fmt ./... > /dev/null
        ) > "$go_dir/generate.log" 2>&1 || die "generating the book's project failed: see $go_dir/generate.log"
        touch "$go_project/.generated"
    fi
    log "kubebuilder $KB_VERSION: go build (the book's manager)"
    local t0
    t0=$(now)
    (
        cd "$go_project"
        grep -q 'ENABLE_WEBHOOKS' cmd/main.go
        timeout "$BUILD_TIMEOUT" nice -n 10 go build -o bin/manager.tmp cmd/main.go
        mv bin/manager.tmp bin/manager
    ) > "$go_dir/build.log" 2>&1 || die "building the book's manager failed: see $go_dir/build.log"
    log "kubebuilder $KB_VERSION: manager built in $(echo "$(now) - $t0" | bc | cut -d. -f1) s"
}

# The release manager as a black box before it is measured: the example's tests/manager.rs runs
# it (CRONJOB_MANAGER) as the operator's ServiceAccount on a control plane of its own, and checks
# the book's behaviour (the due run's Job, named after its Unix time, with the scheduled-at
# annotation, in status.active, and lastScheduleTime). BLACKBOX=0 skips it.
check_memop() {
    [ "${BLACKBOX:-1}" = 1 ] || return 0
    log "memop $short: the release manager as a black box (tests/manager.rs)"
    (cd "$memop_project" && CARGO_TARGET_DIR="$CACHE/target-cronjob" CRONJOB_MANAGER="$memop_manager" \
        KUBEBUILDER_ASSETS="$assets" ENVTEST_REQUIRED=1 \
        timeout "$BUILD_TIMEOUT" nice -n 10 cargo test --locked -q --test manager) > "$memop_dir/blackbox.log" 2>&1 ||
        die "the release manager failed the book's behaviour: see $memop_dir/blackbox.log"
    grep -q '^test result: ok. 1 passed' "$memop_dir/blackbox.log" ||
        die "the black-box test did not run: see $memop_dir/blackbox.log"
    log "memop $short: the release manager passed ($memop_dir/blackbox.log)"
}

case " $ORDER " in *" memop "*) build_memop; check_memop; log "memop manager: $memop_manager ($(stat -c %s "$memop_manager") bytes)" ;; esac
case " $ORDER " in *" go "*) build_go; log "go manager: $go_manager ($(stat -c %s "$go_manager") bytes)" ;; esac
[ "${PREPARE_ONLY:-0}" = 1 ] && exit 0

# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One CA for serving and clients (bench-sidebyside.sh's).
make_certs() { # dir
    local d=$1 name
    (
        cd "$d"
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null
        openssl req -x509 -new -key ca.key -subj /CN=bench-ca -days 2 -out ca.crt \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
        leaf() { # name subject extensions
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
            openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
            printf '%b\n' "$3" > "$1.ext"
            openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
                -out "$1.crt" -extfile "$1.ext" 2>/dev/null
        }
        leaf apiserver /CN=localhost \
            'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature'
        for name in admin memop-manager kubebuilder-manager; do
            leaf "$name" "/O=system:masters/CN=$name" \
                'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature'
        done
        openssl genrsa -out sa.key 2048 2>/dev/null
        openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    )
}

write_kubeconfig() { # dir user port
    cat > "$1/$2.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: https://127.0.0.1:$3
    certificate-authority: $1/ca.crt
users:
- name: $2
  user:
    client-certificate: $1/$2.crt
    client-key: $1/$2.key
contexts:
- name: bench
  context: {cluster: bench, user: $2, namespace: default}
current-context: bench
EOF
}

wait_until() { # what seconds command...: polls every 0.2 s
    local what=$1 seconds=$2 deadline
    shift 2
    deadline=$(($(date +%s) + seconds))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || die "$what: not ready in $seconds s"
        sleep 0.2
    done
}

cpu_seconds() { # pid: utime + stime
    local stat
    stat=$(cat "/proc/$1/stat") || return 1
    stat=${stat##*) }
    echo "$stat" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / hz }'
}
peak_rss() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }

start_apiserver() { # dir etcd_port port
    local dir=$1
    "$assets/kube-apiserver" --etcd-servers="http://127.0.0.1:$2" --cert-dir="$dir" \
        --tls-cert-file="$dir/apiserver.crt" --tls-private-key-file="$dir/apiserver.key" \
        --secure-port="$3" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
        --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
        --disable-admission-plugins=ServiceAccount --authorization-mode=RBAC \
        --client-ca-file="$dir/ca.crt" --service-account-issuer="https://127.0.0.1:$3/" \
        --service-account-key-file="$dir/sa.pub" --service-account-signing-key-file="$dir/sa.key" \
        --endpoint-reconciler-type=none \
        --audit-policy-file="$dir/audit-policy.yaml" --audit-log-path="$dir/audit.log" \
        --audit-log-format=json --audit-log-maxsize=102400 >> "$dir/kube-apiserver.log" 2>&1 &
    PIDS+=($!)
    wait_until kube-apiserver 120 curl -sf --cacert "$dir/ca.crt" --cert "$dir/admin.crt" \
        --key "$dir/admin.key" "https://127.0.0.1:$3/readyz"
}

sleep_until() { # epoch seconds
    local left
    left=$(echo "$1 - $(now)" | bc)
    if [ "$(echo "$left > 0" | bc)" = 1 ]; then sleep "$left"; fi
}

run_one() { # operator n index
    local op=$1 n=$2 index=$3
    local dir="$runs/$n-$index-$op"
    mkdir -p "$dir"
    local load_start load_end
    load_start=$(loadavg)
    log "N=$n run $index: $op (load $load_start)"

    make_certs "$dir"
    cat > "$dir/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
EOF
    local etcd_port peer_port port
    etcd_port=$(free_port) peer_port=$(free_port) port=$(free_port)
    "$assets/etcd" --data-dir="$dir/etcd" --listen-client-urls="http://127.0.0.1:$etcd_port" \
        --advertise-client-urls="http://127.0.0.1:$etcd_port" \
        --listen-peer-urls="http://127.0.0.1:$peer_port" --unsafe-no-fsync=true \
        --quota-backend-bytes=8589934592 > "$dir/etcd.log" 2>&1 &
    PIDS+=($!)
    wait_until etcd 60 curl -sf "http://127.0.0.1:$etcd_port/health"
    start_apiserver "$dir" "$etcd_port" "$port"
    local admin=(--port "$port" --ca "$dir/ca.crt" --cert "$dir/admin.crt" --key "$dir/admin.key")
    local user crds manager
    case $op in
        memop) user=memop-manager crds=$memop_crds manager=$memop_manager ;;
        go) user=kubebuilder-manager crds=$go_crds manager=$go_manager ;;
    esac
    write_kubeconfig "$dir" admin "$port"
    write_kubeconfig "$dir" "$user" "$port"
    local kubectl=(timeout 120 kubectl --kubeconfig "$dir/admin.kubeconfig")
    "${kubectl[@]}" apply --server-side -f "$crds" > /dev/null
    # (kubectl wait fails outright, not waits, on a CRD whose status has no conditions yet)
    wait_until "the CRD established" 60 "${kubectl[@]}" wait --for condition=established --timeout=5s \
        crd/cronjobs.batch.tutorial.kubebuilder.io
    wait_until "the CronJob API" 60 "${kubectl[@]}" get cronjobs.batch.tutorial.kubebuilder.io -A
    local created
    created=$(timeout $((300 + n / 10)) python3 "$here/cron.py" create "${admin[@]}" --n "$n" \
        --namespaces "$NAMESPACES" --schedule "$SCHEDULE")
    log "  created: $created"

    # The manager, as its own user; nothing listens but the API server.
    local t_start pid
    t_start=$(now)
    KUBECONFIG="$dir/$user.kubeconfig" ENABLE_WEBHOOKS=false RUST_LOG=info POD_NAME=replica-a \
        POD_NAMESPACE=default "$manager" --leader-elect=false --metrics-bind-address=0 \
        --health-probe-bind-address=0 > "$dir/manager.log" 2>&1 &
    pid=$!
    PIDS+=($pid)

    # The first scheduled minute WARMUP seconds or more after the start: every CronJob's Job.
    local s0 first
    s0=$(( ( $(date +%s) + WARMUP + 59 ) / 60 * 60 ))
    log "  manager started; first scheduled minute $(date -u -d "@$s0" +%H:%M:%S)"
    first=$(python3 "$here/cron.py" wait "${admin[@]}" --n "$n" --at "$s0" --start "$s0" \
        --timeout $((120 + n / 10))) || {
        log "  first minute: $first"; tail -5 "$dir/manager.log" >&2; die "N=$n $op: not every CronJob had its Job"; }
    local t_conv
    t_conv=$(now)
    kill -0 "$pid" 2>/dev/null || die "the $op manager exited: $(tail -3 "$dir/manager.log")"
    log "  converged: $first"

    # The window: from half a minute after a scheduled minute, MINUTES scheduled minutes.
    local w_start w_end ats=() cpu_w0 cpu_w1 k
    w_start=$(( ( ${t_conv%.*} - 30 + 59 ) / 60 * 60 + 30 ))
    w_end=$((w_start + 60 * MINUTES))
    for ((k = 1; k <= MINUTES; k++)); do ats+=(--at $((w_start - 30 + 60 * k))); done
    log "  measuring $(date -u -d "@$w_start" +%H:%M:%S) to $(date -u -d "@$w_end" +%H:%M:%S)"
    sleep_until "$w_start"
    cpu_w0=$(cpu_seconds "$pid") || die "the $op manager exited: $(tail -3 "$dir/manager.log")"
    sleep_until "$w_end"
    cpu_w1=$(cpu_seconds "$pid") || die "the $op manager exited: $(tail -3 "$dir/manager.log")"
    local last
    last=$(python3 "$here/cron.py" wait "${admin[@]}" --n "$n" --at $((w_end - 30)) --start "$w_end" \
        --timeout "$GRACE") || log "  last minute not complete after $GRACE s: $last"
    local jobs hwm cpu
    jobs=$(python3 "$here/cron.py" jobs "${admin[@]}" --n "$n" "${ats[@]}" \
        --window-start "$w_start" --window-end "$w_end")
    hwm=$(peak_rss "$pid") || die "the $op manager exited"
    cpu=$(cpu_seconds "$pid") || die "the $op manager exited"
    load_end=$(loadavg)
    stop_pid "$pid" 15
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}" 20; done
    PIDS=()

    local audit
    audit=$(python3 "$here/cron.py" audit --log "$dir/audit.log" --user "$user" --n "$n" "${ats[@]}" \
        --window-start "$w_start" --window-end "$w_end")
    python3 - "$dir/result.json" "$op" "$n" "$index" "$created" "$first" "$jobs" "$audit" "$hwm" \
        "$cpu_w0" "$cpu_w1" "$cpu" "$MINUTES" "$load_start" "$load_end" "$t_start" "$s0" "$w_start" \
        "$w_end" <<'EOF'
import json, sys
(out, op, n, index, created, first, jobs, audit, hwm, cpu_w0, cpu_w1, cpu, minutes,
 load_start, load_end, t_start, s0, w_start, w_end) = sys.argv[1:]
json.dump({
    "operator": op, "n": int(n), "run": int(index), "created": json.loads(created),
    "first": json.loads(first), "jobs": json.loads(jobs), "audit": json.loads(audit),
    "rss_kib": int(hwm), "cpu_window": round(float(cpu_w1) - float(cpu_w0), 2), "cpu_total": float(cpu),
    "minutes": int(minutes), "load_start": load_start, "load_end": load_end,
    "t": {"start": float(t_start), "first_minute": int(s0), "window_start": int(w_start), "window_end": int(w_end)},
}, open(out, "w"), indent=1)
EOF
    log "  delays: $(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["jobs"]["all"]; print(a)' "$dir/result.json")"
    log "  peak RSS $((hwm / 1024)) MiB, CPU $(echo "$cpu_w1 $cpu_w0" | awk '{ printf "%.2f", $1 - $2 }') s in the window, $cpu s in all (load $load_end)"
    if [ "${KEEP:-0}" != 1 ]; then
        find "$dir" -mindepth 1 -maxdepth 1 ! -name result.json ! -name manager.log -exec rm -rf {} +
    fi
}

stamp=$(date +%Y%m%d-%H%M%S)
runs="$CACHE/runs/cronjob-$stamp"
mkdir -p "$runs"
log "runs in $runs; memop $short, kubebuilder $KB_VERSION's book project; N = $*; order: $ORDER"
for n in "$@"; do
    i=0
    for op in $ORDER; do
        i=$((i + 1))
        run_one "$op" "$n" "$i"
    done
done

results="$CACHE/results/cronjob-$stamp.md"
{
    echo "memop $short (examples/cronjob-operator) vs the book's CronJob project (kubebuilder $KB_VERSION's hack/docs), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, N = $*, $MINUTES scheduled minutes measured"
    echo
    python3 "$here/table.py" "$runs"/*/result.json
} > "$results"
cat "$results"
log "results: $results"
