#!/usr/bin/env bash
# memop's generated Memcached operator against kubebuilder's, side by side, on a real control plane.
#
#   scripts/bench-sidebyside.sh [N...]          (default: 1000 10000)
#
# For each N, four runs in the order memop, kubebuilder, kubebuilder, memop (ORDER=... to change
# it), each on a control plane of its own: etcd + kube-apiserver from scripts/envtest/build.sh,
# loopback only, with an audit log of every request (level Metadata). A run:
#   1. creates N Memcached objects (size 1) in NAMESPACES namespaces, before the operator starts;
#   2. starts the operator's release manager as a user of its own (a client certificate with
#      CN memop-manager or kubebuilder-manager; group system:masters for both, so RBAC plays no
#      part), no leader election, no metrics or probe ports;
#   3. times until every object has its Deployment, and a status condition (any);
#   4. leaves it alone for QUIET seconds (60);
#   5. patches spec.size of all N to 2, and times until every Deployment has 2 replicas;
#   6. reads the manager's peak RSS (VmHWM) and CPU seconds (utime + stime) from /proc, stops
#      everything, and counts the manager's requests per phase in the audit log: reads
#      (get/list/watch), writes (create/update/patch/delete), GETs of Deployments.
# At the end of each phase (converge, quiet, resize, relist) the manager's RSS (VmRSS) and its
# peak within the phase are read too (VmHWM, reset for the next phase through
# /proc/<pid>/clear_refs): the table "RSS per phase" says which phase sets the peak.
# `uptime`'s load averages are recorded at the start and end of each run. A Markdown table is
# printed at the end and written to $CACHE/results/.
#
# PODS=1 runs the Deployments' pods for real: kube-controller-manager (deployment and replicaset
# controllers), kube-scheduler and kwok (one simulated node, whose pods become Ready at once) join
# each control plane. Converging then also waits until every pod is Ready, resizing goes from 1 to
# RESIZE_TO (3) replicas and waits until every new pod is Ready, then SETTLE seconds (30) more for
# the operators' last status writes; the column "status writes per object resizing" counts the
# writes of the Memcached status while the replicas come up (a write per pod would show there).
# Use a smaller N (100 to 1,000): every object has pods now.
#
# FAILOVER=1 runs each manager with leader election (its Lease in `default`), starts a second
# replica of it once the first has converged, and after the resize kills the leader (SIGKILL: no
# release, so the standby waits out the 15 s lease, as after a crashed node), resizes all N again
# (to RESIZE_TO + 1) and times until every Deployment has it: the column "failover" is that time,
# and the requests of that phase show whether the new leader listed everything again (both keep
# their caches synced while they wait: memop's warm standbys, controller-runtime's informers on
# every replica). kubebuilder's cmd/main.go takes no Lease namespace outside a cluster: a copy of it,
# cmd/failover/main.go, sets LeaderElectionNamespace from POD_NAMESPACE.
#
# RELIST=1 forces every watch to list again after the resize (and before a failover): the API
# server is stopped, a write straight to etcd moves its revision on and etcd is compacted to it,
# and the API server starts again, so each watch that reconnects from the revision it had seen is
# told 410 Gone ("too old resource version") and lists everything anew, as after an API server
# upgrade or a long partition. The run then waits RELIST_SETTLE seconds (60); the manager's peak
# RSS is read after that, so it includes the relist, and the column "lists in relist" shows that
# it did list again. For memop-shards, whose replicas stop once they cannot renew their Leases for
# the renew deadline (about as long as the API server is down), the last replica is killed
# instead: once its Lease expires the others take its buckets in, their caches listing again with
# the larger shares (the peak RSS of each survivor, before and through that, is shown).
# Not with FAILOVER=1: the outage outlasts a leader's renew deadline, and the leader exits.
#
# EDITS=1 restarts the manager at the end of a run (after the resize and any relist, so the
# other columns are as without it; once every status reports the resize, so that the new
# process owes no status write of the old one's) and, EDIT_DELAY (2) seconds later, while the new process
# lists and reconciles all N, patches spec.size of EDIT_COUNT (20) single objects, one a second,
# each timed from its request until the watch event that shows its Deployment with the new
# replicas arrives (stamped as read, not polled): the column "edit latency" (median, 99th
# percentile by nearest rank, max), what a user waits for after a restart at scale. Not with
# FAILOVER=1 or memop-shards.
#
# The operator `memop-shards` (ORDER="memop memop-shards ...") runs SHARDS (3) replicas of memop's
# manager with --sharding, all started at once (Leases in `default`, one per replica): its times
# are until every object is done, whichever replica did it; its requests are all replicas'
# together (one user), Lease renewals included; its peak RSS is the largest replica's, and each
# replica's is listed below the table.
#
# What it builds, in $CACHE (default ~/.cache/memop-bench; nothing in the repository):
#   - memop, from `git archive` of MEMOP_REF (default HEAD: commit first what you want measured),
#     then the README's two commands, then `cargo build --release --locked` of that project
#     (about 4 min on 2 cores the first time; reused while the commit is the same);
#   - kubebuilder $KB_VERSION from its Go module (the Go module proxy), the Getting Started
#     tutorial's operator scaffolded by it (deploy-image plugin), `make generate manifests`,
#     `go build -o bin/manager cmd/main.go`.
# MEMOP_MANAGER=path runs that manager binary instead of building MEMOP_REF's (the CRDs still
# come from MEMOP_REF's project): a build with symbols for a heap profiler, say.
# MANAGER_ENV="VAR=value ..." is given to every manager process (say, MALLOC_ARENA_MAX=2, or
# LD_PRELOAD of another malloc, to compare allocators with one binary).
# Builds run under `nice -n 10`. PREPARE_ONLY=1 builds and stops. KEEP=1 keeps each run's
# directory (audit log, manager log); otherwise only its result and manager log are kept.
# Needs: go, cargo, python3, openssl, curl, kubectl.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
here="$repo/scripts/bench-sidebyside"
CACHE=${CACHE:-$HOME/.cache/memop-bench}
KB_VERSION=${KB_VERSION:-v4.16.0}
MEMOP_REF=${MEMOP_REF:-HEAD}
ORDER=${ORDER:-memop kubebuilder kubebuilder memop}
NAMESPACES=${NAMESPACES:-10}
QUIET=${QUIET:-60}
PODS=${PODS:-0}
FAILOVER=${FAILOVER:-0}
RELIST=${RELIST:-0}
RELIST_SETTLE=${RELIST_SETTLE:-60}
SHARDS=${SHARDS:-3}
RESIZE_TO=${RESIZE_TO:-$([ "$PODS" = 1 ] && echo 3 || echo 2)}
SETTLE=${SETTLE:-30}
MANAGER_ENV=${MANAGER_ENV:-}
EDITS=${EDITS:-0}
EDIT_COUNT=${EDIT_COUNT:-20}
EDIT_DELAY=${EDIT_DELAY:-2}
IMAGE=memcached:1.6.26-alpine3.19
BUILD_TIMEOUT=${BUILD_TIMEOUT:-5400}
if [ $# -eq 0 ]; then set -- 1000 10000; fi
for n in "$@"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N...]  (N: number of objects)" >&2; exit 2; }
done

refuse() { echo "$*" >&2; exit 2; }
for op in $ORDER; do
    case $op in memop | memop-shards | kubebuilder) ;; *) refuse "ORDER: unknown operator $op (memop, memop-shards, kubebuilder)" ;; esac
    # Combinations that measure nothing, refused before anything is built.
    if [ "$op" = memop-shards ]; then
        [ "$FAILOVER" != 1 ] || refuse "FAILOVER=1 is for one leader and a standby, not for memop-shards"
        [ "$EDITS" != 1 ] || refuse "EDITS=1 is for one replica, not for memop-shards"
    fi
done
[ "$EDITS" != 1 ] || [ "$FAILOVER" != 1 ] || refuse "EDITS=1 is for one replica without FAILOVER"
# The forced relist stops the API server for longer than a leader's renew deadline: the leader
# then exits, as client-go's and controller-runtime's do, and the failover measures that exit
# instead of a takeover with synced caches.
[ "$RELIST" != 1 ] || [ "$FAILOVER" != 1 ] ||
    refuse "RELIST=1 with FAILOVER=1: the API server's outage outlasts the leader's renew deadline, so the leader exits before the failover; measure them in separate runs"

mkdir -p "$CACHE/bin" "$CACHE/results" "$CACHE/runs"
exec 9> "$CACHE/.lock"
flock -n 9 || { echo "another bench-sidebyside.sh is running ($CACHE/.lock)" >&2; exit 1; }

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
if [ "$PODS" = 1 ]; then
    for binary in kube-controller-manager kube-scheduler kwok kwok.yaml; do
        [ -e "$assets/$binary" ] || die "PODS=1 needs $binary in $assets (scripts/envtest/build.sh builds it)"
    done
fi

# ---------------------------------------------------------------------------------------------
# Builds
# ---------------------------------------------------------------------------------------------
commit=$(git -C "$repo" rev-parse --verify "$MEMOP_REF^{commit}")
short=${commit:0:12}
memop_dir="$CACHE/memop-$short"
memop_manager=${MEMOP_MANAGER:-$memop_dir/manager}
memop_crds="$memop_dir/memcached-operator/config/crd/bases"
build_memop() {
    [ ! -x "$memop_manager" ] || return 0
    log "memop $short: building memop (release) from git archive $MEMOP_REF"
    rm -rf "$memop_dir" && mkdir -p "$memop_dir/src"
    git -C "$repo" archive "$commit" | tar -x -C "$memop_dir/src"
    (cd "$memop_dir/src" && CARGO_TARGET_DIR="$CACHE/target-memop" \
        timeout "$BUILD_TIMEOUT" nice -n 10 cargo build --release --locked -q -p memop) ||
        die "building memop failed"
    memop="$CACHE/target-memop/release/memop"
    log "memop $short: generating the Memcached project"
    "$memop" -C "$memop_dir/memcached-operator" init --domain example.com >/dev/null
    "$memop" -C "$memop_dir/memcached-operator" create api --group cache --kind Memcached >/dev/null
    log "memop $short: cargo build --release --locked of the project (slow the first time)"
    t0=$(now)
    (cd "$memop_dir/memcached-operator" && CARGO_TARGET_DIR="$CACHE/target-operator" \
        timeout "$BUILD_TIMEOUT" nice -n 10 cargo build --release --locked -q) ||
        die "building the generated project's manager failed"
    log "memop $short: manager built in $(echo "$(now) - $t0" | bc | cut -d. -f1) s"
    cp "$CACHE/target-operator/release/memcached-operator" "$memop_manager.tmp"
    mv "$memop_manager.tmp" "$memop_manager"
}

kb_dir="$CACHE/kubebuilder-$KB_VERSION"
kb_project="$kb_dir/memcached-operator"
kb_manager="$kb_project/bin/manager"
kb_manager_le="$kb_project/bin/manager-failover"
kubebuilder="$CACHE/bin/kubebuilder-$KB_VERSION"
kb_crds="$kb_project/config/crd/bases"
build_kubebuilder() {
    [ ! -x "$kb_manager" ] || [ ! -x "$kb_manager_le" ] || return 0
    if [ ! -x "$kubebuilder" ]; then
        log "kubebuilder $KB_VERSION: go install from the Go module proxy"
        GOBIN="$CACHE/bin/tmp" timeout "$BUILD_TIMEOUT" nice -n 10 go install "sigs.k8s.io/kubebuilder/v4@$KB_VERSION"
        mv "$CACHE/bin/tmp/kubebuilder" "$kubebuilder" && rmdir "$CACHE/bin/tmp"
    fi
    if [ ! -f "$kb_project/.scaffolded" ]; then
        log "kubebuilder $KB_VERSION: scaffolding the Getting Started operator"
        rm -rf "$kb_project" && mkdir -p "$kb_project"
        (
            cd "$kb_project"
            timeout "$BUILD_TIMEOUT" nice -n 10 "$kubebuilder" init --domain example.com \
                --repo example.com/memcached-operator
            timeout "$BUILD_TIMEOUT" nice -n 10 "$kubebuilder" create api --group cache \
                --version v1alpha1 --kind Memcached --image="$IMAGE" \
                --image-container-command="memcached,--memory-limit=64,-o,modern,-v" \
                --image-container-port="11211" --run-as-user="1001" \
                --plugins="deploy-image/v1-alpha" --make=false
        ) > "$kb_dir/scaffold.log" 2>&1 || die "kubebuilder scaffolding failed: see $kb_dir/scaffold.log"
        touch "$kb_project/.scaffolded"
    fi
    log "kubebuilder $KB_VERSION: make generate manifests, go build (manager)"
    t0=$(now)
    (
        cd "$kb_project"
        timeout "$BUILD_TIMEOUT" nice -n 10 make generate manifests
        timeout "$BUILD_TIMEOUT" nice -n 10 go build -o bin/manager.tmp cmd/main.go
        mv bin/manager.tmp bin/manager
        # FAILOVER=1: the same manager, with the Lease's namespace from POD_NAMESPACE.
        mkdir -p cmd/failover
        sed 's|^\(\s*\)LeaderElectionID:\(.*\)$|\1LeaderElectionID:\2\n\1LeaderElectionNamespace: os.Getenv("POD_NAMESPACE"),|' \
            cmd/main.go > cmd/failover/main.go
        grep -q 'LeaderElectionNamespace: os.Getenv' cmd/failover/main.go
        timeout "$BUILD_TIMEOUT" nice -n 10 go build -o bin/manager-failover ./cmd/failover
    ) > "$kb_dir/build.log" 2>&1 || die "building kubebuilder's manager failed: see $kb_dir/build.log"
    log "kubebuilder $KB_VERSION: manager built in $(echo "$(now) - $t0" | bc | cut -d. -f1) s"
}

case " $ORDER " in *" memop "* | *" memop-shards "*) build_memop; log "memop manager: $memop_manager ($(stat -c %s "$memop_manager") bytes)" ;; esac
case " $ORDER " in *" kubebuilder "*) build_kubebuilder; log "kubebuilder manager: $kb_manager ($(stat -c %s "$kb_manager") bytes)" ;; esac
[ "${PREPARE_ONLY:-0}" = 1 ] && exit 0

# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Three CAs would be envtest's way; one CA for serving and clients is enough here.
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
    # after "pid (comm) ": state is field 1, utime field 12, stime field 13
    echo "$stat" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / hz }'
}

# PODS=1: kube-controller-manager, kube-scheduler and kwok on the control plane of $1, and the
# node kwok simulates, untainted (the node lifecycle controller that would lift the not-ready
# taint does not run: it would evict pods from a node without heartbeats), Ready.
start_pods() { # dir
    local d=$1 kubeconfig="$1/admin.kubeconfig"
    "$assets/kube-controller-manager" --kubeconfig="$kubeconfig" --leader-elect=false \
        --secure-port=0 --use-service-account-credentials=false \
        --controllers=deployment-controller,replicaset-controller \
        --kube-api-qps=1000 --kube-api-burst=2000 > "$d/kube-controller-manager.log" 2>&1 &
    PIDS+=($!)
    "$assets/kube-scheduler" --kubeconfig="$kubeconfig" --leader-elect=false --secure-port=0 \
        > "$d/kube-scheduler.log" 2>&1 &
    PIDS+=($!)
    "$assets/kwok" --kubeconfig="$kubeconfig" --config="$assets/kwok.yaml" \
        --manage-all-nodes=true > "$d/kwok.log" 2>&1 &
    PIDS+=($!)
    printf '%s\n' 'apiVersion: v1' 'kind: Node' 'metadata:' '  name: kwok-node' \
        '  labels: {kubernetes.io/hostname: kwok-node, type: kwok}' \
        '  annotations: {kwok.x-k8s.io/node: fake}' | "${kubectl[@]}" create -f - > /dev/null
    "${kubectl[@]}" patch node kwok-node --type merge -p '{"spec":{"taints":null}}' > /dev/null
    "${kubectl[@]}" wait --for condition=Ready --timeout=60s node/kwok-node > /dev/null ||
        die "kwok did not make its node Ready: $(tail -3 "$d/kwok.log")"
}

# kube-apiserver of run directory $1 on etcd port $2, serving on port $3; its pid in apiserver_pid.
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
    apiserver_pid=$!
    PIDS+=($apiserver_pid)
    wait_until kube-apiserver 120 curl -sf --cacert "$dir/ca.crt" --cert "$dir/admin.crt" \
        --key "$dir/admin.key" "https://127.0.0.1:$3/readyz"
}

# RELIST=1: every watch of the run's managers has to list again (see the top of this file).
force_relist() { # dir etcd_port port
    local etcd="http://127.0.0.1:$2" revision
    stop_pid "$apiserver_pid" 30
    # A write the API server never sees takes etcd's revision past any a watch has seen, and the
    # compaction to it leaves no history to resume from: every watch gets 410 Gone.
    revision=$(curl -sf -X POST "$etcd/v3/kv/put" \
        -d "{\"key\": \"$(printf bench-relist | base64)\", \"value\": \"$(printf x | base64)\"}" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])') ||
        die "cannot write to etcd at $etcd"
    curl -sf -X POST "$etcd/v3/kv/compaction" -d "{\"revision\": \"$revision\", \"physical\": true}" \
        > /dev/null || die "cannot compact etcd at $etcd to $revision"
    start_apiserver "$1" "$2" "$3"
    log "  API server restarted over etcd compacted to revision $revision"
}

# A process's peak RSS (KiB) since it started: VmHWM, which mark_phase resets at the end of
# each phase, or the largest peak of the phases before, if larger. Fails when it has exited.
hwm_of() { # pid
    local hwm
    hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$1/status") || return 1
    [ -n "$hwm" ] || return 1
    [ "${PEAKS[$1]:-0}" -gt "$hwm" ] && hwm=${PEAKS[$1]}
    echo "$hwm"
}
# The largest peak RSS (KiB) of the processes given; fails when one has exited.
peak_rss() { # pid...
    local pid max=0 hwm
    for pid in "$@"; do
        hwm=$(hwm_of "$pid") || return 1
        [ "$hwm" -gt "$max" ] && max=$hwm
    done
    echo "$max"
}
# Each one's peak RSS (KiB), comma-separated.
each_rss() { # pid...
    local pid out=()
    for pid in "$@"; do out+=("$(hwm_of "$pid")") || return 1; done
    (IFS=,; echo "${out[*]}")
}
# The end of a phase of the run: appends to PHASES "name:peak:rss" (KiB, the largest replica's),
# the peak RSS within the phase (VmHWM since the last mark; the kernel resets it when 5 is
# written to /proc/<pid>/clear_refs) and the RSS at its end (VmRSS), then starts the next
# phase's peak. PEAKS keeps each process's peak over the phases, for peak_rss. Where the reset
# is refused, VmHWM goes on from the start and a phase's peak is the run's so far.
# HEAPSTATS=1 (glibc's malloc, one replica) adds the heap at the phase's end: the bytes in use
# and the bytes malloc holds from the system, over all its arenas, from glibc's malloc_stats(),
# which gdb calls in the manager (it prints to the manager's stderr, its log); what the system
# holds and is not in use is the allocator's free memory (fragmentation, arenas' slack).
declare -A PEAKS=()
PHASES=""
mark_phase() { # name pid...
    local name=$1 pid hwm rss peak=0 now_rss=0 heap=""
    shift
    for pid in "$@"; do
        hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status") || return 1
        rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status") || return 1
        [ "$hwm" -gt "$peak" ] && peak=$hwm
        [ "$rss" -gt "$now_rss" ] && now_rss=$rss
        [ "${PEAKS[$pid]:-0}" -gt "$hwm" ] || PEAKS[$pid]=$hwm
        echo 5 2>/dev/null > "/proc/$pid/clear_refs" || true
    done
    if [ "${HEAPSTATS:-0}" = 1 ] && [ $# = 1 ]; then
        timeout 60 gdb -p "$1" -batch -ex 'call (void)malloc_stats()' > /dev/null 2>&1 || true
        sleep 0.2
        # The last "Total (incl. mmap):" block of the log: system bytes, then in use bytes.
        heap=$(tac "$dir/manager.log" | grep -m1 -B2 '^Total (incl. mmap):' |
            awk '/in use bytes/ { u = $NF } /system bytes/ { s = $NF } END { if (u && s) printf ":%d:%d", u / 1024, s / 1024 }')
    fi
    PHASES="$PHASES${PHASES:+ }$name:$peak:$now_rss$heap"
}
# Their CPU seconds together.
cpu_total() { # pid...
    local pid sum=0 cpu
    for pid in "$@"; do
        cpu=$(cpu_seconds "$pid") || return 1
        sum=$(echo "$sum + $cpu" | bc)
    done
    echo "$sum"
}
all_alive() { # pid...
    local pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null || return 1; done
}

run_one() { # operator n index
    local op=$1 n=$2 index=$3
    local dir="$runs/$n-$index-$op"
    mkdir -p "$dir"
    PEAKS=() PHASES=""
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
        memop | memop-shards) user=memop-manager crds=$memop_crds manager=$memop_manager ;;
        kubebuilder) user=kubebuilder-manager crds=$kb_crds manager=$kb_manager ;;
    esac
    local elect=false replicas=1 sharding=()
    if [ "$op" = memop-shards ]; then
        replicas=$SHARDS sharding=(--sharding)
    fi
    if [ "$FAILOVER" = 1 ]; then
        elect=true
        [ "$op" = kubebuilder ] && manager=$kb_manager_le
    fi
    write_kubeconfig "$dir" admin "$port"
    write_kubeconfig "$dir" "$user" "$port"
    local kubectl=(timeout 120 kubectl --kubeconfig "$dir/admin.kubeconfig")
    if [ "$PODS" = 1 ]; then start_pods "$dir"; fi
    "${kubectl[@]}" apply --server-side -f "$crds" > /dev/null
    "${kubectl[@]}" wait --for condition=established --timeout=60s crd/memcacheds.cache.example.com > /dev/null
    wait_until "the Memcached API" 60 "${kubectl[@]}" get memcacheds -A
    local created
    created=$(timeout $((300 + n / 10)) python3 "$here/kube.py" create "${admin[@]}" --n "$n" \
        --namespaces "$NAMESPACES" --size 1)
    log "  created: $created"

    # The manager (each replica of it), as its own user; nothing listens but the API server.
    local t_start pid pids=() names=(a b c d e f g h) r
    [ "$replicas" -le ${#names[@]} ] || die "SHARDS: at most ${#names[@]}"
    t_start=$(now)
    start_replica() { # index log
        env $MANAGER_ENV KUBECONFIG="$dir/$user.kubeconfig" MEMCACHED_IMAGE=$IMAGE RUST_LOG=info POD_NAME="replica-${names[$1]}" \
            POD_NAMESPACE=default "$manager" --leader-elect=$elect "${sharding[@]}" --metrics-bind-address=0 \
            --health-probe-bind-address=0 >> "$2" 2>&1 &
        PIDS+=($!)
    }
    for ((r = 0; r < replicas; r++)); do
        start_replica "$r" "$dir/manager$([ "$r" = 0 ] || echo "-${names[r]}").log"
        pids+=($!)
    done
    pid=${pids[0]}
    local converge t_conv cpu_conv
    converge=$(python3 "$here/kube.py" wait "${admin[@]}" --until converged --n "$n" \
        --start "$t_start" --timeout $((240 + n / 5))) || {
        log "  converge: $converge"; tail -5 "$dir/manager.log" >&2; die "N=$n $op did not converge"; }
    local ready
    if [ "$PODS" = 1 ]; then
        ready=$(python3 "$here/kube.py" wait "${admin[@]}" --until ready --n "$n" --size 1 \
            --start "$t_start" --timeout $((240 + n / 5))) || {
            log "  ready: $ready"; die "N=$n $op: the pods did not become ready"; }
        log "  pods ready: $ready"
    fi
    t_conv=$(now)
    cpu_conv=$(cpu_total "${pids[@]}") || die "the $op manager exited: $(tail -3 "$dir"/manager*.log)"
    mark_phase converge "${pids[@]}" || die "the $op manager exited"
    log "  converged: $converge"
    local standby=""
    if [ "$FAILOVER" = 1 ]; then
        # The second replica, waiting for the Lease through the quiet minute and the resize.
        env $MANAGER_ENV KUBECONFIG="$dir/$user.kubeconfig" MEMCACHED_IMAGE=$IMAGE RUST_LOG=info POD_NAME=replica-b \
            POD_NAMESPACE=default "$manager" --leader-elect=true --metrics-bind-address=0 \
            --health-probe-bind-address=0 > "$dir/manager-standby.log" 2>&1 &
        standby=$!
        PIDS+=($standby)
    fi

    sleep "$QUIET"
    local t_quiet
    t_quiet=$(now)
    all_alive "${pids[@]}" || die "the $op manager exited: $(tail -3 "$dir"/manager*.log)"
    mark_phase quiet "${pids[@]}" || die "the $op manager exited"

    local t_resize resize resized t_end
    t_resize=$(now)
    resize=$(timeout $((300 + n / 10)) python3 "$here/kube.py" resize "${admin[@]}" --size "$RESIZE_TO")
    resized=$(python3 "$here/kube.py" wait "${admin[@]}" --until resized --n "$n" --size "$RESIZE_TO" \
        --start "$t_resize" --timeout $((240 + n / 5))) || {
        log "  resize: $resized"; die "N=$n $op did not resize"; }
    log "  resized: $resized (patches: $resize)"
    if [ "$PODS" = 1 ]; then
        ready=$(python3 "$here/kube.py" wait "${admin[@]}" --until ready --n "$n" --size "$RESIZE_TO" \
            --start "$t_resize" --timeout $((240 + n / 5))) || {
            log "  ready: $ready"; die "N=$n $op: the new pods did not become ready"; }
        log "  pods ready: $ready; settling for $SETTLE s"
        sleep "$SETTLE"
    fi
    local t_resized t_relisted hwm_before
    t_resized=$(now)
    t_end=$t_resized
    mark_phase resize "${pids[@]}" || die "the $op manager exited"
    hwm_before=$(peak_rss "${pids[@]}") || die "the $op manager exited"
    local rss_each_before cpu_killed=0
    rss_each_before=$(each_rss "${pids[@]}") || die "the $op manager exited"
    if [ "$RELIST" = 1 ] && [ "$op" = memop-shards ]; then
        # A sharded replica stops once it cannot renew its Lease for the renew deadline, and
        # the API server is down about that long: its relist is the one a lost member causes.
        # The last replica is killed (as by an OOM or a lost node); once its Lease expires, the
        # others claim its buckets, and their caches list again with their larger shares.
        local victim=${pids[${#pids[@]} - 1]}
        cpu_killed=$(cpu_seconds "$victim") || die "the $op manager exited"
        kill -9 "$victim"
        wait "$victim" 2>/dev/null || true
        unset 'pids[${#pids[@]}-1]'
        log "  RELIST: killed replica ${names[${#pids[@]}]}; the other $((${#pids[@]})) take its buckets in"
        sleep "$RELIST_SETTLE"
        all_alive "${pids[@]}" || die "the $op manager exited after the relist: $(tail -3 "$dir"/manager*.log)"
        t_end=$(now)
    elif [ "$RELIST" = 1 ]; then
        force_relist "$dir" "$etcd_port" "$port"
        sleep "$RELIST_SETTLE"
        all_alive "${pids[@]}" || die "the $op manager exited after the relist: $(tail -3 "$dir"/manager*.log)"
        t_end=$(now)
    fi
    t_relisted=$t_end
    if [ "$RELIST" = 1 ]; then mark_phase relist "${pids[@]}" || die "the $op manager exited"; fi

    local hwm cpu rss_each
    hwm=$(peak_rss "${pids[@]}") || die "the $op manager exited"
    rss_each=$(each_rss "${pids[@]}") || die "the $op manager exited"
    cpu=$(cpu_total "${pids[@]}") || die "the $op manager exited"
    cpu=$(echo "$cpu + $cpu_killed" | bc)
    local edits="null"
    if [ "$EDITS" = 1 ]; then
        # A restart, and edits of single objects while the new process reconciles all N. First
        # every status reports the resize, so that the restart finds nothing owed: memop holds
        # the status writes of a fleet resized at once until its burst of applies ends, and a
        # restart before then would make the new process write them while the edits come.
        local reported
        if reported=$(python3 "$here/kube.py" wait "${admin[@]}" --until reported --n "$n" \
            --start "$(now)" --timeout $((240 + n / 5))); then
            log "  statuses reported: $reported"
        else
            log "  the statuses did not all report the resize: $reported"
        fi
        stop_pid "$pid" 15
        start_replica 0 "$dir/manager.log"
        pid=$!
        pids[0]=$pid
        sleep "$EDIT_DELAY"
        log "  restarted the manager; $EDIT_COUNT edits of single objects, one a second"
        edits=$(python3 "$here/kube.py" edits "${admin[@]}" --n "$n" --namespaces "$NAMESPACES" \
            --count "$EDIT_COUNT" --size $((RESIZE_TO + 1)) --interval 1 --timeout 600) ||
            { log "  the edits failed: $edits"; edits=null; }
        log "  edits: $edits"
        t_end=$(now)
    fi
    local failover="null" t_kill="$t_end" standby_hwm=0
    if [ "$FAILOVER" = 1 ]; then
        kill -0 "$standby" 2>/dev/null || die "the $op standby exited: $(tail -3 "$dir/manager-standby.log")"
        t_kill=$(now)
        kill -9 "$pid"
        wait "$pid" 2>/dev/null || true
        log "  killed the leader; resizing to $((RESIZE_TO + 1))"
        timeout $((300 + n / 10)) python3 "$here/kube.py" resize "${admin[@]}" --size $((RESIZE_TO + 1)) > /dev/null
        failover=$(python3 "$here/kube.py" wait "${admin[@]}" --until resized --n "$n" --size $((RESIZE_TO + 1)) \
            --start "$t_kill" --timeout $((300 + n / 5))) || {
            log "  failover: $failover"; tail -5 "$dir/manager-standby.log" >&2; die "N=$n $op: the standby did not take over"; }
        log "  failover: $failover"
        standby_hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$standby/status") || die "the $op standby exited"
        t_end=$(now)
    fi
    load_end=$(loadavg)
    for pid in "${pids[@]}"; do stop_pid "$pid" 15; done
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}" 20; done
    PIDS=()

    local audit
    audit=$(python3 "$here/kube.py" audit --log "$dir/audit.log" --user "$user" \
        --phase "converge=$t_start:$t_conv" --phase "quiet=$t_conv:$t_quiet" \
        --phase "resize=$t_resize:$t_resized" --phase "relist=$t_resized:$t_relisted" \
        --phase "failover=$t_kill:$t_end" --phase "all=$t_start:$t_end")
    EDITS_RESULT=$edits PODS=$PODS RESIZE_TO=$RESIZE_TO READY=${ready:-} FAILOVER_RESULT=$failover STANDBY_HWM=$standby_hwm \
        RELIST=$RELIST PHASES="$PHASES" RSS_EACH=$rss_each RSS_EACH_BEFORE=$rss_each_before RSS_BEFORE_RELIST=$hwm_before python3 - "$dir/result.json" "$op" "$n" "$index" "$converge" "$created" "$resized" "$resize" \
        "$audit" "$hwm" "$cpu_conv" "$cpu" "$QUIET" "$load_start" "$load_end" \
        "$t_start" "$t_conv" "$t_quiet" "$t_resize" "$t_end" <<'EOF'
import json, os, sys
PODS, RESIZE_TO = os.environ["PODS"] == "1", int(os.environ["RESIZE_TO"])
READY = json.loads(os.environ["READY"]) if PODS else None
(out, op, n, index, converge, created, resized, patches, audit, hwm, cpu_conv, cpu, quiet,
 load_start, load_end, *times) = sys.argv[1:]
result = {
    "operator": op, "n": int(n), "run": int(index),
    "converge": json.loads(converge), "created": json.loads(created),
    "resize": json.loads(resized), "patches": json.loads(patches), "audit": json.loads(audit),
    "rss_kib": int(hwm), "cpu_converge": float(cpu_conv), "cpu_total": float(cpu),
    "quiet_seconds": int(quiet), "pods": PODS, "resize_to": RESIZE_TO, "resize_ready": READY, "load_start": load_start, "load_end": load_end,
    "t": dict(zip(["start", "converged", "quiet_end", "resize", "end"], map(float, times))),
    "failover": json.loads(os.environ["FAILOVER_RESULT"]), "standby_rss_kib": int(os.environ["STANDBY_HWM"]),
    "edits": json.loads(os.environ["EDITS_RESULT"]),
    "relist": os.environ["RELIST"] == "1", "rss_before_relist_kib": int(os.environ["RSS_BEFORE_RELIST"]),
    "replicas_rss_kib": [int(kib) for kib in os.environ["RSS_EACH"].split(",")],
    "replicas_rss_before_relist_kib": [int(kib) for kib in os.environ["RSS_EACH_BEFORE"].split(",")],
    "phases": [dict(zip(["phase", "peak_kib", "rss_kib", "heap_in_use_kib", "heap_system_kib"],
                        [mark.split(":")[0], *map(int, mark.split(":")[1:])]))
               for mark in os.environ["PHASES"].split()],
}
json.dump(result, open(out, "w"), indent=1)
EOF
    log "  peak RSS $((hwm / 1024)) MiB (each replica, KiB: $rss_each), CPU ${cpu_conv} s converging, ${cpu} s in all (load $load_end)"
    if [ "${KEEP:-0}" != 1 ]; then
        find "$dir" -mindepth 1 -maxdepth 1 ! -name result.json ! -name manager.log -exec rm -rf {} +
    fi
}

stamp=$(date +%Y%m%d-%H%M%S)
runs="$CACHE/runs/$stamp"
mkdir -p "$runs"
log "runs in $runs; memop $short, kubebuilder $KB_VERSION; N = $*; order: $ORDER"
for n in "$@"; do
    i=0
    for op in $ORDER; do
        i=$((i + 1))
        run_one "$op" "$n" "$i"
    done
done

results="$CACHE/results/$stamp.md"
{
    echo "memop $short vs kubebuilder $KB_VERSION, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, N = $*"
    echo
    python3 "$here/table.py" "$runs"/*/result.json
} > "$results"
cat "$results"
log "results: $results"
