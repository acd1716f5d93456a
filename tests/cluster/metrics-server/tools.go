//go:build tools

// Package tools pins the metrics-server command for `go build` in this wrapper module.
package tools

import _ "sigs.k8s.io/metrics-server/cmd/metrics-server"
