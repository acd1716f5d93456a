"""Shared fixtures: agents and fake nodes are closed (and their ports freed) when a test ends."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import pytest

from kubeletapi.clock import Clock
from kubeletapi.server.limits import Limits
from tests.cri.fixtures import cri_env  # noqa: F401 - the session's private containerd, for any test
from tests.fakehost import FakeHost, FakeNode
from tests.helpers import Agent, agent_args

pytest_plugins = ["tests.socketleaks"]  # an unclosed socket names the test and the code that opened it
TESTS = Path(__file__).resolve().parent
# `make test-fast`'s selection (and the part of `make test` run in worker processes): the unit and
# server tests, without the directories and marks of tests that start real daemons or take long.
NOT_FAST_DIRS = frozenset({"e2e", "cri", "ecosystem"})
NOT_FAST_MARKS = ("e2e", "cri", "slow")
# The part of `make test` run with nothing else on the machine: tests that read machine-wide figures
# a neighbour would move (free memory, the process count, the node's CPU and interfaces compared
# between two agents), and items xdist cannot tell apart (one node id for several). Everything
# else of the rest runs in two workers, a module per worker at a time and the cluster tests (one
# control plane per worker that runs them) all on one.
ALONE_DIRS = frozenset({"oracle"})
ALONE_MARK = "alone"
PARTS = ("all", "fast", "rest", "alone")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/testdata/golden/* from the current output instead of comparing")
    parser.addoption("--part", choices=PARTS, default="all",
                     help="fast: the unit and server tests (no e2e, cri, ecosystem dirs or e2e/cri/slow marks); "
                          "alone: the oracle and tests marked alone; rest: everything else; "
                          "the three together are the whole suite")


def _top(item: pytest.Item) -> str:
    return item.path.relative_to(TESTS).parts[0] if item.path.is_relative_to(TESTS) else ""


def part_of(item: pytest.Item, shared: Collection[str] = ()) -> str:
    """`shared`: node ids more than one item has (schemathesis gives every API operation its
    function's): pytest-xdist hands tests out by node id and would run one of them, so those run in
    the part without workers."""
    top = _top(item)
    if top in ALONE_DIRS or item.get_closest_marker(ALONE_MARK) or item.nodeid in shared:
        return "alone"
    if top not in NOT_FAST_DIRS and not any(item.get_closest_marker(m) for m in NOT_FAST_MARKS):
        return "fast"
    return "rest"


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    part = config.getoption("--part")
    if part == "all":
        return
    shared = {nodeid for nodeid, count in Counter(item.nodeid for item in items).items() if count > 1}
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (keep if part_of(item, shared) == part else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    if part == "rest":  # for --dist loadgroup: whole modules, and every cluster test on one worker
        for item in keep:
            group = "cluster" if _top(item) == "cluster" else item.path.relative_to(TESTS).as_posix()
            item.add_marker(pytest.mark.xdist_group(group))


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


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[Callable[..., FakeNode]]:
    """Serve a FakeHost (default: a node without pods) behind the HTTP layer of an agent started
    with `agent_args(tmp_path, *extra)`; all are stopped afterwards. For tests of HTTP behaviour:
    no pods, runtime or stats are started."""
    nodes: list[FakeNode] = []

    def start(*extra: str, host: FakeHost | None = None, clock: Clock | None = None,
              read_only: bool = True) -> FakeNode:
        node = FakeNode(agent_args(tmp_path, *extra, read_only=read_only), host, clock)
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        node.close()


@pytest.fixture
def node(start_node: Callable[..., FakeNode]) -> FakeNode:
    """A default fake node: AlwaysAllow, generated PKI, read-only port on, no pods."""
    return start_node()


@pytest.fixture(scope="module")
def shared_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeNode]:
    """A default fake node shared by a module's tests: for tests that only send requests and read
    the answers (nothing they count, change or log depends on an earlier test)."""
    node = FakeNode(agent_args(tmp_path_factory.mktemp("node")))
    yield node
    node.close()
