"""The differential test of gangsched's filters against the real kube-scheduler binary.

`generator` makes a seeded cluster and pods from the constraint `families`; `runner` offers
each pod to gangsched (`verdict`, its own code path on the listed objects) and to
kube-scheduler (`oracle`, on the real control plane) and `compare`s, with `messages` parsing
FailedScheduling messages into reason → node count maps. See tests/cluster/README.md.
"""
