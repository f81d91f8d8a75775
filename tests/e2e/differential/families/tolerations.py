"""Taints and cordons (TaintToleration, NodeUnschedulable): NoSchedule, NoExecute and
PreferNoSchedule taints on some nodes, a few nodes cordoned; pods tolerating some of them
(Equal or Exists, with or without effect, all taints, or the cordon's taint)."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
TAINTS = (("diff.gangsched.io/dedicated", "gpu"), ("diff.gangsched.io/dedicated", "db"),
          ("diff.gangsched.io/spot", "true"), ("diff.gangsched.io/maintenance", ""))
EFFECTS = ("NoSchedule", "NoSchedule", "NoExecute", "PreferNoSchedule")


class Tolerations(Base):
    name = "tolerations"

    def shape_node(self, rng: random.Random, node: Manifest) -> None:
        if rng.random() < 0.35:
            taints = {}  # one key may come with several effects, not twice with one
            for _ in range(rng.choice([1, 1, 2, 3])):
                key, value = rng.choice(TAINTS)
                effect = rng.choice(EFFECTS)
                taints[key, effect] = {"key": key, "value": value, "effect": effect}
            node["spec"]["taints"] = [{k: v for k, v in taint.items() if v}
                                      for taint in taints.values()]
        if rng.random() < 0.1:
            node["spec"]["unschedulable"] = True

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        roll = rng.random()
        if roll < 0.03:
            pod["spec"]["tolerations"] = [{"operator": "Exists"}]
            return
        if roll < 0.08:
            pod["spec"]["tolerations"] = [{"key": UNSCHEDULABLE_TAINT, "operator": "Exists",
                                           "effect": "NoSchedule"}]
            return
        if roll < 0.1:
            pod["spec"]["tolerations"] = [{"operator": "Exists", "effect": "NoSchedule"}]
            return
        if roll > 0.45:
            return
        tolerations = []
        for _ in range(rng.choice([1, 1, 2])):
            key, value = rng.choice(TAINTS)
            toleration = {"key": key}
            if rng.random() < 0.4:
                toleration["operator"] = "Exists"
            else:
                toleration["value"] = value
            if rng.random() < 0.6:
                toleration["effect"] = rng.choice(EFFECTS)
            tolerations.append(toleration)
        pod["spec"]["tolerations"] = tolerations
