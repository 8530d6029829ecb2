#!/usr/bin/env bash
# Builds the helm CLI from its Go module (pinned in go.mod here) and prints the binary's path:
# point HELM at it. The tests of memop's Helm chart (`memop edit --plugins=helm/v2-alpha`) lint,
# render and install the chart with it.
#
#   HELM="$(scripts/helm/build.sh)" cargo test
#
# Output: $HELM_BUILD_DIR (default ~/.cache/memop-helm)/<version>-linux-<arch>/helm, outside the
# repository. A warm run finds the binary there (stamped with the inputs' hash) and builds nothing.
# A cold build takes about 5 minutes on 2 cores: it says so on stderr, and every minute that it is
# still at it, and how long it took. stdout is only the path.
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
echo "helm: no current build in $out: building helm $version from the Go module proxy (about 5 min cold on 2 cores)..." >&2
(
    trap 'kill $sleeper 2>/dev/null; exit 0' TERM
    while :; do
        sleep 60 &
        sleeper=$!
        wait "$sleeper"
        echo "helm:   still building ($(( ($(date +%s) - start) / 60 )) min so far)"
    done
) >&2 &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true; wait' EXIT
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
