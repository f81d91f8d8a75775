"""`gangsched simulate` on the images ImageLocality reads: a Node's `status.images` and a pod's
image volumes (services/watcher/slim.py `pod_images`), of their types
(services/planner/simulate/shapes.py) and values (services/planner/simulate/volume_sources.py)
as the API server takes them.

A Node's `status.images[].sizeBytes` is an int64 in the API (`ContainerImage.SizeBytes`); real
images are often larger than 2 GiB (CUDA / PyTorch images run 5-15 GB), so such a size is taken
and read. A Pod's image volume needs a `reference` (`validateImageVolumeSource`, of a Pod only:
`opts.ResourceIsPod`): a workload's template is taken without one, and the pods its controller
makes of it are refused, as the API server refuses them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.planner.simulate import shapes
from tests.unit.test_simulate_malformed import refused, simulate

GB5 = 5 * 1024**3
NODE = ('{{"apiVersion": "v1", "kind": "Node", "metadata": {{"name": "{name}"}}, "status": '
        '{{"allocatable": {{"cpu": "4", "memory": "16Gi", "pods": "110"}}{images}}}}}\n---\n')
POD = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": '
       '{"schedulerName": "gangsched", "containers": [{"name": "c", "image": "ml/torch:2", '
       '"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}\n')


def test_the_shape_check_takes_an_image_larger_than_2_gib() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"images": [{"names": ["ml/torch:2"], "sizeBytes": GB5}]}}
    assert shapes.problem(node) is None


@pytest.mark.parametrize(("size", "why"), [
    (2**63, "must be a 64-bit integer, got 9223372036854775808"),
    ('"5Gi"', "must be a 64-bit integer, got '5Gi'"),
])
def test_a_size_no_int64_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    size: object, why: str) -> None:
    text = NODE.format(name="a", images=f', "images": [{{"names": ["x"], "sizeBytes": {size}}}]')
    assert refused(tmp_path, text, capsys) == (
        f" document 1 (Node a): status.images[0].sizeBytes: {why}")


def test_simulate_places_the_pod_on_the_node_holding_its_5_gb_image(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (NODE.format(name="a", images="")
            + NODE.format(name="b", images=f', "images": [{{"names": ["ml/torch:2"], '
                                           f'"sizeBytes": {GB5}}}]')
            + POD)
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    assert json.loads(out)["pods"]["default/p"]["node"] == "b"


IMAGE_VOLUME_POD = (
    '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": '
    '{"schedulerName": "gangsched", "containers": [{"name": "c", "image": "app:v1", '
    '"resources": {"requests": {"cpu": "1"}}}], "volumes": [{"name": "m", "image": %s}]}}\n')
IMAGE_VOLUME_REPLICA_SET = (
    '{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"}, "spec": '
    '{"replicas": 2, "selector": {"matchLabels": {"app": "r"}}, "template": {"metadata": '
    '{"labels": {"app": "r"}}, "spec": {"schedulerName": "gangsched", "containers": '
    '[{"name": "c", "image": "app:v1", "resources": {"requests": {"cpu": "1"}}}], '
    '"volumes": [{"name": "m", "image": %s}]}}}}\n')
NO_REFERENCE = ['{}', '{"reference": ""}', '{"reference": null}', '{"pullPolicy": "Always"}']


@pytest.mark.parametrize("source", NO_REFERENCE)
def test_a_pods_image_volume_without_a_reference_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str) -> None:
    """`validateImageVolumeSource`: `reference` is required of a Pod's image volume
    (`opts.ResourceIsPod && len(Reference) == 0`: `field.Required(fldPath.Child("reference"),
    "")`); ImageLocality reads that reference."""
    text = NODE.format(name="a", images="") + IMAGE_VOLUME_POD % source
    assert refused(tmp_path, text, capsys) == (
        " document 2 (Pod default/p): spec.volumes[0].image.reference: Required value")


@pytest.mark.parametrize("source", NO_REFERENCE)
def test_a_template_without_a_reference_makes_pods_the_api_server_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str) -> None:
    """Only the pod strategy sets `ResourceIsPod`: the ReplicaSet is taken (its template is
    validated without it), and its first pod is refused, named."""
    line = refused(tmp_path, NODE.format(name="a", images="")
                   + IMAGE_VOLUME_REPLICA_SET % source, capsys)
    assert line.startswith(" document 2 (Pod default/r-"), line
    assert line.endswith("): spec.volumes[0].image.reference: Required value"), line


def test_an_image_volume_with_a_reference_is_taken_and_scored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (NODE.format(name="a", images="")
            + NODE.format(name="b", images=f', "images": [{{"names": ["ml/data:1"], '
                                           f'"sizeBytes": {GB5}}}]')
            + IMAGE_VOLUME_REPLICA_SET % '{"reference": "ml/data:1"}')
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    nodes = [pod["node"] for pod in json.loads(out)["pods"].values()]
    assert len(nodes) == 2 and "b" in nodes  # the first to the node holding its image
