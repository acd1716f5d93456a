"""Eviction: signals from stats snapshots, thresholds, ranking, node conditions (the kubelet's pkg/kubelet/eviction)."""
