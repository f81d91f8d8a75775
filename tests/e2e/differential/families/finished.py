"""Finished pods: bound by name like `node_name`'s, then marked Succeeded by the run. Neither
scheduler may count them any more (kube-scheduler's pod informer drops terminal pods): not
their requests, host ports, or inter-pod anti-affinity."""

from __future__ import annotations

from tests.e2e.differential.families.node_name import Prebound


class Finished(Prebound):
    name = "finished"
    finishes = True
