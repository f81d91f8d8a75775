"""Which planner plans: recorded with every round, so an audit of a log recorded by another
planner says so instead of calling the difference a determinism bug.

Layer: planner core (pure constants).
"""

from __future__ import annotations

from services import __version__

CORE_REVISION = 6
"""Bump whenever the same log and config would give different decisions (placement, reasons,
time, backoff, status, message fields): replay verifies rounds of another revision only as
"they differ". 1: the first revision recorded (2026-11-30). 2: a gang in backoff whose pending
members changed is looked at again and told the reason found now. 3: a partly bound gang
(members bound below minMember, e.g. bare pods a rollback kept) queues first and reserves the
capacity it still needs every round, so it completes before any other gang (issue 20). 4: a
mixed gang that one-by-one placement leaves short is placed by a whole-gang search; host ports
(NodePorts) and matchFields are judged, no longer unsupported (issue 13). 5: required inter-pod
(anti-)affinity is judged (InterPodAffinity), members of a gang counting for each other.
6: reasons as kube-scheduler v1.36 gives them (found by the differential test): an untolerated
taint is `node(s) had untolerated taint(s)`, one count for all taints (was `{key: value}` each);
`<count> <reason>` parts sorted as strings (were sorted by reason); nodes outside the names
`matchFields` pin a pod to are `node(s) didn't satisfy plugin(s) [NodeAffinity]` before any
other filter, and names that conflict read `pod affinity terms conflict` without a count."""

PLANNER = f"gangsched {__version__} core {CORE_REVISION}"
"""This planner, as `rounds.planner` records it (at most 64 characters)."""
