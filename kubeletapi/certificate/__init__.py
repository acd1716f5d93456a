"""The node's certificates from the API server: the PEM store, CSRs, the TLS bootstrap of the
client certificate and the managers that renew the client and serving certificates."""
