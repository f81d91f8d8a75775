"""The binder's post-bind node checks: their batches go at once, and on their own client."""

from __future__ import annotations

import asyncio
import urllib.parse
from typing import Any

import msgspec
import pytest

from services.kube import errors, nodes
from services.kube.api import KubeApi
from services.kube.client import KubeClient, Query, S


class RecordingClient(KubeClient):
    """A client that answers node LISTs and GETs from `present`, each LIST held until
    `release` is set, and records every request as (method, path, label selector)."""

    def __init__(self, present: set[str], failing: frozenset[str] = frozenset()) -> None:
        self.present = present  # no session: nothing is sent
        self.failing = failing  # a LIST asking any of these fails
        self.sent: list[tuple[str, str, str]] = []
        self.release = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0

    async def get_as(self, path: str, shape: type[S], *, query: Query = (),
                     accept: str = "") -> S:
        selector = dict(query).get("labelSelector", "")
        self.sent.append(("LIST", path, selector))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1
        asked = selector[selector.index("(") + 1 : -1].split(",")
        if self.failing & set(asked):
            raise errors.KubeUnavailable(f"LIST {path}: timed out")
        items = [{"metadata": {"name": name}} for name in asked if name in self.present]
        return msgspec.convert({"items": items}, shape)

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.sent.append((method, path, ""))
        name = path.rsplit("/", 1)[-1]
        if method == "GET" and path.startswith("/api/v1/nodes/") and name in self.present:
            return {"metadata": {"name": name}}
        if method == "GET":
            raise errors.KubeNotFound(f"GET {path}: not found")
        return {}


async def test_the_batches_of_one_check_are_in_flight_together_up_to_a_bound() -> None:
    names = [f"node-{i:05d}" for i in range(2500)]
    assert len(nodes.selector_batches(names)) == 6  # 458 names of 10 characters each
    present = {"node-00000", "node-00150", "node-00704", "node-02499", "elsewhere"}
    client = RecordingClient(present=present)
    check = asyncio.create_task(nodes.listed_by_hostname(client, names))
    for _ in range(5):
        await asyncio.sleep(0)
    assert client.most_in_flight == nodes.HOSTNAME_LISTS_AT_ONCE == 4  # before any answered
    client.release.set()
    assert await check == present - {"elsewhere"}
    assert len(client.sent) == 6


async def test_a_failed_batch_leaves_its_names_not_found_and_the_others_answered() -> None:
    names = [f"node-{i:05d}" for i in range(700)]
    assert len(nodes.selector_batches(names)) == 2
    client = RecordingClient(present={"node-00000", "node-00500"},
                             failing=frozenset({"node-00500"}))
    client.release.set()
    assert await nodes.listed_by_hostname(client, names) == {"node-00000"}  # read alone


@pytest.mark.parametrize(("name_length", "per_batch"), [(10, 458), (25, 212), (63, 90)])
def test_a_batch_is_as_long_as_its_selector_allows_and_no_longer(name_length: int,
                                                                  per_batch: int) -> None:
    names = [f"{i:0{name_length}d}" for i in range(1000)]
    batches = nodes.selector_batches(names)
    assert [name for batch in batches for name in batch] == names
    assert len(batches[0]) == per_batch
    for batch in batches:
        selector = f"{nodes.HOSTNAME_LABEL} in ({','.join(batch)})"
        encoded = urllib.parse.urlencode({"labelSelector": selector},
                                         quote_via=urllib.parse.quote)
        assert len(encoded) - len("labelSelector=") <= nodes.MAX_SELECTOR_CHARS


async def test_a_check_whose_every_batch_failed_raises_the_error() -> None:
    client = RecordingClient(present={"n000"}, failing=frozenset({"n000"}))
    client.release.set()
    with pytest.raises(errors.KubeUnavailable, match="timed out"):
        await nodes.listed_by_hostname(client, ["n000", "n001"])


async def test_post_bind_checks_go_through_their_own_client_and_binds_do_not() -> None:
    main, checks = RecordingClient(present={"n1"}), RecordingClient(present={"n1"})
    checks.release.set()
    api = KubeApi(main, checks=checks)
    assert await api.nodes_listed(["n1", "n2"]) == {"n1"}
    assert await api.node_exists("n2") is False
    await api.bind("default", "p", "uid-p", "n1", annotations={})
    assert [(method, path) for method, path, _ in checks.sent] == [
        ("LIST", "/api/v1/nodes"), ("GET", "/api/v1/nodes/n2")]
    assert [(method, path) for method, path, _ in main.sent] == [
        ("POST", "/api/v1/namespaces/default/pods/p/binding")]


async def test_without_a_checks_client_the_checks_use_the_main_one() -> None:
    main = RecordingClient(present={"n1"})
    main.release.set()
    assert await KubeApi(main).nodes_listed(["n1"]) == {"n1"}
    assert [method for method, _, _ in main.sent] == ["LIST"]
