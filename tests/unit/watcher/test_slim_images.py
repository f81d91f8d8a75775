"""What ImageLocality reads: a node's `status.images`, a pod's images named as it matches them."""

from __future__ import annotations

from typing import Any

from services.contracts.events import NodeImage
from services.watcher import slim


def test_a_name_without_a_tag_gets_latest_and_a_digest_or_tag_is_kept() -> None:
    assert slim.image_name("registry.example/ml/base") == "registry.example/ml/base:latest"
    assert slim.image_name("localhost:5000/base") == "localhost:5000/base:latest"
    assert slim.image_name("base:v1") == "base:v1"
    assert slim.image_name("base@sha256:abc") == "base@sha256:abc"
    assert slim.image_name("") == ":latest"


def test_a_pods_images_are_its_init_then_app_containers_and_its_image_volumes() -> None:
    spec: dict[str, Any] = {
        "initContainers": [{"name": "i", "image": "init"}],
        "containers": [{"name": "a", "image": "app:v1"}, {"name": "b", "image": "app:v1"},
                       {"name": "c"}],
        "volumes": [{"name": "v", "image": {"reference": "models/llama"}},
                    {"name": "e", "emptyDir": {}}]}
    event = slim.pod_event({"metadata": {"name": "p", "namespace": "ml", "uid": "u"},
                            "spec": spec}, 1)
    assert event.images == ("init:latest", "app:v1", "app:v1", ":latest")
    assert event.image_volumes == ("models/llama:latest",)


def test_a_nodes_images_keep_their_names_and_sizes() -> None:
    status = {"images": [{"names": ["a:v1", "a@sha256:1"], "sizeBytes": 1000},
                         {"names": ["b:v1"], "sizeBytes": "big"}, {"names": [], "sizeBytes": 5},
                         {"names": ["c:v1"], "sizeBytes": 2**70}]}
    node = slim.node_event({"metadata": {"name": "n", "uid": "u"}, "status": status}, 1)
    assert node.images == (NodeImage(("a:v1", "a@sha256:1"), 1000), NodeImage(("b:v1",), 0),
                           NodeImage(("c:v1",), slim.IMAGE_SIZE_LIMIT))
