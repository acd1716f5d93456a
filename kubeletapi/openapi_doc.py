"""`python -m kubeletapi.openapi_doc [secure|readonly]`: print the OpenAPI document of a listener.

`make openapi` writes them to openapi/kubeletapi.json (the secure port, also served there at
/openapi.json) and openapi/kubeletapi-readonly.json (the read-only port); a test fails when either
is stale, and tests/server/test_published_api.py runs schemathesis over both against a live agent.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.kubelet import Kubelet
from kubeletapi.server.app import Role, api

FILES: dict[Role, str] = {"secure": "kubeletapi.json", "readonly": "kubeletapi-readonly.json"}


def document(listener: Role = "secure") -> dict[str, Any]:
    """The document, independent of this machine (node name and config do not appear in it)."""
    host = Kubelet(KubeletConfiguration(), NodeOptions(hostname_override="node", node_ip="127.0.0.1"))
    return api(host, listener, debugging_handlers=True).openapi()


def main() -> None:
    listener = sys.argv[1] if len(sys.argv) > 1 else "secure"
    if listener not in FILES:
        sys.exit(f"usage: python -m kubeletapi.openapi_doc [{'|'.join(FILES)}]")
    json.dump(document(listener), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
