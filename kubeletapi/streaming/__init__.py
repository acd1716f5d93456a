"""The kubelet's streaming protocols over WebSocket and SPDY/3.1 (spdy/): exec, attach, port-forward.

- protocol: subprotocol names and negotiation, message framing (binary and base64), v5 CLOSE;
- conn: a channel connection over any WebSocket (the tiny `WebSocket` protocol);
- status: what is written on the error channel when a command ends;
- remotecommand: stream options from the query, and the bridge WebSocket <-> StreamSession;
- portforward: ports from the query, and the bridge WebSocket <-> TCP connections in the pod;
- asgi: the `WebSocket` of an ASGI websocket scope (handshake accept or denial);
- targets: what the bridges need from the node (a running container, a pod's network);
- spdy: the SPDY streams onto the same bridges (the framing is kubeletapi.spdy).
Both protocols count the idle timeout (streamingConnectionIdleTimeout) with kubeletapi.idle.
"""
