"""The differential test's seeded workload: the same seed gives the same cluster and pods, and
each family draws from its own random stream."""

from __future__ import annotations

from collections import Counter

from services.fit import disks
from services.planner.simulate import node_features
from services.watcher import slim
from tests.e2e.differential import generator
from tests.e2e.differential.families import HOSTNAME, RACK, ZONE, Manifest, all_families
from tests.e2e.differential.families.declared_features import RESTART_ALL


def test_one_seed_gives_one_workload_and_another_seed_another() -> None:
    plan = generator.plan_cluster(7)
    assert plan == generator.plan_cluster(7)
    assert list(generator.generate_pods(7, plan, 50)) == list(
        generator.generate_pods(7, generator.plan_cluster(7), 50))
    assert list(generator.generate_pods(8, plan, 50)) != list(generator.generate_pods(7, plan, 50))


def test_nodes_spread_over_three_zones_and_six_racks_with_their_own_hostnames() -> None:
    plan = generator.plan_cluster(7)
    labels = [node["metadata"]["labels"] for node in plan.nodes]
    assert len(plan.nodes) == 24
    assert Counter(label[ZONE] for label in labels) == {"zone-a": 8, "zone-b": 8, "zone-c": 8}
    assert len({label[RACK] for label in labels}) == 6
    assert [label[HOSTNAME] for label in labels] == plan.names()


def test_a_family_left_out_leaves_the_others_choices_alone() -> None:
    """Each family's stream is seeded by (seed, family, item): without host ports, every other
    part of every pod is what it was."""
    families = all_families()
    without = [family for family in families if family.name != "host-ports"]
    plan = generator.plan_cluster(7, families=families)
    full = list(generator.generate_pods(7, plan, 80, families))
    reduced = list(generator.generate_pods(7, plan, 80, without))

    def portless(pod: Manifest) -> Manifest:
        spec = dict(pod["spec"])
        spec["containers"] = [{k: v for k, v in c.items() if k != "ports"}
                              for c in spec["containers"]]
        inits = [c for c in spec.get("initContainers", []) if not c["name"].startswith("port-")]
        spec.pop("initContainers", None)
        if inits:
            spec["initContainers"] = inits
        return {**pod, "spec": spec}

    assert [portless(pod) for pod in full] == reduced
    assert any("ports" in str(pod["spec"]) for pod in full)


def test_every_family_shapes_some_of_400_pods() -> None:
    plan = generator.plan_cluster(20261201)
    pods = [str(pod) for pod in generator.generate_pods(20261201, plan, 400)]
    for marker in ("nodeSelector", "nodeAffinity", "matchFields", "'Gt'", "tolerations",
                   "hostPort", "podAffinity", "podAntiAffinity", "namespaceSelector",
                   "matchLabelKeys", "initContainers", "runtimeClassName", "nvidia.com/gpu",
                   "'nodeName'", "'resources': {'requests'", "hugepages-2Mi",
                   "diff.gangsched.io/finished", "'restartPolicy': 'Always'",
                   "'preference'"):
        assert sum(marker in pod for pod in pods) >= 3, marker


def test_spread_constraints_are_ones_the_api_server_accepts() -> None:
    """One constraint per (topologyKey, whenUnsatisfiable); minDomains only with
    DoNotSchedule; matchLabelKeys only with a selector; both actions and minDomains occur."""
    plan = generator.plan_cluster(20261201)
    seen: Counter[str] = Counter()
    for pod in generator.generate_pods(20261201, plan, 400):
        constraints = pod["spec"].get("topologySpreadConstraints", [])
        pairs = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in constraints]
        assert len(pairs) == len(set(pairs))
        for constraint in constraints:
            seen[constraint["whenUnsatisfiable"]] += 1
            assert 1 <= constraint["maxSkew"] <= 3
            if "minDomains" in constraint:
                seen["minDomains"] += 1
                assert constraint["whenUnsatisfiable"] == "DoNotSchedule"
            if "matchLabelKeys" in constraint:
                assert constraint.get("labelSelector")
    assert min(seen["DoNotSchedule"], seen["ScheduleAnyway"], seen["minDomains"]) >= 10


def test_pods_mount_planned_claims_of_their_namespace_or_missing_ones() -> None:
    plan = generator.plan_cluster(20261201)
    claims = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in plan.objects
              if o["kind"] == "PersistentVolumeClaim"}
    volumes = {o["metadata"]["name"]: o for o in plan.objects if o["kind"] == "PersistentVolume"}
    used: Counter[str] = Counter()
    for pod in generator.generate_pods(20261201, plan, 400):
        for mount in pod["spec"].get("volumes", []):
            if "persistentVolumeClaim" not in mount:  # an inline disk (the disks family)
                assert mount["name"].startswith("disk-")
                continue
            name = mount["persistentVolumeClaim"]["claimName"]
            used[name.split("-")[0]] += 1
            assert (pod["metadata"]["namespace"], name) in claims or name.startswith("missing-")
    assert min(used[kind] for kind in ("bound", "local", "zoned", "nowhere", "missing")) >= 3
    for claim in plan.objects:
        if claim["kind"] == "PersistentVolumeClaim" and "volumeName" in claim["spec"]:
            ref = volumes[claim["spec"]["volumeName"]]["spec"]["claimRef"]
            assert ref == {"namespace": claim["metadata"]["namespace"],
                           "name": claim["metadata"]["name"]}
    for pv in volumes.values():
        modes = pv["spec"]["accessModes"]
        assert "ReadWriteOncePod" not in modes or modes == ["ReadWriteOncePod"]


def test_inline_disks_repeat_so_pods_meet_on_nodes_and_some_are_read_only() -> None:
    plan = generator.plan_cluster(20261201)
    seen: Counter[str] = Counter()
    read_only = 0
    for pod in generator.generate_pods(20261201, plan, 400):
        for mount in pod["spec"].get("volumes", []):
            kinds = [kind for kind in disks.KINDS if kind in mount]
            if kinds:
                [kind] = kinds
                seen[kind] += 1
                read_only += mount[kind].get("readOnly", False) is True
    assert min(seen[kind] for kind in disks.KINDS) >= 5
    assert 0 < read_only < sum(seen.values())


def test_some_nodes_declare_features_and_some_pods_require_them_as_the_api_server_takes() -> None:
    """The declared-features family: lists the API server accepts (sorted names of its form),
    restart rules it accepts (`simulate.node_features`), and pods requiring the feature that
    some nodes declare and others do not."""
    plan = generator.plan_cluster(20261201)
    declaring = 0
    for node in plan.nodes:
        assert node_features.node_problem(node["status"]) is None
        declaring += RESTART_ALL in node["status"].get("declaredFeatures", [])
    assert 4 <= declaring <= len(plan.nodes) - 4
    required: Counter[tuple[str, ...]] = Counter()
    for pod in generator.generate_pods(20261201, plan, 400):
        assert node_features.pod_problem(pod["spec"]) is None
        required[slim.pod_event(pod, 0).required_features] += 1
    assert required[(RESTART_ALL,)] >= 20 and set(required) == {(), (RESTART_ALL,)}
    assert sum("'action': 'Restart'" in str(pod) for pod in generator.generate_pods(
        20261201, plan, 400)) >= 10
