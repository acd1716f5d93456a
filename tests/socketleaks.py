"""Where an unclosed socket came from: a pytest plugin for this suite (tests/conftest.py loads it).

Python's own warning for a socket the garbage collector finds open says only `unclosed <socket ...>`
and fails whichever test happens to be running when the collector runs, often long after the one
that leaked it. This plugin notes, for every socket the test process creates, the test running at
the time and the creating stack (a few frames: sockets are few, this is cheap), and replaces that
warning with one naming both; the socket is then closed as Python would close it. Unclosed
sockets still fail the suite (warnings are errors): this only says where to look.
"""

from __future__ import annotations

import _socket
import os
import socket
import traceback
import warnings
from typing import Any

FRAMES = 14
_ORIGINAL_INIT = socket.socket.__init__
_ORIGINAL_CLOSE = socket.socket._real_close  # type: ignore[attr-defined]
# By id, not by weak reference: the collector clears weak references before it finalizes. An
# entry goes when its socket is closed or finalized.
_CREATED: dict[int, tuple[str, list[traceback.FrameSummary]]] = {}


def _init(self: socket.socket, *args: Any, **kwargs: Any) -> None:
    _ORIGINAL_INIT(self, *args, **kwargs)
    _CREATED[id(self)] = (os.environ.get("PYTEST_CURRENT_TEST", "no test"),
                          traceback.extract_stack(limit=FRAMES)[:-1])


def _real_close(self: socket.socket, *args: Any, **kwargs: Any) -> None:
    _CREATED.pop(id(self), None)
    _ORIGINAL_CLOSE(self, *args, **kwargs)


def _finalize(self: socket.socket) -> None:
    try:
        created = _CREATED.pop(id(self), None)
        if self.fileno() != -1:
            test, stack = created or ("an unknown test", [])
            where = "".join(traceback.format_list(stack)) or "  (created before the plugin was loaded)\n"
            warnings.warn(ResourceWarning(f"unclosed {self!r}, created during {test} at:\n{where}"), stacklevel=1)
    finally:
        self.close()  # quietly: the warning above said it
        _socket.socket.__del__(self)  # type: ignore[attr-defined]


def install() -> None:
    """Track every socket created from now on (idempotent)."""
    if socket.socket.__init__ is not _init:
        socket.socket.__init__ = _init  # type: ignore[method-assign]
        socket.socket._real_close = _real_close  # type: ignore[attr-defined]
        socket.socket.__del__ = _finalize  # type: ignore[attr-defined]


def pytest_configure() -> None:
    install()
