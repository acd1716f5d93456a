"""/healthz, /healthz/<check>, ?verbose and ?exclude=, in k8s.io/apiserver's healthz format."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse

from kubeletapi.health import HealthCheck
from kubeletapi.server.apidoc import NOSNIFF, documented, query, text
from kubeletapi.server.routing import add_any_method_route

log = logging.getLogger(__name__)
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}
Handler = Callable[..., Awaitable[PlainTextResponse]]


def render(checks: Sequence[HealthCheck], verbose: bool, exclude: Sequence[str]) -> tuple[int, str]:
    """(status, body) of the aggregate endpoint."""
    lines: list[str] = []
    failed = False
    excluded = set(exclude)
    for check in checks:
        if check.name in excluded:
            excluded.discard(check.name)
            lines.append(f"[+]{check.name} excluded: ok\n")
            continue
        error = check.check()
        if error is None:
            lines.append(f"[+]{check.name} ok\n")
        else:
            failed = True
            lines.append(f"[-]{check.name} failed: reason withheld\n")
            log.warning("healthz check %s failed: %s", check.name, error)
    if excluded:
        names = ",".join(f'"{n}"' for n in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {names}\n")
        log.warning("cannot exclude some health checks, no health checks are installed matching %s", names)
    if failed:
        return 500, "".join(lines) + "healthz check failed\n"
    if verbose:
        return 200, "".join(lines) + "healthz check passed\n"
    return 200, "ok"


def _aggregate(checks: Sequence[HealthCheck]) -> Handler:
    async def healthz(request: Request) -> PlainTextResponse:
        """Run every check (`verbose` lists them, `exclude` skips some); 500 when one fails."""
        query = request.query_params
        status, body = render(checks, "verbose" in query, query.getlist("exclude"))
        return PlainTextResponse(body, status, headers=_NOSNIFF)

    return healthz


def _single(check: HealthCheck) -> Handler:
    async def handler() -> PlainTextResponse:
        error = check.check()
        if error is None:
            return PlainTextResponse("ok")
        log.warning("healthz check %s failed: %s", check.name, error)
        return PlainTextResponse(f"internal server error: {error}\n", 500, headers=_NOSNIFF)

    handler.__doc__ = f"Run the {check.name} check alone."
    return handler


AGGREGATE_DOC = documented(
    ("healthz", "proxy"),
    {
        200: text("Every check passed: `ok`, or with `verbose` one line per check.", "ok", headers=NOSNIFF),
        500: text("A check failed: one line per check, failed ones with their reason withheld.",
                  "[+]ping ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n", headers=NOSNIFF),
    },
    [
        query("verbose", {"type": "string"}, "Present (with any value, even empty): list every check."),
        query("exclude", {"type": "array", "items": {"type": "string"}, "examples": [["syncloop"]]},
              "Checks to skip, by name (repeatable); an unknown name adds a warning line."),
    ],
)
SINGLE_DOC = documented(
    ("healthz", "proxy"),
    {200: text("The check passed.", "ok"),
     500: text("The check failed, with its reason.", "internal server error: ...\n", headers=NOSNIFF)},
)


def _add(app: FastAPI, path: str, handler: Handler, name: str, doc: dict[str, Any]) -> None:
    add_any_method_route(app, path, handler, name, "healthz", **doc)


def install(app: FastAPI, checks: Sequence[HealthCheck]) -> None:
    """The aggregate endpoint and one sub-path per installed check."""
    _add(app, "/healthz", _aggregate(checks), "healthz", AGGREGATE_DOC)
    for check in checks:
        _add(app, f"/healthz/{check.name}", _single(check), f"healthz_{check.name}", SINGLE_DOC)
