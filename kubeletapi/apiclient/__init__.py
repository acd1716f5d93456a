"""The node's Kubernetes API client: credentials from its kubeconfig, client-side rate limits
(kubeAPIQPS / kubeAPIBurst), JSON requests, list and watch streams, errors in kubeletapi's
vocabulary.

Hand-written on httpx (already the agent's HTTP client) rather than a general client library: the
agent sends a dozen kinds of request, each with JSON it builds or decodes with its own models
(strategic merge patches, preconditions, field selectors, watch bookmarks), and a library's typed
objects would be converted to and from dicts on every call; what a library would add (exec and
OIDC credential plugins, discovery) a node agent does not use.
"""
