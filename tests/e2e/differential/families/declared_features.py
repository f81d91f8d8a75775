"""Node declared features (NodeDeclaredFeatures, beta and on by default in 1.36): some nodes
declare `RestartAllContainersOnContainerExits` in `status.declaredFeatures` (with or without
other features), some declare only others; some pods restart all their containers when one
exits with a given code (a `restartPolicyRules` rule of action RestartAllContainers, on the
app container or on a plain init container), so only the declaring nodes take them; a few have
a rule that restarts only their container, which requires nothing."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest, main_container
from tests.e2e.differential.families.requests import IMAGE

RESTART_ALL = "RestartAllContainersOnContainerExits"
OTHERS = ("ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers",
          "Vendor/fastNet")
"""Features no pod of the run requires (kube's own, and one kube does not know)."""


def rule(action: str, rng: random.Random) -> Manifest:
    """A restart rule of `action` on a few exit codes (In or NotIn)."""
    return {"action": action, "exitCodes": {"operator": rng.choice(["In", "NotIn"]),
                                            "values": sorted(rng.sample(range(1, 64), 2))}}


class DeclaredFeatures(Base):
    name = "declared-features"

    def shape_node(self, rng: random.Random, node: Manifest) -> None:
        roll = rng.random()
        if roll >= 0.65:
            return
        features = set(rng.sample(OTHERS, rng.choice([0, 1, 2])))
        if roll < 0.5:
            features.add(RESTART_ALL)
        if features:  # sorted, as the API server requires
            node["status"]["declaredFeatures"] = sorted(features)

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        roll = rng.random()
        if roll >= 0.14:
            return
        if roll < 0.08:
            main_container(pod).update(restartPolicy="Never",
                                       restartPolicyRules=[rule("RestartAllContainers", rng)])
        elif roll < 0.11:
            pod["spec"].setdefault("initContainers", []).append({
                "name": "restart-init", "image": IMAGE, "restartPolicy": "Never",
                "restartPolicyRules": [rule("Restart", rng), rule("RestartAllContainers", rng)]})
        else:
            main_container(pod).update(restartPolicy="OnFailure",
                                       restartPolicyRules=[rule("Restart", rng)])
