#!/usr/bin/env bash
# Builds the envtest binaries (kube-apiserver, etcd, kubectl), and what makes Deployments roll out
# and owners' deletions cascade in the real test tier (kube-controller-manager, kube-scheduler,
# and kwok with its stages, which plays the kubelet of a simulated node), from Go modules, into
# the directory layout of kubebuilder's setup-envtest, and prints that directory: point
# KUBEBUILDER_ASSETS at it.
#
#   KUBEBUILDER_ASSETS="$(scripts/envtest/build.sh)" cargo test
#
# The Go modules here only pin versions: k8s/ requires k8s.io/kubernetes and replaces each of its
# staging modules (k8s.io/api, ...) by the published v0.x tag of the same release, because
# `go install k8s.io/kubernetes/cmd/...@v1.x` refuses a module with replace lines. etcd/ and kwok/
# are separate so the module graphs do not raise each other's dependencies.
#
# Output: $ENVTEST_DIR (default ~/.local/share/kubebuilder-envtest, setup-envtest's own store)
#   k8s/<version>-linux-<arch>/{kube-apiserver,etcd,kubectl,kube-controller-manager,
#                               kube-scheduler,kwok,kwok.yaml}
# kwok.yaml is kwok's own "fast" stages of its pinned version (nodes Ready at once, pods Ready
# as soon as they are bound, deletions finished): kwok from v0.8 has no built-in default.
# A warm run finds the binaries there (stamped with the inputs' hash) and builds nothing.
#
# A cold build takes about 20 minutes on 2 cores (Kubernetes about 12, etcd about 2, kwok about
# 6; a warm Go build cache makes it faster): each step says on stderr what it builds and how long
# it usually takes, every minute that it is still at it, and how long it took. stdout is only the
# directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

k8s_version="$(sed -n 's/^require k8s.io\/kubernetes v//p' "$here/k8s/go.mod")"
arch="$(go env GOARCH)"
store="${ENVTEST_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}"
out="$store/k8s/$k8s_version-linux-$arch"
stamp="$(cat "$here/build.sh" "$here"/k8s/go.* "$here"/etcd/go.* "$here"/kwok/go.* "$here"/*/tools.go | sha256sum | cut -c1-16)"

if [[ -f "$out/.memop-stamp" && "$(cat "$out/.memop-stamp")" == "$stamp" ]]; then
    echo "$out"
    exit 0
fi

mkdir -p "$out"
start=$(date +%s)
# ticker WHAT BEGAN: says on stderr, every minute until it is killed, that WHAT is still at it.
ticker() {
    local sleeper=
    trap 'kill $sleeper 2>/dev/null; exit 0' TERM
    while :; do
        sleep 60 &
        sleeper=$!
        wait "$sleeper"
        echo "envtest:   still building $1 ($(( ($(date +%s) - $2) / 60 )) min so far)"
    done
}
# step WHAT MINUTES COMMAND...: runs COMMAND (in a subshell: `(step ...)`; its output to stderr),
# saying on stderr what it builds, how long that usually takes, every minute that it is still at
# it, and how long it took or that it failed.
step() {
    what="$1" minutes="$2"
    shift 2
    began=$(date +%s)
    echo "envtest: building $what (about $minutes min cold on 2 cores)..." >&2
    ticker "$what" "$began" >&2 &
    ticking=$!
    trap 'step_done $?' EXIT
    "$@" >&2
}
step_done() {
    kill "$ticking" 2>/dev/null || true
    wait "$ticking" 2>/dev/null || true
    if [[ $1 -eq 0 ]]; then
        echo "envtest:   $what built in $(( $(date +%s) - began )) s" >&2
    else
        echo "envtest: building $what failed after $(( $(date +%s) - began )) s" >&2
    fi
}
echo "envtest: no current build in $out: building Kubernetes $k8s_version's envtest binaries from the Go module proxy (about 20 min cold on 2 cores)" >&2
export CGO_ENABLED=0 GOFLAGS=-mod=mod
minor="$(echo "$k8s_version" | cut -d. -f2)"
v=k8s.io/component-base/version
k8s() {
    cd "$here/k8s"
    # The -X flags give /version the real release: module zips keep the $Format placeholders.
    go build -trimpath -o "$out/" \
        -ldflags "-s -w -X $v.gitVersion=v$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl
}
etcd() {
    cd "$here/etcd"
    go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
}
kwok() {
    cd "$here/kwok"
    go build -trimpath -ldflags "-s -w" -o "$out/kwok" sigs.k8s.io/kwok/cmd/kwok
    stages="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
    for stage in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
        echo "---"
        cat "$stages/$stage.yaml"
    done > "$out/kwok.yaml"
}
(step "kube-apiserver, kube-controller-manager, kube-scheduler and kubectl $k8s_version" 12 k8s)
(step "etcd" 2 etcd)
(step "kwok and its stages" 6 kwok)
chmod 0555 "$out"/kube-apiserver "$out"/kube-controller-manager "$out"/kube-scheduler "$out"/kubectl \
    "$out"/etcd "$out"/kwok
echo "$stamp" > "$out/.memop-stamp"
echo "envtest binaries built in $(( $(date +%s) - start )) s: $out" >&2
echo "$out"
