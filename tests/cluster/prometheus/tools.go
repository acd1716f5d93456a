//go:build tools

// Package tools pins the Prometheus server for `go build` in this wrapper module: Debian's
// prometheus package is built without Kubernetes service discovery, which the cluster tests need.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
