//go:build tools

// Package tools pins the helm CLI that build.sh builds.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
