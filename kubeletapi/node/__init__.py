"""The node in an API server: registration, node status, the heartbeat lease (apiserver mode).

As the kubelet's kubelet_node_status.go, nodestatus/setters.go and the node lease controller do
it; nothing here runs without --kubeconfig.
"""
