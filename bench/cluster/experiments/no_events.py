"""What if gangsched wrote no Kubernetes events at all (no Scheduled, no FailedScheduling)?

kube-scheduler writes one Scheduled event per bound pod, and so does gangsched; the trivial
binder writes none. On the benchmark's saturated two cores every request the API server serves
is taken from the binds, so this measures how much of the distance to the trivial binder is the
events alone: `KubeApi.create_event` returns at once without a request. Not a fix to ship (the
issue asks for events as kube-scheduler emits them).
"""

from services.kube import api


async def _no_event(self, about, *, event_type, reason, message, action, now):  # type: ignore[no-untyped-def]
    return None


api.KubeApi.create_event = _no_event  # type: ignore[method-assign]
