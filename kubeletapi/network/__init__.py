"""Pod networking through CNI plugins (the containernetworking-plugins: bridge, host-local, loopback).

- conflist.py: the network configuration list kubeletapi writes from the node's pod CIDR (a bridge
  with host-local IPAM), for its own use and for a CRI runtime's CNI conf dir;
- cni.py: calls the plugins of a conflist directly, per the CNI spec (ADD, CHECK, DEL), without
  blocking the event loop, and maps their results and errors.

Nothing here creates network namespaces: the process runtime does (its shim), and a CRI runtime
runs its own CNI. The package needs only the error vocabulary.
"""
