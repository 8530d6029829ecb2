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
export CGO_ENABLED=0 GOFLAGS=-mod=mod
minor="$(echo "$k8s_version" | cut -d. -f2)"
v=k8s.io/component-base/version
(
    cd "$here/k8s"
    # The -X flags give /version the real release: module zips keep the $Format placeholders.
    go build -trimpath -o "$out/" \
        -ldflags "-s -w -X $v.gitVersion=v$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl
) >&2
(
    cd "$here/etcd"
    go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
) >&2
(
    cd "$here/kwok"
    go build -trimpath -ldflags "-s -w" -o "$out/kwok" sigs.k8s.io/kwok/cmd/kwok
    stages="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
    for stage in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
        echo "---"
        cat "$stages/$stage.yaml"
    done > "$out/kwok.yaml"
) >&2
chmod 0555 "$out"/kube-apiserver "$out"/kube-controller-manager "$out"/kube-scheduler "$out"/kubectl \
    "$out"/etcd "$out"/kwok
echo "$stamp" > "$out/.memop-stamp"
echo "envtest binaries built in $(( $(date +%s) - start )) s: $out" >&2
echo "$out"
