"""The memory of pod spec readings: what a remembered reading gives is what reading gives."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from services.kube.listwatch import Change
from services.watcher import messages, slim, spec_memory
from services.watcher.spec_memory import SpecMemory


def pod(name: str = "w-0", namespace: str = "ml", **spec: Any) -> dict[str, Any]:
    """A pod as decoded from the API server's JSON, with a spread, an anti-affinity term (its
    namespace defaults to the pod's), a toleration and an ephemeral volume (named after the
    pod)."""
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                     "resourceVersion": "7", "labels": {"app": "train"},
                     "creationTimestamp": "2026-12-06T03:00:00Z"},
        "spec": {
            "schedulerName": "gangsched",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"},
                                                       "limits": {"memory": "1Gi"}}}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "train"}},
                 "topologyKey": "kubernetes.io/hostname"}]}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                           "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {"app": "train"}}}],
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}],
        },
        "status": {"phase": "Pending"},
    }
    body["spec"].update(spec)
    # as the watcher gets it: decoded from JSON
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


def test_a_remembered_reading_gives_the_event_reading_gives() -> None:
    memory = SpecMemory()
    first, sibling = pod("w-0"), pod("w-1")
    bound = copy.deepcopy(first)
    bound["spec"]["nodeName"], bound["status"]["phase"] = "n1", "Running"
    for obj in (first, sibling, bound, first):
        assert slim.pod_event(obj, 5, memory) == slim.pod_event(obj, 5)
    assert len(memory) == 1  # one spec (nodeName aside) in one namespace
    assert slim.pod_event(bound, 5, memory).node_name == "n1"
    assert [c.name for c in slim.pod_event(sibling, 5, memory).volume_claims] == [
        "w-1-scratch"]  # named after its own pod, not the one first read


def test_a_changed_spec_or_another_namespace_is_read_anew() -> None:
    memory = SpecMemory()
    slim.pod_event(pod(), 5, memory)
    resized = pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "2"}}}])
    assert slim.pod_event(resized, 5, memory).requests["cpu"] == 2000
    elsewhere = slim.pod_event(pod(namespace="other"), 5, memory)
    assert elsewhere.pod_anti_affinity[0].namespaces == ("other",)
    assert slim.pod_event(pod(), 5, memory).pod_anti_affinity[0].namespaces == ("ml",)
    assert len(memory) == 3


def test_changing_an_event_leaves_the_remembered_reading_alone() -> None:
    memory = SpecMemory()
    event = slim.pod_event(pod(nodeSelector={"zone": "a"}), 5, memory)
    event.requests["cpu"] = 1
    event.node_selector["zone"] = "b"
    again = slim.pod_event(pod(nodeSelector={"zone": "a"}), 5, memory)
    assert (again.requests["cpu"], again.node_selector) == (500, {"zone": "a"})


def counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the specs the memory reads itself (one entry per read)."""
    reads: list[int] = []

    def read(spec: slim.Obj, namespace: str) -> slim.PodSpecReading:
        reads.append(1)
        return slim.read_pod_spec(spec, namespace)

    monkeypatch.setattr(spec_memory, "read_pod_spec", read)
    return reads


def test_the_oldest_reading_is_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = counted_reads(monkeypatch)
    memory = SpecMemory(entries=2)
    specs = [pod(priority=p) for p in (1, 2, 3)]
    for obj in specs:
        slim.pod_event(obj, 5, memory)
    assert (len(memory), len(reads)) == (2, 3)
    assert [slim.pod_event(obj, 5, memory).priority for obj in specs[1:]] == [2, 3]
    assert len(reads) == 3  # the two newest were remembered
    assert slim.pod_event(specs[0], 5, memory).priority == 1
    assert len(reads) == 4  # the oldest was forgotten


def test_a_large_spec_is_read_every_time_and_never_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reads = counted_reads(monkeypatch)
    memory = SpecMemory()
    big = pod(containers=[{"name": "c", "args": ["x" * spec_memory.MAX_REMEMBERED_SPEC_BYTES],
                           "resources": {"requests": {"cpu": "1"}}}])
    assert slim.pod_event(big, 5, memory) == slim.pod_event(big, 5)
    assert slim.pod_event(big, 5, memory).requests["cpu"] == 1000
    assert (len(memory), len(reads)) == (0, 2)


def test_a_spec_nested_too_deep_to_encode_is_read() -> None:
    memory = SpecMemory()
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    odd = pod()
    odd["spec"]["unknownField"] = deep  # a field the reading never looks at
    assert slim.pod_event(odd, 5, memory).requests["cpu"] == 500
    assert len(memory) == 0


def test_a_spec_that_is_not_json_is_read_and_not_remembered() -> None:
    memory = SpecMemory()
    odd = pod()
    odd["spec"]["tolerations"] = ({"key": "gpu", "operator": "Exists"},)  # a tuple: no list
    odd["spec"]["overhead"] = {"cpu": object()}
    assert slim.pod_event(odd, 5, memory) == slim.pod_event(odd, 5)
    assert len(memory) == 0


def test_memory_needs_room_for_one_reading() -> None:
    with pytest.raises(ValueError, match="entries must be >= 1"):
        SpecMemory(entries=0)


def test_the_watchers_messages_read_pods_through_the_memory() -> None:
    bound = pod()
    bound["spec"]["nodeName"] = "n1"
    (_, data, _), = messages.change_messages("gs", "pod", Change("observed", bound), 5)
    (_, again, _), = messages.change_messages("gs", "pod", Change("observed", pod("w-1")), 5)
    assert msgspec.json.decode(data)["node_name"] == "n1"
    assert msgspec.json.decode(again)["name"] == "w-1"
    assert (msgspec.json.decode(again)["requests"]
            == msgspec.json.decode(data)["requests"] == {"cpu": 500, "memory": 1073741824,
                                                         "pods": 1})
