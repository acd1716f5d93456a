"""SPDY/3.1, the subset the kubelet's streaming protocols use (written here: no maintained Python
SPDY library exists).

- dictionary: the SPDY/3 header compression dictionary;
- frames: frame types, encoders, the bounded incremental parser and the header (de)compressors;
- connection: one connection (an asyncio protocol) and its streams, as the server (the node's
  streaming endpoints, streaming/spdy) or as the client (exec and attach on containerd's
  streaming server, runtime/cri/streams.py);
- dial: the client's upgrade request over a new TCP connection.

It sits low in the layers (beside aio and clock) because both the streaming endpoints and the CRI
runtime speak it.
"""
