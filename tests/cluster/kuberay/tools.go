//go:build tools

// Package tools pins the command the testbed builds, so `go mod tidy` keeps its dependencies.
package tools

import (
	_ "github.com/ray-project/kuberay/ray-operator"
)
