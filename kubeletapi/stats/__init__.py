"""Statistics: node and container readers, the housekeeping sampler and the summary builder."""
