"""The SPDY framer against moby/spdystream's, the framer client-go and the kubelet use.

RECORDED holds frames as spdystream v0.5.0 writes them, recorded with
tests/cluster/k8s/spdyframes (`go build ./spdyframes` in tests/cluster/k8s, then `spdyframes
record`): the client's frames from one framer, so their header blocks share one deflate context,
then a server's two empty SYN_REPLYs from another. The headers are set as client-go sets them
(http.Header.Set("streamType", ...): lower-cased on the wire).

- frames without a header block encode byte for byte as spdystream writes them;
- header blocks decode from Go's bytes, each frame's block continuing the context of the one
  before. Go's compress/flate and zlib compress differently (Go writes level 9, `78 f9`, and
  literals where zlib copies from the dictionary), so our blocks are not Go's bytes: instead
  spdystream's own reader decodes what we write (test_spdystream_reads_our_frames, which builds
  the recorder with the Go toolchain and the module cache, as make cluster-bin does).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kubeletapi.spdy import frames as fr

ROOT = Path(__file__).resolve().parents[2]

RECORDED = {
    "syn_stream_error": "80030001000000290000000100000000000078f9e3c6a7c26260606004a7b392a2d4c45c6851c29a0a0a68"
                        "00000000ffff",
    "syn_stream_portforward": "800300010000002f0000000300000000000002a5470c295029930829b08bc079c3c2c0c280818181"
                              "b30812c199a084cf6800000000ffff",
    "syn_stream_fin": "800300010100001700000005000000000000c26e6c71494a661e000000ffff",
    "data": "000000030000000568656c6c6f",
    "data_fin": "0000000301000000",
    "rst_stream": "80030003000000080000000300000005",
    "ping": "800300060000000400000001",
    "goaway": "80030007000000080000000500000000",
    "settings": "800300040000000c000000010100000400000064",
    "window_update": "80030009000000080000000300000400",
    "headers": "800300080000000e00000003c22a053616000000ffff",
    # the server's framer (a fresh deflate context)
    "syn_reply_empty": "80030002000000140000000178f9e3c6a7c26260606000000000ffff",
    "syn_reply_empty_again": "800300020000000c00000003026100000000ffff",
}
CLIENT = list(RECORDED)[:11]
SERVER = list(RECORDED)[11:]

DECODED: dict[str, fr.Frame] = {
    "syn_stream_error": fr.SynStream(1, {"streamtype": ["error"]}),
    "syn_stream_portforward": fr.SynStream(3, {"streamtype": ["data"], "port": ["8080"], "requestid": ["0"]}),
    "syn_stream_fin": fr.SynStream(5, {"streamtype": ["stdin"]}, fin=True),
    "data": fr.Data(3, b"hello"),
    "data_fin": fr.Data(3, b"", fin=True),
    "rst_stream": fr.RstStream(3, fr.CANCEL),
    "ping": fr.Ping(1),
    "goaway": fr.GoAway(5, fr.GOAWAY_OK),
    "settings": fr.Settings(((1, 4, 100),)),
    "window_update": fr.WindowUpdate(3, 1024),
    "headers": fr.HeadersFrame(3, {"streamtype": ["data"]}),
    "syn_reply_empty": fr.SynReply(1, {}),
    "syn_reply_empty_again": fr.SynReply(3, {}),
}

ENCODED = {  # our encoders of the frames without a header block
    "data": fr.data_frame(3, b"hello"),
    "data_fin": fr.data_frame(3, b"", fin=True),
    "rst_stream": fr.rst_stream(3, fr.CANCEL),
    "ping": fr.ping(1),
    "goaway": fr.goaway(5, fr.GOAWAY_OK),
    "settings": fr.settings([(1, 4, 100)]),
    "window_update": fr.window_update(3, 1024),
}


def _frames(names: list[str]) -> list[fr.Frame]:
    parser = fr.FrameParser()
    frames = list(parser.feed(b"".join(bytes.fromhex(RECORDED[n]) for n in names)))
    assert not parser._buffer
    return frames


@pytest.mark.parametrize("names", [CLIENT, SERVER], ids=["client", "server"])
def test_go_frames_decode_in_one_context(names: list[str]) -> None:
    assert _frames(names) == [DECODED[n] for n in names]


def test_go_frames_decode_split_at_every_byte() -> None:
    data = b"".join(bytes.fromhex(RECORDED[n]) for n in CLIENT)
    for at in range(len(data) + 1):
        parser = fr.FrameParser()
        assert [*parser.feed(data[:at]), *parser.feed(data[at:])] == [DECODED[n] for n in CLIENT], at


@pytest.mark.parametrize("name", list(ENCODED))
def test_frames_without_a_header_block_encode_as_go_writes_them(name: str) -> None:
    assert ENCODED[name].hex() == RECORDED[name]


def test_header_frames_have_go_s_layout_around_the_block() -> None:
    """Head, stream ids, priority and flags as Go writes them; the block is the frame's rest."""
    comp = fr.HeaderCompressor()
    ours = {
        "syn_stream_error": fr.syn_stream(comp, 1, {"streamType": ["error"]}),
        "syn_stream_portforward": fr.syn_stream(comp, 3, {"streamType": ["data"], "port": ["8080"],
                                                         "requestID": ["0"]}),
        "syn_stream_fin": fr.syn_stream(comp, 5, {"streamType": ["stdin"]}, fin=True),
        "headers": fr.headers_frame(comp, 3, {"streamType": ["data"]}),
    }
    for name, data in ours.items():
        go = bytes.fromhex(RECORDED[name])
        fixed = 18 if name.startswith("syn_stream") else 12
        assert (data[:5], data[8:fixed]) == (go[:5], go[8:fixed]), name  # type, flags, ids, priority
        assert int.from_bytes(data[5:8], "big") == len(data) - 8
    assert list(fr.FrameParser().feed(b"".join(ours.values()))) == [DECODED[n] for n in ours]
    server = fr.HeaderCompressor()
    reply = fr.syn_reply(server, 1, {})
    go = bytes.fromhex(RECORDED["syn_reply_empty"])
    assert (reply[:5], reply[8:12]) == (go[:5], go[8:12])
    assert list(fr.FrameParser().feed(reply + fr.syn_reply(server, 3, {}))) == [DECODED[n] for n in SERVER]


@pytest.mark.parametrize("name", list(ENCODED))
def test_go_frames_reencode_byte_for_byte(name: str) -> None:
    """decode then encode gives Go's bytes back (the frames without a header block)."""
    (frame,) = _frames([name])
    match frame:
        case fr.Data():
            again = fr.data_frame(frame.stream_id, frame.data, frame.fin)
        case fr.RstStream():
            again = fr.rst_stream(frame.stream_id, frame.status)
        case fr.Ping():
            again = fr.ping(frame.ping_id)
        case fr.GoAway():
            again = fr.goaway(frame.last_good_stream_id, frame.status)
        case fr.Settings():
            again = fr.settings(frame.entries)
        case fr.WindowUpdate():
            again = fr.window_update(frame.stream_id, frame.delta)
        case _:
            raise AssertionError(frame)
    assert again.hex() == RECORDED[name]


@pytest.fixture(scope="module")
def spdyframes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        pytest.skip("no Go toolchain: spdystream's reader cannot be built")
    out = tmp_path_factory.mktemp("spdyframes") / "spdyframes"
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local", "GOPROXY": "off"}
    subprocess.run([go, "build", "-o", str(out), "./spdyframes"], cwd=ROOT / "tests/cluster/k8s", env=env,
                   check=True, timeout=300)
    return out


def _go_decode(binary: Path, data: bytes) -> list[dict[str, object]]:
    done = subprocess.run([str(binary), "decode"], input=data, capture_output=True, check=True, timeout=30)
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_spdystream_reads_our_frames(spdyframes: Path) -> None:
    """Every frame the server writes, and a client's SYN_STREAMs, through spdystream's reader."""
    comp = fr.HeaderCompressor()
    server = b"".join([
        fr.syn_reply(comp, 1, {}), fr.syn_reply(comp, 3, {}), fr.data_frame(1, b"out"),
        fr.data_frame(1, b"", fin=True), fr.rst_stream(3, fr.CANCEL), fr.rst_stream(5, fr.PROTOCOL_ERROR),
        fr.ping(1), fr.headers_frame(comp, 3, {"a": ["b", "c"]}), fr.goaway(5, fr.GOAWAY_PROTOCOL_ERROR),
    ])
    assert _go_decode(spdyframes, server) == [
        {"type": "syn_reply", "id": 1, "flags": 0, "headers": {}},
        {"type": "syn_reply", "id": 3, "flags": 0, "headers": {}},
        {"type": "data", "id": 1, "flags": 0, "data": "out"},
        {"type": "data", "id": 1, "flags": 1, "data": ""},
        {"type": "rst_stream", "id": 3, "status": 5},
        {"type": "rst_stream", "id": 5, "status": 1},
        {"type": "ping", "id": 1},
        {"type": "headers", "id": 3, "flags": 0, "headers": {"A": ["b", "c"]}},
        {"type": "goaway", "id": 5, "status": 1},
    ]
    comp = fr.HeaderCompressor()
    client = b"".join([
        fr.syn_stream(comp, 1, {"streamType": ["error"]}),
        fr.syn_stream(comp, 3, {"streamType": ["data"], "port": ["8080"], "requestID": ["0"]}, fin=True),
    ])
    assert _go_decode(spdyframes, client) == [
        {"type": "syn_stream", "id": 1, "flags": 0, "headers": {"Streamtype": ["error"]}},
        {"type": "syn_stream", "id": 3, "flags": 1,
         "headers": {"Streamtype": ["data"], "Port": ["8080"], "Requestid": ["0"]}},
    ]
