"""The memory manager (pkg/kubelet/cm/memorymanager): the Static policy's NUMA placement of
Guaranteed pods' memory (policy), its state file in the kubelet's checkpoint format (state), the
machine's NUMA nodes (topology), and the manager that admits pods and keeps the file (manager)."""
