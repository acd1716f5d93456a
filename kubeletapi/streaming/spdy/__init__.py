"""SPDY/3.1 for the kubelet's streaming endpoints, as the API server speaks it to a node.

- dictionary: the SPDY/3 header compression dictionary;
- frames: frame types, encoders, the bounded incremental parser and the header (de)compressors;
- connection: one server connection (an asyncio protocol) and its streams;
- handshake: X-Stream-Protocol-Version negotiation and its refusals;
- remotecommand: exec/attach streams (error, stdin, stdout, stderr, resize) onto the same bridge
  the WebSocket layer uses (streaming.remotecommand);
- portforward: data/error stream pairs per request onto TCP connections in the pod.
"""
