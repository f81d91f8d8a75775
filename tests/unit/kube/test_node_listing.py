"""`NodeListing`: concurrent post-bind node checks share LISTs, and never get an answer from a
LIST sent before they asked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from services.kube import errors
from services.kube import nodes as kube_nodes
from services.kube.client import KubeClient
from services.kube.node_listing import NodeListing

PRESENT = frozenset({"n1", "n2", "n3", "n5"})


class FakeLists:
    """Stands in for `nodes.listed_by_hostname`: records each LIST's names and answers it
    when the test releases it."""

    def __init__(self) -> None:
        self.sent: list[frozenset[str]] = []
        self.release = asyncio.Event()
        self.failures: list[Exception] = []

    async def listed_by_hostname(self, client: KubeClient,
                                 names: Iterable[str]) -> frozenset[str]:
        self.sent.append(frozenset(names))
        await self.release.wait()
        if self.failures:
            raise self.failures.pop(0)
        return PRESENT & self.sent[-1]


@pytest.fixture
def lists(monkeypatch: pytest.MonkeyPatch) -> FakeLists:
    fake = FakeLists()
    monkeypatch.setattr(kube_nodes, "listed_by_hostname", fake.listed_by_hostname)
    return fake


def listing() -> NodeListing:
    return NodeListing(KubeClient.__new__(KubeClient))  # never used: the LISTs are faked


async def test_questions_asked_while_a_list_is_in_flight_share_the_next_one(
        lists: FakeLists) -> None:
    nodes = listing()
    first = asyncio.create_task(nodes.listed(["n1", "n4"]))
    await asyncio.sleep(0)
    second = asyncio.create_task(nodes.listed(["n2", "n4"]))
    third = asyncio.create_task(nodes.listed(["n3", "n5", "n6"]))
    await asyncio.sleep(0)
    assert lists.sent == [frozenset({"n1", "n4"})]  # the others wait for the next LIST
    lists.release.set()
    assert await first == {"n1"}
    assert await second == {"n2"}  # only what it asked, though the LIST found n3 and n5 too
    assert await third == {"n3", "n5"}
    assert lists.sent == [frozenset({"n1", "n4"}), frozenset({"n2", "n3", "n4", "n5", "n6"})]


async def test_a_lone_question_is_sent_at_once_and_an_empty_one_not_at_all(
        lists: FakeLists) -> None:
    nodes = listing()
    lists.release.set()
    assert await nodes.listed([]) == frozenset()
    assert await nodes.listed(["n1", "n9"]) == {"n1"}
    assert await nodes.listed(["n2"]) == {"n2"}
    assert lists.sent == [frozenset({"n1", "n9"}), frozenset({"n2"})]


async def test_a_failed_list_fails_its_callers_only(lists: FakeLists) -> None:
    nodes = listing()
    lists.failures.append(errors.KubeUnavailable("connection reset"))
    first = asyncio.create_task(nodes.listed(["n1"]))
    await asyncio.sleep(0)
    second = asyncio.create_task(nodes.listed(["n2"]))
    await asyncio.sleep(0)
    lists.release.set()
    with pytest.raises(errors.KubeUnavailable):
        await first
    assert await second == {"n2"}


async def test_a_caller_that_gives_up_leaves_the_others_their_answer(lists: FakeLists) -> None:
    nodes = listing()
    first = asyncio.create_task(nodes.listed(["n1"]))
    await asyncio.sleep(0)
    quitter = asyncio.create_task(nodes.listed(["n2"]))
    stayer = asyncio.create_task(nodes.listed(["n3"]))
    await asyncio.sleep(0)
    quitter.cancel()
    lists.release.set()
    assert await first == {"n1"}
    assert await stayer == {"n3"}
    with pytest.raises(asyncio.CancelledError):
        await quitter


async def test_after_a_cancelled_sender_a_new_question_gets_a_new_list(lists: FakeLists) -> None:
    nodes = listing()
    first = asyncio.create_task(nodes.listed(["n1"]))
    await asyncio.sleep(0)
    queued = asyncio.create_task(nodes.listed(["n2"]))
    await asyncio.sleep(0)
    sender = nodes._sender
    assert sender is not None
    sender.cancel()  # the loop's cancel-all at shutdown
    await asyncio.gather(first, queued, return_exceptions=True)
    assert first.cancelled() and queued.cancelled()
    lists.release.set()
    assert await asyncio.wait_for(nodes.listed(["n3"]), 1) == {"n3"}
    assert lists.sent[-1] == {"n3"}


def test_a_listing_left_behind_by_an_ended_loop_answers_in_the_next(lists: FakeLists) -> None:
    nodes = listing()
    left: list[asyncio.Future[frozenset[str]]] = []

    async def ask_and_leave() -> None:
        left.append(asyncio.ensure_future(nodes.listed(["n1"])))
        await asyncio.sleep(0.01)  # its LIST never answers in this loop

    old = asyncio.new_event_loop()
    old.run_until_complete(ask_and_leave())
    old.close()

    async def ask_again() -> frozenset[str]:
        lists.release = asyncio.Event()
        lists.release.set()
        return await asyncio.wait_for(nodes.listed(["n2"]), 1)

    assert asyncio.run(ask_again()) == {"n2"}
