//go:build tools

// Package tools pins the kwok that build.sh builds: it simulates the nodes and kubelets of the
// real test tier, so Deployments roll out there.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
