"""The watcher pipeline: ordered publishing, ready after the first lists, ticks afterwards,
watch events that repeat what was published left out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from services.config.settings import Settings, WatcherSettings
from services.kube.listwatch import Known
from services.kube.resources import NODES, PDBS, PODS
from services.runtime.health import ReadyFlag
from services.watcher.service import Watcher
from tests.support.waiting import eventually_async


def pod(name: str, uid: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": rv},
            "spec": {"schedulerName": "gangsched"}, "status": {"phase": "Pending"}}


class FakeApi:
    """Lists per path; each watch yields its scripted events once, then hangs."""

    def __init__(self, lists: dict[str, list[dict[str, Any]]],
                 watches: dict[str, list[dict[str, Any]]]) -> None:
        self.lists = lists
        self.watches = watches

    async def request(self, method: str, path: str, *, query: Any = ()) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "10"}, "items": self.lists.get(path, [])}

    async def stream(
        self, path: str, query: Any, *, read_timeout_seconds: float,
        opened: Callable[[], None] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        for event in self.watches.pop(path, []):
            yield event
        await asyncio.Event().wait()


class FakePublisher:
    """Publishes when `gate` is open; `is_waiting` once a publish blocked on the closed gate."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.is_waiting = False

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None:
        self.is_waiting = not self.gate.is_set()
        await self.gate.wait()
        self.ids.extend(msg_id for _, _, msg_id in items)


async def eventually(condition: Callable[[], bool], what: str) -> None:
    async def check() -> bool:
        return condition()

    await eventually_async(check, timeout=3.0, interval=0.01, what=what)


@pytest.mark.timeout(10)
async def test_changes_are_published_in_order_and_ready_follows_the_first_lists() -> None:
    bound = pod("a", "u1", "11")
    bound["spec"]["nodeName"] = "n1"
    condition_only = pod("a", "u1", "12")
    condition_only["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    condition_only["spec"]["nodeName"] = "n1"
    api = FakeApi(
        lists={PODS.list_path: [pod("a", "u1", "5"), pod("b", "u2", "6")]},
        watches={PODS.list_path: [{"type": "MODIFIED", "object": bound},
                                  {"type": "MODIFIED", "object": condition_only},
                                  {"type": "DELETED", "object": pod("b", "u2", "13")}]},
    )
    publisher = FakePublisher()
    publisher.gate.clear()
    ready = ReadyFlag("watcher")
    settings = Settings(watcher=WatcherSettings(tick_seconds=0.05))
    watcher = Watcher(api, publisher, settings, resources=(NODES, PODS), clock_ms=lambda: 1000)
    task = asyncio.create_task(watcher.run(ready))
    try:
        await eventually(lambda: publisher.is_waiting, "a publish waiting for NATS")
        assert not ready.is_ready
        publisher.gate.set()
        await eventually(lambda: ready.is_ready, "ready")
        await eventually(lambda: any(i.startswith("clock/") for i in publisher.ids), "a tick")
        changes = [i for i in publisher.ids if not i.startswith("clock/")]
        assert changes == ["pod/u1/5/observed", "pod/u2/6/observed",
                           "pod/u1/11/observed", "pod/u2/13/deleted"]  # 12 repeats 11
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.timeout(10)
async def test_a_seed_from_the_log_publishes_only_what_changed_while_down() -> None:
    api = FakeApi(lists={PODS.list_path: [pod("a", "u1", "5")]}, watches={})
    publisher = FakePublisher()
    ready = ReadyFlag("watcher")
    seeds = {PODS.list_path: {"u1": Known("a", "default", "5"),
                              "u9": Known("gone", "default", "3")}}
    watcher = Watcher(api, publisher, Settings(), seeds=seeds, resources=(PODS,),
                      clock_ms=lambda: 1000)
    task = asyncio.create_task(watcher.run(ready))
    try:
        await eventually(lambda: ready.is_ready, "ready")
        assert publisher.ids == ["pod/u9/3/deleted"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.timeout(10)
async def test_a_malformed_budget_is_published_as_read_with_one_warning_line(
        caplog: pytest.LogCaptureFixture) -> None:
    def budget(name: str, uid: str, selector: object) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ml", "uid": uid, "resourceVersion": "3"},
                "spec": {"selector": selector}, "status": {"disruptionsAllowed": 1}}

    api = FakeApi(lists={PDBS.list_path: [budget("bad", "b1", {"matchExpressions": [
        {"key": "app", "operator": "Equals", "values": ["web"]}]}),
        budget("good", "b2", {"matchLabels": {"app": "web"}})]}, watches={})
    publisher = FakePublisher()
    ready = ReadyFlag("watcher")
    watcher = Watcher(api, publisher, Settings(), resources=(PDBS,), clock_ms=lambda: 1000)
    task = asyncio.create_task(watcher.run(ready))
    try:
        with caplog.at_level(logging.WARNING, logger="services.watcher.service"):
            await eventually(lambda: ready.is_ready, "ready")
        assert publisher.ids[:2] == ["pdb/b1/3/observed", "pdb/b2/3/observed"]
        assert [r.getMessage() for r in caplog.records
                if r.name == "services.watcher.service"] == [
            "PodDisruptionBudget ml/bad (resourceVersion 3) is malformed: spec.selector is not "
            "a valid label selector (read as selecting no pod)"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
