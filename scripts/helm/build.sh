#!/usr/bin/env bash
# Builds the helm CLI from its Go module (pinned in go.mod here) and prints the binary's path:
# point HELM at it. The tests of memop's Helm chart (`memop edit --plugins=helm/v2-alpha`) lint,
# render and install the chart with it.
#
#   HELM="$(scripts/helm/build.sh)" cargo test
#
# Output: $HELM_BUILD_DIR (default ~/.cache/memop-helm)/<version>-linux-<arch>/helm, outside the
# repository. A warm run finds the binary there (stamped with the inputs' hash) and builds nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

version="$(sed -n 's/^require helm.sh\/helm\/v3 v//p' "$here/go.mod")"
arch="$(go env GOARCH)"
store="${HELM_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memop-helm}"
out="$store/$version-linux-$arch"
stamp="$(cat "$here/build.sh" "$here"/go.* "$here/tools.go" | sha256sum | cut -c1-16)"

if [[ -f "$out/.memop-stamp" && "$(cat "$out/.memop-stamp")" == "$stamp" ]]; then
    echo "$out/helm"
    exit 0
fi

mkdir -p "$out"
start=$(date +%s)
export CGO_ENABLED=0 GOFLAGS=-mod=mod
(
    cd "$here"
    # The -X flag gives `helm version` the real release: a module build has no git tag.
    nice -n 19 go build -trimpath -o "$out/helm" \
        -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$version" \
        helm.sh/helm/v3/cmd/helm
) >&2
chmod 0555 "$out/helm"
echo "$stamp" > "$out/.memop-stamp"
echo "helm built in $(( $(date +%s) - start )) s: $out/helm" >&2
echo "$out/helm"
