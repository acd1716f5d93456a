"""The kubelet's streaming endpoints over SPDY/3.1, as the API server speaks them to a node (the
framing and connection are kubeletapi.spdy).

- handshake: X-Stream-Protocol-Version negotiation and its refusals;
- remotecommand: exec/attach streams (error, stdin, stdout, stderr, resize) onto the same bridge
  the WebSocket layer uses (streaming.remotecommand);
- portforward: data/error stream pairs per request onto TCP connections in the pod.
"""
