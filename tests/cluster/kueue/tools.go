//go:build tools

// Package tools pins the command the testbed builds, so `go mod tidy` keeps its dependencies.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
