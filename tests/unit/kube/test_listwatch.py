"""List-then-watch: pages, resume from resourceVersion, bookmarks, relist on 410 with deletes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from services.kube import errors, listwatch
from services.kube.listwatch import Change, Inventory, Known, Synced
from services.kube.resources import NODES, PODGROUPS, PODS, PVCS, STORAGECLASSES


def obj(name: str, uid: str, rv: str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": rv}}


def page(items: list[dict[str, Any]], rv: str, token: str = "") -> dict[str, Any]:
    meta = {"resourceVersion": rv} | ({"continue": token} if token else {})
    return {"metadata": meta, "items": items}


class FakeApi:
    """Scripted list responses and watch streams; a watch with no script left hangs."""

    def __init__(self, lists: list[Any], watches: list[list[Any]]) -> None:
        self.lists = lists
        self.watches = watches
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.read_timeouts: list[float] = []

    async def request(self, method: str, path: str, *, query: Any = ()) -> dict[str, Any]:
        self.calls.append(("list", dict(query)))
        response = self.lists.pop(0)
        if isinstance(response, Exception):
            raise response
        assert isinstance(response, dict)
        return response

    async def stream(
        self, path: str, query: Any, *, read_timeout_seconds: float,
        opened: Callable[[], None] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(("watch", dict(query)))
        self.read_timeouts.append(read_timeout_seconds)
        if not self.watches:
            await asyncio.Event().wait()
        script = self.watches.pop(0)
        if opened is not None and not (script and isinstance(script[0], errors.KubeUnreachable)):
            opened()
        for item in script:
            if isinstance(item, Exception):
                raise item
            yield item


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listwatch, "BACKOFF_FIRST_SECONDS", 0.0)
    monkeypatch.setattr(listwatch, "MIN_WATCH_SECONDS", 0.0)


async def take(api: FakeApi, count: int, **kwargs: Any) -> list[listwatch.Observation]:
    stream = listwatch.observe(api, PODS, page_size=2, **kwargs)
    try:
        return [await asyncio.wait_for(anext(stream), 2) for _ in range(count)]
    finally:
        await stream.aclose()


def summary(observations: list[listwatch.Observation]) -> list[tuple[str, ...]]:
    result: list[tuple[str, ...]] = []
    for item in observations:
        if isinstance(item, Synced):
            result.append(("synced", item.resource_version))
        else:
            meta = item.obj["metadata"]
            kind = "synthetic-" + item.type if item.is_synthetic else item.type
            result.append((kind, meta["uid"], meta["resourceVersion"]))
    return result


async def test_a_paginated_list_yields_every_object_then_synced_then_watch_events() -> None:
    api = FakeApi(
        lists=[page([obj("a", "u1", "5"), obj("b", "u2", "6")], "10", token="t"),
               page([obj("c", "u3", "7")], "10")],
        watches=[[{"type": "ADDED", "object": obj("d", "u4", "11")},
                  {"type": "MODIFIED", "object": obj("a", "u1", "12")},
                  {"type": "DELETED", "object": obj("b", "u2", "13")}]],
    )
    seen = await take(api, 7)
    assert summary(seen) == [
        ("observed", "u1", "5"), ("observed", "u2", "6"), ("observed", "u3", "7"),
        ("synced", "10"),
        ("observed", "u4", "11"), ("observed", "u1", "12"), ("deleted", "u2", "13"),
    ]
    assert api.calls[1] == ("list", {"limit": "2", "continue": "t"})
    assert api.calls[2] == ("watch", {
        "watch": "true", "resourceVersion": "10", "allowWatchBookmarks": "true",
        "timeoutSeconds": "300",
    })


async def test_a_watch_resumes_from_the_last_version_seen_including_bookmarks() -> None:
    api = FakeApi(
        lists=[page([], "10")],
        watches=[[{"type": "ADDED", "object": obj("a", "u1", "11")}],
                 [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}],
                 [{"type": "MODIFIED", "object": obj("a", "u1", "21")}]],
    )
    seen = await take(api, 3)
    assert summary(seen) == [("synced", "10"), ("observed", "u1", "11"), ("observed", "u1", "21")]
    watch_versions = [query["resourceVersion"] for call, query in api.calls if call == "watch"]
    assert watch_versions == ["10", "11", "20"]


async def test_gone_relists_and_deletes_what_vanished_meanwhile() -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                         "message": "too old resource version"}}
    api = FakeApi(
        lists=[page([obj("a", "u1", "5"), obj("b", "u2", "6")], "10"),
               page([obj("a", "u1", "5"), obj("c", "u3", "30")], "31")],
        watches=[[gone]],
    )
    seen = await take(api, 6)
    assert summary(seen) == [
        ("observed", "u1", "5"), ("observed", "u2", "6"), ("synced", "10"),
        # the relist skips the unchanged u1, adds u3 and deletes the vanished u2
        ("observed", "u3", "30"), ("synthetic-deleted", "u2", "6"), ("synced", "31"),
    ]
    assert seen[4] == Change(
        "deleted", {"metadata": {"name": "b", "namespace": "default", "uid": "u2",
                                 "resourceVersion": "6"}}, is_synthetic=True,
    )


async def test_transient_failures_are_retried_without_losing_the_position() -> None:
    api = FakeApi(
        lists=[errors.KubeUnavailable("down"), page([obj("a", "u1", "5")], "10")],
        watches=[[errors.KubeUnavailable("broken stream")],
                 [{"type": "MODIFIED", "object": obj("a", "u1", "12")}]],
    )
    seen = await take(api, 3)
    assert summary(seen) == [("observed", "u1", "5"), ("synced", "10"), ("observed", "u1", "12")]
    watch_versions = [query["resourceVersion"] for call, query in api.calls if call == "watch"]
    assert watch_versions == ["10", "10"]


async def test_a_seed_skips_unchanged_objects_and_deletes_the_ones_gone() -> None:
    seed = {"u1": Known("a", "default", "5"), "u2": Known("b", "default", "6")}
    api = FakeApi(lists=[page([obj("a", "u1", "5")], "10")], watches=[])
    seen = await take(api, 2, known=seed)
    assert summary(seen) == [("synthetic-deleted", "u2", "6"), ("synced", "10")]


def test_an_object_replaced_under_its_name_is_deleted_before_the_new_one_is_observed() -> None:
    inventory = Inventory({"old": Known("a", "default", "5")})
    inventory.begin_list()
    changes = inventory.listed(obj("a", "new", "9"))
    assert [(c.type, c.obj["metadata"]["uid"], c.is_synthetic) for c in changes] == [
        ("deleted", "old", True), ("observed", "new", False),
    ]
    assert inventory.end_list() == []


def test_a_watched_delete_forgets_the_object() -> None:
    inventory = Inventory()
    inventory.watched("observed", obj("a", "u1", "5"))
    inventory.watched("deleted", obj("a", "u1", "6"))
    inventory.begin_list()
    assert inventory.end_list() == []
    assert len(inventory) == 0


async def test_a_resync_lists_again_and_yields_every_object_changed_or_not() -> None:
    api = FakeApi(
        lists=[page([obj("a", "u1", "5"), obj("b", "u2", "6"), obj("c", "u3", "7")], "10"),
               page([obj("a", "u1", "5"), obj("b", "u2", "8")], "20")],
        watches=[[]],  # the first watch request ends at once: time to resync
    )
    seen = await take(api, 8, resync_seconds=0.0)
    assert summary(seen) == [
        ("observed", "u1", "5"), ("observed", "u2", "6"), ("observed", "u3", "7"),
        ("synced", "10"),
        # every listed object again; the vanished one deleted with its last version
        ("observed", "u1", "5"), ("observed", "u2", "8"), ("synthetic-deleted", "u3", "7"),
        ("synced", "20"),
    ]


async def test_a_relist_after_gone_does_not_put_the_resync_off() -> None:
    """A relist after 410 Gone yields only what changed, so the resync that restates every
    object counts from the first list, not from it: relists more often than the resync
    period would otherwise keep an idle object's last event from ever being published
    again, and the log's retention would drop it."""
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    api = FakeApi(lists=[page([obj("a", "u1", "5")], "10"), page([obj("a", "u1", "5")], "31"),
                         page([obj("a", "u1", "5")], "40")],
                  watches=[[gone], []])
    stream = listwatch.observe(api, PODS, resync_seconds=1.0)
    seen: list[listwatch.Observation] = []
    pauses = {1: 0.7, 2: 0.4}  # after the first list's Synced, and after the relist's
    try:
        for index in range(5):
            seen.append(await asyncio.wait_for(anext(stream), 3))
            await asyncio.sleep(pauses.get(index, 0))
    finally:
        await stream.aclose()
    assert summary(seen) == [("observed", "u1", "5"), ("synced", "10"),  # first list
                             ("synced", "31"),  # the relist: nothing changed
                             ("observed", "u1", "5"), ("synced", "40")]  # the resync, on time


async def test_a_resync_list_that_fails_is_retried_as_a_resync() -> None:
    """Otherwise the retry would restate only what changed, and the objects the failed
    resync did not reach would wait a whole period more to be published again."""
    api = FakeApi(
        lists=[page([obj("a", "u1", "5"), obj("b", "u2", "6")], "10"),
               page([obj("a", "u1", "5")], "20", token="t"),
               errors.KubeError("HTTP 500: etcd timeout", status=500),
               page([obj("a", "u1", "5"), obj("b", "u2", "6")], "30")],
        watches=[[]],  # the first watch request ends at once: time to resync
    )
    seen = await take(api, 7, resync_seconds=0.0)
    assert summary(seen) == [
        ("observed", "u1", "5"), ("observed", "u2", "6"), ("synced", "10"),
        ("observed", "u1", "5"),  # the resync's first page; its second page fails
        ("observed", "u1", "5"), ("observed", "u2", "6"), ("synced", "30"),  # all again
    ]


async def test_a_relist_after_gone_that_is_due_is_the_resync() -> None:
    """Were a due resync only checked with a watch to resume, watches that all end in 410
    Gone would never let it happen: an unchanged object would never be published again."""
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    api = FakeApi(lists=[page([obj("a", "u1", "5")], "10"),
                         page([obj("a", "u1", "5"), obj("b", "u2", "11")], "20")],
                  watches=[[{"type": "ADDED", "object": obj("b", "u2", "11")}, gone]])
    seen = await take(api, 6, resync_seconds=0.0)
    assert summary(seen) == [("observed", "u1", "5"), ("synced", "10"),
                             ("observed", "u2", "11"),
                             ("observed", "u1", "5"), ("observed", "u2", "11"),  # restated
                             ("synced", "20")]


async def backoffs_when_every_watch_is_gone(monkeypatch: pytest.MonkeyPatch,
                                            min_watch_seconds: float) -> int:
    """How many backoffs `observe` takes over four lists whose watches each answer 410 Gone
    (the fifth list finds the script ended: IndexError)."""
    monkeypatch.setattr(listwatch, "MIN_WATCH_SECONDS", min_watch_seconds)
    backoffs: list[float] = []
    original = listwatch._Backoff.next_seconds

    def counted(self: Any) -> float:
        backoffs.append(original(self))
        return backoffs[-1]

    monkeypatch.setattr(listwatch._Backoff, "next_seconds", counted)
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    api = FakeApi(lists=[page([obj("a", "u1", "5")], str(10 * i)) for i in range(1, 5)],
                  watches=[[gone] for _ in range(4)])
    with pytest.raises(IndexError):
        async for _ in listwatch.observe(api, PODS):
            pass
    monkeypatch.setattr(listwatch._Backoff, "next_seconds", original)
    return len(backoffs)


async def test_a_watch_gone_at_once_every_time_lists_again_after_a_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As client-go's Reflector backs off between ListAndWatch attempts: a server whose every
    watch answers 410 Gone at once must not be listed in a tight loop. One that answers it
    after a watch that lasted is listed again at once."""
    assert await backoffs_when_every_watch_is_gone(monkeypatch, 60.0) == 4
    assert await backoffs_when_every_watch_is_gone(monkeypatch, 0.0) == 0


async def test_without_a_resync_an_ended_watch_resumes_without_listing() -> None:
    api = FakeApi(lists=[page([obj("a", "u1", "5")], "10")],
                  watches=[[], [{"type": "MODIFIED", "object": obj("a", "u1", "11")}]])
    seen = await take(api, 3)
    assert summary(seen) == [("observed", "u1", "5"), ("synced", "10"), ("observed", "u1", "11")]
    assert [call for call, _ in api.calls] == ["list", "watch", "watch"]


def test_a_collection_the_api_server_does_not_serve_gets_a_hint() -> None:
    from services.kube import errors, listwatch, resources

    missing = errors.KubeError("HTTP 404: 404 page not found", status=404)
    hint = listwatch._hint(resources.PODGROUPS, missing)
    assert hint.startswith(" (does this cluster serve scheduling.x-k8s.io/v1alpha1? install")
    assert "kubectl apply --server-side -f deploy/crds/" in hint
    assert listwatch._hint(resources.PODS, missing) == ""  # core API: no CRD to install
    assert listwatch._hint(resources.PODGROUPS, errors.KubeError("boom", status=500)) == ""


def test_a_list_rbac_forbids_gets_a_hint_naming_resource_and_group() -> None:
    from services.kube import resources

    forbidden = errors.from_status(403, {"reason": "Forbidden", "message": "forbidden"},
                                   "pdb list")
    assert listwatch._hint(resources.PDBS, forbidden) == (
        " (RBAC: let this identity list and watch poddisruptionbudgets.policy, as the watcher "
        "ClusterRole of deploy/chart/templates/rbac.yaml does; not ready until it may)")
    assert "list and watch nodes, as" in listwatch._hint(resources.NODES, forbidden)
    unauthorized = errors.from_status(401, None, "pdb list")
    assert listwatch._hint(resources.PDBS, unauthorized) == ""  # credentials, not RBAC


async def test_a_watch_the_server_ends_at_once_after_events_is_resumed_without_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The API server ends the watch of a client it finds slow to read; that watch brought
    events, so it is resumed at once (client-go backs off only after a very short watch with
    no items received)."""
    monkeypatch.setattr(listwatch, "MIN_WATCH_SECONDS", 60.0)
    monkeypatch.setattr(listwatch, "BACKOFF_FIRST_SECONDS", 30.0)
    api = FakeApi(
        lists=[page([], "10")],
        watches=[[{"type": "ADDED", "object": obj(f"p{i}", f"u{i}", str(11 + i))}]
                 for i in range(4)],
    )
    seen = await take(api, 5)  # 2 s at most for all of them
    assert summary(seen)[1:] == [("observed", f"u{i}", str(11 + i)) for i in range(4)]


async def _backs_off_after_the_first_watch(api: FakeApi) -> None:
    """The list's Synced comes, then nothing within 0.5 s: the first watch, ended at once, was
    not followed by another (a 30 s backoff runs)."""
    stream = listwatch.observe(api, PODS, page_size=2)
    try:
        assert summary([await asyncio.wait_for(anext(stream), 2)]) == [("synced", "10")]
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(stream), 0.5)
    finally:
        await stream.aclose()
    assert [call for call, _ in api.calls] == ["list", "watch"]


async def test_a_watch_the_server_ends_at_once_with_nothing_backs_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listwatch, "MIN_WATCH_SECONDS", 60.0)
    monkeypatch.setattr(listwatch, "BACKOFF_FIRST_SECONDS", 30.0)
    await _backs_off_after_the_first_watch(FakeApi(
        lists=[page([], "10")],
        watches=[[], [{"type": "ADDED", "object": obj("a", "u1", "11")}]]))


async def test_a_watch_ending_at_once_with_a_bookmark_at_the_same_version_backs_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No progress, so no hot loop: a server answering every watch with one bookmark at the
    version asked for is retried after a backoff, as one answering with nothing is."""
    monkeypatch.setattr(listwatch, "MIN_WATCH_SECONDS", 60.0)
    monkeypatch.setattr(listwatch, "BACKOFF_FIRST_SECONDS", 30.0)
    same = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "10"}}}
    await _backs_off_after_the_first_watch(
        FakeApi(lists=[page([], "10")], watches=[[same], [same], [same]]))


class Clock:
    """A settable monotonic clock, in seconds."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def refused(resource: str = "nodes") -> errors.KubeUnreachable:
    return errors.KubeUnreachable(f"GET /api/v1/{resource}", server="https://127.0.0.1:1",
                                  why="connection refused")


def test_connection_failures_are_one_line_for_all_resources_then_every_tenth_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    health = listwatch.Health(clock=Clock())
    caplog.set_level("INFO", logger="services.kube.listwatch")
    for _ in range(3):
        for resource in (NODES, PODS, STORAGECLASSES, PVCS):
            health.failed(resource, refused(), 0.5)
    health.reached(NODES)
    health.failed(NODES, refused(), 1.0)
    assert [record.getMessage() for record in caplog.records] == [
        "cannot reach the API server at https://127.0.0.1:1: connection refused; "
        "retrying in 0.5s",
        "cannot reach the API server at https://127.0.0.1:1: connection refused; "
        "retrying in 0.5s (11 such failures)",
        "the API server at https://127.0.0.1:1 answers again",
        "cannot reach the API server at https://127.0.0.1:1: connection refused; "
        "retrying in 1s",
    ]


def test_an_error_the_server_answered_keeps_its_wording_for_its_resource(
        caplog: pytest.LogCaptureFixture) -> None:
    health = listwatch.Health(clock=Clock())
    not_served = errors.from_status(404, {"message": "the server could not find it"},
                                    f"GET {PODGROUPS.list_path}")
    health.failed(PODGROUPS, not_served, 2.0)
    assert [record.getMessage() for record in caplog.records] == [
        "podgroup list/watch failed, retrying in 2s: GET "
        "/apis/scheduling.x-k8s.io/v1alpha1/podgroups: HTTP 404: the server could not find it "
        "(does this cluster serve scheduling.x-k8s.io/v1alpha1? install its CRD, e.g. "
        "`kubectl apply --server-side -f deploy/crds/` for scheduling.x-k8s.io, or enable the "
        "API group and feature gates for scheduling.k8s.io; see docs/integrations.md)"]


def test_a_list_watch_is_failing_only_after_the_grace_until_it_is_answered_again() -> None:
    clock = Clock()
    health = listwatch.Health(clock=clock)
    health.failed(NODES, refused(), 0.5)
    clock.now += 1.0
    health.failed(PODS, refused("pods"), 0.5)
    assert health.failing() == ([], 3.0)
    clock.now += 3.0
    assert health.failing() == (["nodes"], 1.0)
    clock.now += 1.0
    assert health.failing() == (["nodes", "pods"], None)
    assert health.changed.is_set()
    health.changed.clear()
    health.reached(PODS)
    assert health.changed.is_set()
    assert health.failing() == (["nodes"], None)
    health.reached(NODES)
    assert health.failing() == ([], None)


async def test_a_watch_ending_or_expiring_is_no_failure(
        caplog: pytest.LogCaptureFixture) -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    api = FakeApi(lists=[page([], "10"), page([], "20")],
                  watches=[[], [gone], [{"type": "ADDED", "object": obj("a", "u1", "21")}]])
    health = listwatch.Health()
    caplog.set_level("INFO", logger="services.kube.listwatch")
    seen = await take(api, 3, health=health)
    assert summary(seen) == [("synced", "10"), ("synced", "20"), ("observed", "u1", "21")]
    assert health.failing(0.0) == ([], None)
    assert not health.changed.is_set()
    assert [r.getMessage() for r in caplog.records if r.levelname != "INFO"] == []


async def test_a_list_is_logged_with_the_resource_plural(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="services.kube.listwatch")
    added = {"type": "ADDED", "object": obj("fast", "u1", "11", namespace="")}
    stream = listwatch.observe(FakeApi(lists=[page([], "10")], watches=[[added]]),
                               STORAGECLASSES)
    try:
        assert await asyncio.wait_for(anext(stream), 2) == Synced("10")
        assert summary([await asyncio.wait_for(anext(stream), 2)]) == [("observed", "u1", "11")]
    finally:
        await stream.aclose()
    assert [record.getMessage() for record in caplog.records] == [
        "listed storageclasses: 0 objects"]


def silence() -> errors.KubeSilent:
    return errors.KubeSilent("GET /api/v1/pods (stream)", server="https://127.0.0.1:6443",
                             why="nothing received for 90s")


async def test_a_silent_watch_is_opened_again_at_once_from_its_version_without_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    same_version = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "10"}}}
    api = FakeApi(lists=[page([], "10")],
                  watches=[[same_version, silence()],
                           [{"type": "ADDED", "object": obj("a", "u1", "11")}]])
    health = listwatch.Health()
    caplog.set_level("DEBUG", logger="services.kube.listwatch")
    seen = await take(api, 2, health=health)
    assert summary(seen) == [("synced", "10"), ("observed", "u1", "11")]
    assert [query["resourceVersion"] for call, query in api.calls if call == "watch"] == [
        "10", "10"]
    assert [call for call, _ in api.calls].count("list") == 1  # no new list
    assert health.changed.is_set()  # it counted as failing until the new watch opened
    assert health.failing(0.0) == ([], None)
    assert [r.levelname for r in caplog.records if r.levelno >= 30] == []


def test_a_silent_watch_not_answered_again_is_failing_after_the_grace() -> None:
    clock = Clock()
    health = listwatch.Health(clock=clock)
    health.silent(PODS)
    assert health.failing() == ([], listwatch.UNREADY_AFTER_SECONDS)
    clock.now += listwatch.UNREADY_AFTER_SECONDS
    assert health.failing() == (["pods"], None)
    health.reached(PODS)
    assert health.failing() == ([], None)


@pytest.mark.parametrize(("timeout_seconds", "read_timeout"), [(300, 90.0), (10, 40.0)])
async def test_a_watch_silent_for_90s_or_its_timeout_and_margin_is_taken_for_broken(
        timeout_seconds: int, read_timeout: float) -> None:
    api = FakeApi(lists=[page([], "10")], watches=[])  # the watch opens, then hangs
    stream = listwatch.observe(api, PODS, watch_timeout_seconds=timeout_seconds)
    try:
        assert await asyncio.wait_for(anext(stream), 2) == Synced("10")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(stream), 0.1)
    finally:
        await stream.aclose()
    assert api.read_timeouts == [read_timeout]


async def test_a_410_gone_is_logged_as_met_by_the_list_or_the_watch_that_met_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A list whose continue token expired is not told as an expired watch."""
    monkeypatch.setattr(listwatch, "MIN_WATCH_SECONDS", 60.0)
    caplog.set_level(logging.INFO, logger=listwatch.__name__)
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
    api = FakeApi(lists=[errors.KubeGone("HTTP 410: continue token expired", status=410),
                         page([obj("a", "u1", "5")], "10"), page([], "20")],
                  watches=[[gone]])
    await take(api, 3)
    expiries = [record.getMessage() for record in caplog.records
                if "expired" in record.getMessage()]
    assert [line.split(" (")[0] for line in expiries] == [
        "pod list expired at once", "pod watch expired at once"]


async def test_a_list_answer_that_is_no_list_deletes_nothing_and_is_retried() -> None:
    """A relist answered with a JSON object holding no `items` (a proxy's, a misrouted
    server's) is no list of nothing: it is retried, and no known object is told deleted
    (every pod, node and PodGroup was, and the planner saw an empty cluster)."""
    seed = {"u1": Known("a", "default", "5"), "u2": Known("b", "default", "6")}
    api = FakeApi(lists=[{"kind": "Status", "metadata": {}}, {"items": "none"},
                         page([obj("a", "u1", "5")], "10")], watches=[])
    seen = await take(api, 2, known=seed)
    assert summary(seen) == [("synthetic-deleted", "u2", "6"), ("synced", "10")]
    assert [call for call, _ in api.calls] == ["list", "list", "list"]


async def test_a_watch_error_without_a_numeric_code_is_an_error_not_a_crash() -> None:
    """An ERROR event whose `code` is no integer ends the watch as an error of the server
    (retried from the same position), not a ValueError that took the watcher down."""
    api = FakeApi(lists=[page([], "10")],
                  watches=[[{"type": "ERROR", "object": {"kind": "Status", "code": "x",
                                                         "message": "odd"}}],
                           [{"type": "ADDED", "object": obj("a", "u1", "11")}]])
    seen = await take(api, 2)
    assert summary(seen) == [("synced", "10"), ("observed", "u1", "11")]


async def test_a_throttled_list_waits_as_long_as_the_api_server_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A list answered 429 with Retry-After 7: the next list comes 7 s later, not after the
    backoff (client-go's reflector waits for it); one that asked nothing keeps the backoff."""
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(seconds: float) -> None:
        sleeps.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", recorded)
    throttled = errors.from_status(429, {"message": "too many requests"}, "list pods",
                                   retry_after_seconds=7)
    api = FakeApi(lists=[throttled, errors.KubeUnavailable("down"), page([], "10")],
                  watches=[])
    seen = await take(api, 1)
    assert summary(seen) == [("synced", "10")]
    assert sleeps == [7.0, 0.0]
