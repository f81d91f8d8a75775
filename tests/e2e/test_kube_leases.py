"""`KubeLease` on a real API server: who may take, renew and release the Lease, and when a
silent holder's Lease counts as expired (measured on the candidate's own clock)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from services.kube.client import KubeClient
from services.kube.leases import KubeLease
from services.kube.resources import lease_path
from services.runtime.election import LeaseRefused

pytestmark = pytest.mark.e2e


class Clock:
    """A monotonic clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lease(api: KubeClient, name: str, installation: str, process: str = "p",
          clock: Clock | None = None) -> KubeLease:
    return KubeLease(api, namespace="kube-system", name=name, installation=installation,
                     process=process, lease_seconds=15, clock=clock or Clock())


async def holder_of(api: KubeClient, name: str) -> str:
    """The installation part of the Lease's holder ("" when released)."""
    found = await api.request("GET", lease_path("kube-system", name))
    return str(found["spec"].get("holderIdentity") or "").split("/")[0]


async def test_a_live_holder_keeps_the_lease_and_a_silent_one_loses_it_after_its_duration(
        api: KubeClient) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    first = lease(api, name, "first")
    assert await first.acquire() == 1
    clock = Clock()
    second = lease(api, name, "second", clock=clock)
    assert await second.acquire() is None  # first seen now
    clock.now += 14
    assert await second.acquire() is None  # unchanged for 14 s of a 15 s lease
    assert await first.renew(1) == 2  # the record changes
    clock.now += 14
    assert await second.acquire() is None  # seen changed now: the count starts again
    clock.now += 15
    assert await second.acquire() is None  # unchanged for 15 s: not more than the lease
    clock.now += 1
    assert await second.acquire() == 1
    assert await holder_of(api, name) == "second"
    assert await first.renew(2) is None  # taken over: the first steps down
    found = await api.request("GET", lease_path("kube-system", name))
    assert found["spec"]["leaseTransitions"] == 1
    assert found["spec"]["leaseDurationSeconds"] == 15


async def test_processes_of_one_installation_hold_the_lease_together(api: KubeClient) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    one, other = lease(api, name, "install-a", "one"), lease(api, name, "install-a", "other")
    assert await one.acquire() == 1
    assert await other.acquire() == 1  # our installation's already
    assert await one.renew(1) == 2  # although `other` wrote since
    assert await lease(api, name, "install-b").acquire() is None
    results = await asyncio.gather(*(member.renew(2) for member in (one, other) for _ in range(4)))
    assert None not in results  # every race lost to a sibling is renewed still
    assert await one.renew(3) is not None
    assert await other.renew(3) is not None  # it reads `one`'s write, then writes last
    await other.release(4)  # it wrote last, but saw `one` write within the lease duration
    assert await holder_of(api, name) == "install-a"
    assert await lease(api, name, "install-b").acquire() is None
    assert await one.renew(4) is not None


async def test_a_released_lease_is_taken_at_once_and_a_release_leaves_anothers_alone(
        api: KubeClient) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    first, second = lease(api, name, "first"), lease(api, name, "second")
    assert await first.acquire() == 1
    assert await second.acquire() is None
    await second.release(1)  # not its own: nothing changes
    assert await holder_of(api, name) == "first"
    await first.release(1)
    assert await holder_of(api, name) == ""
    assert await second.acquire() == 1
    found = await api.request("GET", lease_path("kube-system", name))
    assert found["spec"]["holderIdentity"] == "second/p"
    assert found["spec"]["leaseTransitions"] == 1  # a change of installation, as client-go
    assert found["spec"]["acquireTime"] == found["spec"]["renewTime"]


async def test_a_lease_in_a_namespace_that_does_not_exist_is_refused_naming_it(
        api: KubeClient) -> None:
    namespace = f"no-{uuid.uuid4().hex[:8]}"
    missing = KubeLease(api, namespace=namespace, name="gangsched", installation="x",
                        process="p", lease_seconds=15)
    with pytest.raises(LeaseRefused) as refused:
        await missing.acquire()
    assert str(refused.value).startswith(f"taking Lease {namespace}/gangsched: POST ")
    assert f'namespaces "{namespace}" not found' in str(refused.value)
    assert "RBAC" not in str(refused.value) and "needs get" not in str(refused.value)
