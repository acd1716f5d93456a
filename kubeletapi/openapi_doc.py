"""`python -m kubeletapi.openapi_doc`: print the OpenAPI document of the secure listener.

`make openapi` writes it to openapi/kubeletapi.json; a test fails when that file is stale.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.kubelet import Kubelet
from kubeletapi.server.app import api


def document() -> dict[str, Any]:
    """The document, independent of this machine (node name and config do not appear in it)."""
    host = Kubelet(KubeletConfiguration(), NodeOptions(hostname_override="node", node_ip="127.0.0.1"))
    return api(host, "secure", debugging_handlers=True).openapi()


def main() -> None:
    json.dump(document(), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
