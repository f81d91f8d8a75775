"""`KubeLease` on a real API server: who may take, renew and release the Lease, and when a
silent holder's Lease counts as expired (measured on the candidate's own clock)."""

from __future__ import annotations

import uuid

import pytest

from services.kube.client import KubeClient
from services.kube.leases import KubeLease, lease_path
from services.runtime.election import LeaseRefused

pytestmark = pytest.mark.e2e


class Clock:
    """A monotonic clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lease(api: KubeClient, name: str, holder: str, clock: Clock | None = None) -> KubeLease:
    return KubeLease(api, namespace="kube-system", name=name, holder=holder, lease_seconds=15,
                     clock=clock or Clock())


async def holder_of(api: KubeClient, name: str) -> str:
    found = await api.request("GET", lease_path("kube-system", name))
    return str(found["spec"].get("holderIdentity") or "")


async def test_a_live_holder_keeps_the_lease_and_a_silent_one_loses_it_after_its_duration(
        api: KubeClient) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    first = lease(api, name, "first")
    assert await first.acquire() == 1
    clock = Clock()
    second = lease(api, name, "second", clock)
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
    one, other = lease(api, name, "install-a"), lease(api, name, "install-a")
    assert await one.acquire() == 1
    assert await other.acquire() == 1  # ours already
    assert await one.renew(1) == 2  # although `other` wrote since
    assert await other.renew(1) == 2
    assert await lease(api, name, "install-b").acquire() is None


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
    assert await holder_of(api, name) == "second"


async def test_a_lease_in_a_namespace_that_does_not_exist_is_refused_naming_it(
        api: KubeClient) -> None:
    missing = KubeLease(api, namespace=f"no-{uuid.uuid4().hex[:8]}", name="gangsched",
                        holder="x", lease_seconds=15)
    with pytest.raises(LeaseRefused, match=f"taking Lease {missing.where}: .*the binder needs "
                       "get, create and update on leases.coordination.k8s.io in namespace"):
        await missing.acquire()
