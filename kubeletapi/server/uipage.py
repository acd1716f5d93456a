"""The web UI's page: the built index.html with its blanks filled in for one request.

- `@base@`: the way from the page's address back to the UI's root (`./` on /ui/, `../../` on a
  pod's page; no <base> element, which would turn `#main` into another page): the page names its
  assets, and its script its views, links and logs, relative to that root, so it works wherever
  /ui/ is mounted (/ui/ on the node, /api/v1/nodes/<node>/proxy/ui/ through the API server's node
  proxy);
- `@ui.js@`, `@ui.css@`: each asset's version, so the browser keeps them without asking again;
- `@data@`: the page's views as JSON, so its first render needs no request of its own (the page
  polls the same views afterwards).

A file without these blanks is served as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubeletapi.server.uiassets import Assets

ASSET_NAMES = ("ui.js", "ui.css")


def base_for(depth: int) -> str:
    """`./` for a page at the root, one `../` per path segment below it."""
    return "../" * depth if depth else "./"


def inline_json(data: Mapping[str, Any]) -> str:
    """JSON safe inside a <script> element: no `<` (so no `</script>` nor `<!--`)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def render(assets: Assets, template: bytes, depth: int, data: Mapping[str, Any]) -> bytes:
    """The page for one request (`depth`: path segments below /ui/)."""
    text = template.decode().replace("@base@", base_for(depth))
    for name in ASSET_NAMES:
        text = text.replace(f"@{name}@", assets.version(name))
    if "@data@" in text:  # last: nothing in the data is taken for a blank
        text = text.replace("@data@", inline_json(data), 1)
    return text.encode()
