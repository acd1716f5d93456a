"""Shared fixtures: agents are closed (and their ports freed) when a test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubeletapi.server.limits import Limits
from tests.cri.fixtures import cri_env  # noqa: F401 - the session's private containerd, for any test
from tests.helpers import Agent, agent_args


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/testdata/golden/* from the current output instead of comparing")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def start_agent(tmp_path: Path) -> Iterator[Callable[..., Agent]]:
    """Start in-process agents with `agent_args(tmp_path, *extra)`; all are stopped afterwards."""
    agents: list[Agent] = []

    def start(*extra: str, clock: object = None, read_only: bool = True, manifests: bool = False,
              limits: Limits | None = None) -> Agent:
        if manifests:
            (tmp_path / "manifests").mkdir(exist_ok=True)
            extra = ("--pod-manifest-path", str(tmp_path / "manifests"), *extra)
        agent = Agent(agent_args(tmp_path, *extra, read_only=read_only), clock, limits)  # type: ignore[arg-type]
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        agent.close()


@pytest.fixture
def agent(start_agent: Callable[..., Agent]) -> Agent:
    """A default agent: AlwaysAllow, generated PKI, read-only port on."""
    return start_agent()
