"""`gangsched simulate FILE... [-o table|json]`: play manifests through the production planner.

Layer: cli (on top: reads files, slims objects with the watcher's `slim`, runs the pure
simulation engine, prints). Output JSON shape (a contract): `{"pods": {"<ns>/<name>": {"node",
"group", "boundAt", "reason", "phase", "finishedAt"}}, "podGroups": {...}, "decisions": [...],
"preemptions": [...], "ignored": [...], "otherSchedulers": [...], "endedAt": seconds}`; times
are simulated seconds from the start; `otherSchedulers` lists the pods gangsched does not
schedule (their requests count when they are bound). A pod deleted by a preemption has `node`
null, phase `Deleted` and its eviction as `reason`; each Preemption is one `preemptions` entry
`{"id", "at", "preemptor", "priority", "reason", "nominated": [{"pod", "node"}], "victims":
[{"pod", "node", "group", "priority", "deletedAt"}]}`. A directory argument means its
.yaml/.yml/.json files, in name order.
Invalid input exits with status 2 and one line, `gangsched simulate: ...`, naming the file, the
document and the field.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from services.audit import preemptions
from services.cli import audit_view, exit_codes, manifest_yaml, podgroup_crd, text_files
from services.contracts.decisions import Preemption
from services.contracts.events import DisruptionBudgetObserved, Event, PodObserved
from services.planner.core import reasons
from services.planner.core.config import PlannerConfig
from services.planner.simulate import engine, manifests
from services.planner.simulate.budgets import BudgetSpec
from services.watcher import attachments, namespaces, native, slim, volumes
from services.watcher import budgets as watcher_budgets

EXIT_INVALID = exit_codes.USAGE
COMMAND = "gangsched simulate"
"""The prefix of an invalid input's one line, as of every usage error (exit status 2)."""
OUTPUTS = ("table", "json")


def load_documents(files: list[Path]) -> list[manifests.Document]:
    """Every YAML document of every file, in order.

    Raises:
        manifests.InvalidManifest: a file that cannot be read or parsed (the message says where;
            a device such as /dev/zero, or more than `MANIFEST_FILE_BYTES`, is not read),
            or files that hold no object at all (empty, or only comments and `---`): as
            `kubectl apply -f` refuses them ("no objects passed to apply"), a simulation of
            nothing is a mistake, not a result.
    """
    documents: list[manifests.Document] = []
    paths = _expand(files)
    for path in paths:
        try:
            text = text_files.read_text(path, MANIFEST_FILE_BYTES)
            with manifests.reading(str(path)):  # the last resort: `manifest_yaml` refuses
                bodies = manifest_yaml.load_all(text)
        except UnicodeDecodeError as error:
            raise manifests.InvalidManifest(
                str(path), "", f"not UTF-8 text (byte {error.start}); manifests are UTF-8"
            ) from error
        except (OSError, manifest_yaml.YAMLError) as error:
            raise manifests.InvalidManifest(str(path), "", manifest_yaml.one_line(error)) from error
        except text_files.TextFileRefused as error:  # e.g. /dev/zero, which never ends
            raise manifests.InvalidManifest(str(path), "", str(error)) from error
        documents.extend(manifests.Document(str(path), number, body)
                         for number, body in enumerate(bodies, start=1))
    if paths and all(document.body is None for document in documents):
        raise manifests.InvalidManifest(
            ", ".join(str(path) for path in paths), "",
            f"no objects in {'it' if len(paths) == 1 else 'them'} (empty, or only comments), "
            "as kubectl apply -f refuses them")
    return documents


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
MANIFEST_FILE_BYTES = 256 << 20
"""The most one manifest file (or stream) may hold: 256 MiB, about 250,000 pods' manifests."""


def _expand(files: list[Path]) -> list[Path]:
    """`files`, with each directory replaced by its manifest files (sorted by name, not
    recursive), as `kubectl apply -f DIR` reads them. A symbolic link named as a manifest
    is one, also when it leads nowhere (dangling, or a loop): reading it then says why, as
    kubectl does, rather than its objects going missing unsaid.

    Raises:
        manifests.InvalidManifest: a directory without manifest files (a simulation of nothing
            is a mistake, not a result).
    """
    expanded: list[Path] = []
    for path in files:
        if path.is_dir():
            found = sorted(child for child in path.iterdir()
                           if child.suffix in MANIFEST_SUFFIXES and _manifest_file(child))
            if not found:
                raise manifests.InvalidManifest(
                    str(path), "", "no manifest files (*.yaml, *.yml, *.json) in this "
                    "directory; its subdirectories are not read, as kubectl apply -f DIR")
            expanded.extend(found)
        else:
            expanded.append(path)
    return expanded


def _manifest_file(child: Path) -> bool:
    """Whether the directory entry `child` is read as a manifest file: a regular file, or a
    symbolic link that does not lead to a directory (a dangling or looping one included)."""
    return child.is_file() or (child.is_symlink() and not child.is_dir())


def start_ms(items: list[manifests.Item]) -> int:
    """The simulated clock's start: the earliest `creationTimestamp` given, else epoch 0."""
    stamps = [slim.time_ms(item.obj["metadata"].get("creationTimestamp"), -1) for item in items]
    given = [stamp for stamp in stamps if stamp >= 0]
    return min(given) if given else 0


STORAGE_SLIMMERS: dict[str, Callable[[dict[str, Any], int], Event]] = {
    "PersistentVolumeClaim": volumes.claim_event, "PersistentVolume": volumes.volume_event,
    "StorageClass": volumes.storage_class_event, "CSINode": attachments.csinode_event,
    "VolumeAttachment": attachments.attachment_event}
"""The watcher's readers of the kinds the volume filters read (NodeVolumeLimits: CSINodes and
VolumeAttachments)."""


def to_event(item: manifests.Item, at_ms: int) -> Event:
    """The watcher's event for one item, as a watcher reading both PodGroup APIs makes it
    (`--group-apis scheduling.x-k8s.io,scheduling.k8s.io`): a native PodGroup by its
    `gang.minCount` and `schedulingConstraints.topology`, a pod in a group by its label or
    else its `spec.schedulingGroup`.

    Raises:
        manifests.InvalidManifest: the object is malformed (e.g. an invalid quantity), or a
            PodGroup its CRD refuses (`podgroup_crd`, e.g. minMember 0 or an unknown field).
    """
    event: Event
    if item.kind == "Node":
        return slim.node_event(item.obj, at_ms)
    if item.kind == "Namespace":  # its labels: what a pod term's namespaceSelector reads
        return namespaces.namespace_event(item.obj, at_ms)
    if item.kind == manifests.BUDGET_KIND:
        return _budget_event(item, at_ms)
    if item.kind in STORAGE_SLIMMERS:
        event = STORAGE_SLIMMERS[item.kind](item.obj, at_ms)
    elif item.kind == "Pod":
        event = native.pod_event(item.obj, at_ms)
    elif item.obj.get("apiVersion") == native.API_VERSION:
        event = native.podgroup_event(item.obj, at_ms)
    else:  # Coscheduling's: what its CRD refuses first, the watcher reads more leniently
        try:
            served = podgroup_crd.admitted(item.obj)
        except podgroup_crd.Refused as refused:
            raise manifests.InvalidManifest(item.where, refused.field, refused.reason) from None
        event = slim.podgroup_event(served, at_ms)
    invalid = getattr(event, "invalid_reason", None)
    if invalid:
        raise manifests.InvalidManifest(item.where, "", invalid)
    return event


def _budget_event(item: manifests.Item, at_ms: int) -> DisruptionBudgetObserved:
    """A PodDisruptionBudget as the watcher observes it (`watcher.budgets`), before the
    disruption controller wrote its status (the simulation computes it, `budgets`).

    Raises:
        manifests.InvalidManifest: a selector `metav1.LabelSelectorAsSelector` refuses (the
            API server refuses such a budget; the watcher would read it as selecting no pod).
    """
    if not slim.label_selector(item.obj["spec"].get("selector"))[1]:
        raise manifests.InvalidManifest(item.where, "spec.selector", "not a valid label "
                                        "selector (matchExpressions operator or values)")
    return watcher_budgets.budget_event(item.obj, at_ms)


def arrivals(items: list[manifests.Item], origin_ms: int) -> list[engine.Arrival]:
    """Items as timed arrivals on the simulated clock.

    Raises:
        manifests.InvalidManifest: an item the watcher's readers refuse (`to_event`).
    """
    return [_arrival(item, origin_ms) for item in items]


def _arrival(item: manifests.Item, origin_ms: int) -> engine.Arrival:
    """One item as an arrival (`manifests.Item` times: within `manifests.MAX_SECONDS`).

    Raises:
        manifests.InvalidManifest: as `to_event`, or (`manifests.reading`, the last resort) a
            field no check foresaw that the watcher's reader cannot take.
    """
    with manifests.reading(item.where):
        at_ms = origin_ms + round(item.at_seconds * 1000)
        runtime = None if item.runtime_seconds is None else round(item.runtime_seconds * 1000)
        spec = item.obj.get("spec") or {}
        budget = (BudgetSpec(spec.get("minAvailable"), spec.get("maxUnavailable"))
                  if item.kind == manifests.BUDGET_KIND else None)
        return engine.Arrival(at_ms=at_ms, event=to_event(item, at_ms), runtime_ms=runtime,
                              budget=budget, after=item.after,
                              ready_ms=round(item.ready_seconds * 1000))


def simulate(files: list[Path], config: PlannerConfig) -> dict[str, Any]:
    """Run the simulation of `files` and return the report (module docstring shape).

    Raises:
        manifests.InvalidManifest: invalid input.
    """
    items, ignored = manifests.expand(load_documents(files))
    origin = start_ms(items)
    result = engine.run(arrivals(items, origin), config)
    return report(result, items, ignored, origin)


def _seconds(at_ms: int | None, origin_ms: int) -> int | float | None:
    if at_ms is None:
        return None
    value = (at_ms - origin_ms) / 1000
    return int(value) if value.is_integer() else value


def report(result: engine.Result, items: list[manifests.Item], ignored: list[str],
           origin_ms: int) -> dict[str, Any]:
    """The JSON-ready report of a finished simulation."""
    state = result.state
    known = {**{uid: gone.pod for uid, gone in result.deleted.items()}, **state.pods}
    pods: dict[str, Any] = {}
    for uid, outcome in sorted(result.pods.items(), key=lambda kv: _pod_name(known, kv[0])):
        pod = known[uid]
        phase, node, reason = pod.phase, outcome.node, outcome.reason
        if uid in result.deleted:
            phase, node, reason = DELETED, None, _eviction(result, uid, origin_ms)
        if node is None and reason is None:
            reason = _silent_reason(pod)
        pods[_pod_name(known, uid)] = {
            "node": node, "group": outcome.group,
            "boundAt": _seconds(outcome.bound_at_ms, origin_ms),
            "reason": None if node is not None else reason,
            "phase": phase, "finishedAt": _seconds(outcome.finished_at_ms, origin_ms)}
    groups: dict[str, Any] = {}
    for key in sorted(state.podgroups):
        podgroup, group = state.podgroups[key], state.groups.get(key)
        memo = group.last_status if group is not None else None
        groups[key] = {
            "minMember": podgroup.min_member,
            "phase": memo.phase if memo else "Pending",
            "running": memo.running if memo else 0,
            "succeeded": memo.succeeded if memo else 0,
            "failed": memo.failed if memo else 0,
            "scheduleStartTime": _seconds(memo.schedule_start_ms if memo else None, origin_ms)}
    decisions = [{**msgspec.to_builtins(d), "at": _seconds(d.at_ms, origin_ms)}
                 for d in result.decisions]
    others = [f"{_pod_name(known, uid)} (schedulerName {pod.scheduler_name}: "
              + (_eviction(result, uid, origin_ms) + ")" if uid in result.deleted
                 else f"bound to {pod.node_name}, {pod.phase}: its requests not counted)"
                 if pod.node_name and pod.phase in TERMINAL_PHASES
                 else f"bound to {pod.node_name}, its requests counted)" if pod.node_name
                 else "not gangsched's, left unscheduled)")
              for uid, pod in sorted(known.items(), key=lambda kv: _pod_name(known, kv[0]))
              if uid not in result.pods]
    return {"pods": pods, "podGroups": groups, "decisions": decisions,
            "preemptions": _preemptions(result, origin_ms), "ignored": ignored,
            "otherSchedulers": others, "endedAt": _seconds(result.end_ms, origin_ms)}


TERMINAL_PHASES = ("Succeeded", "Failed")
"""Phases of a pod whose requests no node counts any more (kube-scheduler's NodeInfo skips
them)."""

DELETED = "Deleted"
"""The `phase` reported for a pod deleted during the simulation (a victim of preemption)."""


def _pod_name(pods: Mapping[str, PodObserved], uid: str) -> str:
    pod = pods[uid]
    return f"{pod.namespace}/{pod.name}"


def _preemption_of(result: engine.Result, decision_id: str) -> Preemption | None:
    return next((d for d in result.decisions
                 if isinstance(d, Preemption) and d.id == decision_id), None)


def _eviction(result: engine.Result, uid: str, origin_ms: int) -> str:
    """`preempted at 10 s by gang ns/g (priority 1000 > its 10) to make room on b; decision
    7-0; deleted at 11 s` (simulated seconds) for a pod of `result.deleted`."""
    gone = result.deleted[uid]
    deleted = f"deleted at {_seconds(gone.at_ms, origin_ms)} s"
    decision = _preemption_of(result, gone.preemption)
    victims = [] if decision is None else preemptions.victims_of(decision, uids=[uid])
    if decision is None or not victims:
        return deleted
    told = preemptions.victim_text(decision, victims,
                                   when=lambda at_ms: f"{_seconds(at_ms, origin_ms)} s")
    return f"{told}; {deleted}"


def _preemptions(result: engine.Result, origin_ms: int) -> list[dict[str, Any]]:
    """The `preemptions` of the report (module docstring shape), in decision order."""
    deleted = {uid: gone.at_ms for uid, gone in result.deleted.items()}
    return [{"id": d.id, "at": _seconds(d.at_ms, origin_ms), "preemptor": d.group,
             "priority": d.priority, "reason": d.reason,
             "nominated": [{"pod": f"{m.namespace}/{m.name}", "node": m.node}
                           for m in d.nominated],
             "victims": [{"pod": f"{v.namespace}/{v.name}", "node": v.node, "group": v.group,
                          "priority": v.priority,
                          "deletedAt": _seconds(deleted.get(v.uid), origin_ms)}
                         for v in d.victims]}
            for d in result.decisions if isinstance(d, Preemption)]


def _silent_reason(pod: PodObserved) -> str:
    """Why a pod the planner never rejected is unbound (gated, or not Pending)."""
    return reasons.SCHEDULING_GATED if pod.is_scheduling_gated else reasons.NOT_PENDING


def render_table(data: dict[str, Any], console: Console) -> None:
    """Print the report as readable tables: pods, then PodGroups, then a line per pod of
    another scheduler and per document ignored, then a summary. Names and reasons are printed
    as they are (`Text`), never read as console markup (`[/x]` in a name is no style)."""
    pods = Table(title="Pods")
    for column in ("Pod", "Group", "Node", "Bound at (s)"):
        pods.add_column(column, no_wrap=True)
    pods.add_column("Reason", overflow="fold", ratio=1)
    for name, pod in data["pods"].items():
        bound_at = "" if pod["boundAt"] is None else str(pod["boundAt"])
        pods.add_row(*map(Text, (name, pod["group"] or "", pod["node"] or "-", bound_at,
                                 pod["reason"] or "")))
    console.print(pods)
    if data["podGroups"]:
        groups = Table(title="PodGroups")
        for column in ("PodGroup", "Phase", "MinMember", "Running", "Succeeded", "Failed"):
            groups.add_column(column)
        for name, group in data["podGroups"].items():
            groups.add_row(*map(Text, (name, group["phase"], str(group["minMember"]),
                                       str(group["running"]), str(group["succeeded"]),
                                       str(group["failed"]))))
        console.print(groups)
    if data["preemptions"]:
        console.print(_preemption_table(data["preemptions"]))
    bound = sum(1 for pod in data["pods"].values() if pod["node"] is not None)
    preempted = sum(len(entry["victims"]) for entry in data["preemptions"])
    for line in data["otherSchedulers"]:
        console.print(f"pod of another scheduler: {line}", markup=False)
    for where in data["ignored"]:  # a kind simulate does not read must not vanish unnamed
        console.print(f"ignored (not a kind simulate reads): {where}", markup=False,
                      highlight=False)
    evicted = f"{preempted} preempted; " if preempted else ""
    console.print(f"{bound} of {len(data['pods'])} pods bound; {evicted}simulation ended at "
                  f"{data['endedAt']} s; {len(data['ignored'])} document(s) ignored; "
                  f"{len(data['otherSchedulers'])} pod(s) of other schedulers.")


def _preemption_table(entries: list[dict[str, Any]]) -> Table:
    """Preemptions: when, for whom (and its priority), the victims (where, their priority,
    when they went), the decision."""
    table = Table(title="Preemptions")
    for column in ("At (s)", "Preemptor", "Priority", "Decision"):
        table.add_column(column, no_wrap=True)
    table.add_column("Victims", overflow="fold", ratio=1)
    for entry in entries:
        victims = ", ".join(
            f"{v['pod']} on {v['node']} (priority {v['priority']}"
            + (f", deleted at {v['deletedAt']} s)" if v["deletedAt"] is not None else ")")
            for v in entry["victims"])
        table.add_row(*map(Text, (str(entry["at"]), entry["preemptor"], str(entry["priority"]),
                                  entry["id"], victims)))
    return table


def one_line(message: str) -> str:
    """`message` in one line: a line break or other unprintable character (from a value of the
    manifest) written as its escape (`\\n`), as a repr writes it."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in message)


def simulate_command(files: list[Path], output: str = "table",
                     config: PlannerConfig | None = None) -> int:
    """Run `gangsched simulate`; print the report to stdout; the process exit status."""
    if output not in OUTPUTS:
        print(f"{COMMAND}: --output must be one of {', '.join(OUTPUTS)}, got {output!r}",
              file=sys.stderr)
        return EXIT_INVALID
    try:
        data = simulate(files, config or PlannerConfig())
    except manifests.InvalidManifest as error:
        print(f"{COMMAND}: {one_line(str(error))}", file=sys.stderr)
        return EXIT_INVALID
    if output == "json":  # output that cannot be written: `output.guarded`, at the entry point
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    else:
        render_table(data, audit_view.console())
    sys.stdout.flush()
    return 0
