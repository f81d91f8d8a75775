"""Which storage changes during one offer make a pod not comparable: the pod's own claims and
the volumes bound to them are expected to change (kube-scheduler binds them after judging
it); any other claim or volume changing means the state it was judged on is unknown."""

from __future__ import annotations

from typing import Any

from tests.e2e.differential import storage, verdict


def claim(name: str, volume: str = "", version: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                            "resourceVersion": version}
    if volume:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"metadata": meta, "spec": {"storageClassName": "local", "volumeName": volume,
                                       "accessModes": ["ReadWriteOnce"]},
            "status": {"phase": "Bound" if volume else "Pending"}}


def volume(name: str, claim_name: str = "", version: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": "local", "capacity": {"storage": "1Gi"}}
    if claim_name:
        spec["claimRef"] = {"namespace": "ns", "name": claim_name, "uid": f"uid-{claim_name}"}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": version},
            "spec": spec, "status": {"phase": "Bound" if claim_name else "Available"}}


POD = {"metadata": {"name": "p", "namespace": "ns"},
       "spec": {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "mine"}}]}}


def changes(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> set[tuple[str, str]]:
    slimmer = verdict.Slimmer()
    return storage.changed(storage.fingerprint(slimmer, before),
                           storage.fingerprint(slimmer, after), POD, after)


def test_the_pods_own_claim_and_the_volume_bound_to_it_may_change() -> None:
    before = {"pvc": [claim("mine"), claim("other")], "pv": [volume("pv-0"), volume("pv-1")]}
    after = {"pvc": [claim("mine", "pv-0", "2"), claim("other")],
             "pv": [volume("pv-0", "mine", "2"), volume("pv-1")]}
    assert changes(before, after) == set()
    assert storage.unbound(before, POD) == ["mine"]
    assert storage.unbound(after, POD) == []


def test_another_claim_or_volume_changing_is_named() -> None:
    before = {"pvc": [claim("mine"), claim("other")], "pv": [volume("pv-0"), volume("pv-1")]}
    after = {"pvc": [claim("mine"), claim("other", "pv-1", "2")],
             "pv": [volume("pv-0"), volume("pv-1", "other", "2")]}
    assert changes(before, after) == {("pvc", "ns/other"), ("pv", "pv-1")}


def test_a_new_version_that_changes_nothing_gangsched_reads_is_no_change() -> None:
    before = {"pvc": [claim("other")], "pv": [volume("pv-1")]}
    after = {"pvc": [claim("other", version="7")], "pv": [volume("pv-1", version="9")]}
    assert changes(before, after) == set()
