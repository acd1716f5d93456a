"""$(VAR) references in commands, args and env values, expanded with Kubernetes' rules
(third_party/forked/golang/expansion): `$$` is a literal `$`, a reference to a defined variable
is replaced by its value, anything else (unknown names, unclosed references) stays as written."""

from __future__ import annotations

import re
from collections.abc import Mapping

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][-._A-Za-z0-9]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """$(VAR) -> env[VAR] when defined, $$ -> $, anything else left as written."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REF.sub(sub, text)
