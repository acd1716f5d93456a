"""A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler built from the Go module proxy (make cluster-bin), on loopback, torn down by PID."""
