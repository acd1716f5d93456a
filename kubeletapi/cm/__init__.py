"""The container manager's policy, as the kubelet's pkg/kubelet/cm: a pod's QoS class, the cgroup
values of pods and containers, oom_score_adj, and the names of the kubepods hierarchy.

Pure functions of the Pod model and numbers; cgroups/ writes what this computes.
"""
