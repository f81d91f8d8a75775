"""The log loses nothing across watcher restarts and expired watches (watcher recovery).

`gangsched watcher` and `gangsched planner` run as their own processes on a NATS the test
starts, against a dedicated control plane whose API server serves watches from etcd (no watch
cache, so no bookmarks move a watcher's resourceVersion) and compacts etcd every 5 s, so an old
resourceVersion really expires. After each scenario the planner's projection (its committed
state: latest snapshot plus catch-up) equals the cluster as `kubectl get` shows it: every pod's
uid, node and phase, every node's uid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nats
import pytest
import yaml

from services.contracts import subjects
from services.kube import listwatch
from services.planner import catchup
from services.planner.core.config import PlannerConfig
from services.store import engines
from services.store.planner_store import PlannerStore
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, split
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

SNAPSHOT_INTERVAL = ("GANGSCHED_SNAPSHOT_INTERVAL_SECONDS", "3")
"""Snapshots now and then: the planner's projection is a snapshot plus a real catch-up."""

Projection = tuple[dict[str, tuple[str, str, str | None, str]], dict[str, str]]
"""Pods by uid: (namespace, name, node name, phase); nodes by name: uid."""


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A control plane whose old resourceVersions expire within seconds (module docstring)."""
    with ControlPlane(nodes=1, cpu="16", memory="32Gi", pods=110, extra_args=[
        "--apiserver-arg=--watch-cache=false",
        "--apiserver-arg=--etcd-compaction-interval=5s",
    ]) as cp:
        yield cp


@pytest.fixture
def namespace(plane: ControlPlane) -> str:
    name = f"r-{uuid.uuid4().hex[:8]}"
    plane.kubectl("create", "namespace", name)
    return name


@contextlib.contextmanager
def services(kubeconfig: Path, data_dir: Path) -> Iterator[split.Services]:
    """NATS plus the processes the test starts; all stopped (and their logs printed) after.

    The planners write a snapshot every few seconds (set through the environment, so watcher
    and planner start together).
    """
    running = split.Services(kubeconfig, data_dir)
    try:
        yield running
    finally:
        codes = running.close()
        print(running.logs(80))
    assert all(code in (0, -signal.SIGKILL) for code in codes.values()), codes


# --- the cluster and the planner's view of it ------------------------------------------------

def pod(name: str, namespace: str, node: str | None = None) -> dict[str, Any]:
    """A bare pod: bound to `node` (KWOK runs it), or pending for gangsched."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "fake", "resources": {
        "requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    if node is None:
        spec["schedulerName"] = "gangsched"
    else:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def node(name: str) -> dict[str, Any]:
    """A KWOK node (Ready at once)."""
    capacity = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"type": "kwok"},
        "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "status": {"allocatable": capacity, "capacity": capacity}}


def create(plane: ControlPlane, *objects: dict[str, Any]) -> None:
    plane.kubectl("create", "-f", "-", input=yaml.safe_dump_all(objects))


def delete(plane: ControlPlane, kind: str, *names: str, namespace: str | None = None) -> None:
    where = ["-n", namespace] if namespace else []
    plane.kubectl("delete", kind, *names, *where, "--grace-period=0", "--force", "--wait=true")


def truth(plane: ControlPlane) -> Projection:
    """What `kubectl get` shows: every pod (all namespaces) and every node."""
    pods = kube.get_json(plane, "pods", "--all-namespaces")["items"]
    nodes = kube.get_json(plane, "nodes")["items"]
    return (
        {p["metadata"]["uid"]: (p["metadata"]["namespace"], p["metadata"]["name"],
                                p["spec"].get("nodeName"), p.get("status", {}).get("phase")
                                or "Pending") for p in pods},
        {n["metadata"]["name"]: n["metadata"]["uid"] for n in nodes},
    )


def planner_view(planner: split.ServiceProcess,
                 config: PlannerConfig | None = None) -> Projection:
    """The planner's committed state (as a restart would restore it, with the planner's
    `config`: another one re-derives other decisions and the catch-up diverges), projected."""
    db_url = json.loads((planner.data_dir / "run.json").read_text())["db"]

    async def read() -> Projection:
        engine = engines.create_engine(db_url)
        try:
            restored = await catchup.restore(PlannerStore(engine), config or PlannerConfig(),
                                             split.PREFIX)
        finally:
            await engine.dispose()
        state = restored.state
        return ({uid: (p.namespace, p.name, p.node_name, p.phase)
                 for uid, p in state.pods.items()},
                {name: n.uid for name, n in state.nodes.items()})

    return asyncio.run(read())


def converged(plane: ControlPlane, planner: split.ServiceProcess,
              config: PlannerConfig | None = None) -> None:
    """Wait until the planner's projection equals the cluster's truth."""

    def same() -> bool:
        want, have = truth(plane), planner_view(planner, config)
        assert have == want, difference(want, have)
        return True

    eventually(same, timeout=45, interval=1.0, what="planner projection = cluster truth")


def difference(want: Projection, have: Projection) -> str:
    (want_pods, want_nodes), (have_pods, have_nodes) = want, have
    missing = {u: p for u, p in want_pods.items() if have_pods.get(u) != p}
    extra = {u: p for u, p in have_pods.items() if u not in want_pods}
    return f"pods differ {missing} / extra {extra}; nodes {want_nodes} vs {have_nodes}"


def event_ids(nats_url: str) -> list[tuple[str, dict[str, Any]]]:
    """`(Nats-Msg-Id, payload)` of every message stored in EVENTS."""

    async def read() -> list[tuple[str, dict[str, Any]]]:
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream()
            stream = subjects.stream_name(split.PREFIX, "EVENTS")
            info = await js.stream_info(stream)
            found = []
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                message = await js.get_msg(stream, seq)
                found.append(((message.headers or {}).get("Nats-Msg-Id", ""),
                              json.loads(message.data or b"{}")))
            return found
        finally:
            await nc.close()

    return asyncio.run(read())


# --- a TCP proxy the test can cut -------------------------------------------------------------

class Proxy:
    """Forwards loopback TCP connections to `target`; `cut()` closes every one of them (the
    watcher's watches end while it is stopped and cannot see it); `freeze()` stops passing
    bytes either way, connections kept open, until `thaw()` (an API server that hangs)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.flowing = threading.Event()
        self.flowing.set()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=_pump, args=(source, sink, self.flowing),
                                          daemon=True)
                self.threads.append(thread)
                thread.start()

    def freeze(self) -> None:
        self.flowing.clear()

    def thaw(self) -> None:
        self.flowing.set()

    def cut(self) -> None:
        with self.lock:
            cut, self.sockets = self.sockets, []
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.listener.close()
        self.thaw()
        self.cut()
        for thread in self.threads:
            thread.join(5)

    def kubeconfig(self, original: Path, path: Path) -> Path:
        """A copy of `original` whose server is this proxy."""
        config = yaml.safe_load(original.read_text())
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        path.write_text(yaml.safe_dump(config))
        return path


def proxied(plane: ControlPlane, tmp_path: Path) -> tuple[Proxy, Path]:
    """A `Proxy` to `plane`'s API server, and a kubeconfig through it (close the proxy)."""
    server = urlsplit(plane.server)
    proxy = Proxy((server.hostname or "127.0.0.1", server.port or 443))
    return proxy, proxy.kubeconfig(plane.kubeconfig, tmp_path / "proxied-kubeconfig")


def _pump(source: socket.socket, sink: socket.socket, flowing: threading.Event) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            flowing.wait()  # frozen: held here, sent once thawed
            sink.sendall(data)
    for sock in (source, sink):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def expired(plane: ControlPlane, resource_version: str) -> bool:
    """Whether a pod watch from `resource_version` is refused with 410 Gone (compacted)."""
    out = plane.kubectl("get", "--raw", "/api/v1/pods?watch=1&timeoutSeconds=1"
                        f"&resourceVersion={resource_version}")
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    return any(e.get("type") == "ERROR" and e["object"].get("code") == 410 for e in events)


# --- scenarios --------------------------------------------------------------------------------

def test_a_watcher_restarted_while_pods_and_nodes_change_loses_nothing_and_stores_no_duplicate(
    plane: ControlPlane, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(*SNAPSHOT_INTERVAL)
    with services(plane.kubeconfig, tmp_path / "services") as running:
        first, planner = running.start("watcher", "planner")
        create(plane, pod("p0", namespace, "kwok-node-0"), pod("p1", namespace, "kwok-node-0"),
               pod("p2", namespace), pod("p3", namespace))
        converged(plane, planner)

        (second,) = running.start("watcher")  # both watchers publish the same changes
        create(plane, pod("p4", namespace), node("extra-0"))
        delete(plane, "pod", "p0", namespace=namespace)
        first.signal(signal.SIGKILL)
        plane.kubectl("label", "pod", "p2", "-n", namespace, "changed=yes")
        create(plane, pod("p5", namespace, "extra-0"), node("extra-1"))
        delete(plane, "pod", "p1", namespace=namespace)
        assert second.stop() == 0

        # No watcher at all: the next one learns of these from its list and the log.
        delete(plane, "pod", "p3", namespace=namespace)
        delete(plane, "node", "extra-1")
        create(plane, pod("p6", namespace, "extra-0"))
        running.start("watcher")
        converged(plane, planner)

        stored = event_ids(running.nats.url)
    ids = Counter(msg_id for msg_id, _ in stored)
    assert [msg_id for msg_id, count in ids.items() if count > 1] == []
    changes = Counter((e["type"], e.get("uid"), e.get("resource_version")) for _, e in stored
                      if e["type"] in ("PodObserved", "PodDeleted", "NodeObserved"))
    assert [change for change, count in changes.items() if count > 1] == []


def test_a_watch_expired_while_pods_were_deleted_relists_and_the_planner_sees_the_deletes(
    plane: ControlPlane, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(*SNAPSHOT_INTERVAL)
    proxy, kubeconfig = proxied(plane, tmp_path)
    try:
        with services(kubeconfig, tmp_path / "services") as running:
            watcher, planner = running.start("watcher", "planner")
            create(plane, *[pod(f"q{i}", namespace, "kwok-node-0") for i in range(3)],
                   pod("q3", namespace))
            converged(plane, planner)
            seen_rv = json.loads(plane.kubectl("get", "--raw", "/api/v1/pods?limit=1"))[
                "metadata"]["resourceVersion"]

            watcher.signal(signal.SIGSTOP)
            proxy.cut()  # its watches end unseen; the deletes below reach no open watch
            delete(plane, "pod", "q0", "q3", namespace=namespace)
            create(plane, pod("q4", namespace))
            eventually(lambda: expired(plane, seen_rv), timeout=40, interval=1.0,
                       what=f"resourceVersion {seen_rv} compacted")
            watcher.signal(signal.SIGCONT)
            converged(plane, planner)
            assert "pod watch expired" in watcher.log_text()
    finally:
        proxy.close()


def test_a_frozen_api_server_makes_the_watcher_unready_and_it_resumes_when_it_answers(
    plane: ControlPlane, namespace: str, tmp_path: Path,
) -> None:
    proxy, kubeconfig = proxied(plane, tmp_path)
    try:
        with services(kubeconfig, tmp_path / "services") as running:
            watcher, planner = running.start("watcher", "planner")
            create(plane, pod("f0", namespace))
            converged(plane, planner)
            proxy.freeze()  # the watcher's connections stay open and bring nothing
            frozen_at = time.monotonic()
            eventually(lambda: "watcher not ready" in watcher.log_text(),
                       timeout=listwatch.SILENCE_LIMIT_SECONDS + 60, interval=0.5,
                       what="the watcher unready while the API server hangs")
            took = time.monotonic() - frozen_at
            create(plane, pod("f1", namespace))
            proxy.thaw()
            eventually(lambda: "watcher ready again" in watcher.log_text(), timeout=60,
                       interval=0.5, what="the watcher ready once the API server answers")
            converged(plane, planner)  # f1, created while it hung, is seen
    finally:
        proxy.close()
    # silent since the last bookmark (at most a minute before) for the limit, then the grace
    assert took <= listwatch.SILENCE_LIMIT_SECONDS + listwatch.UNREADY_AFTER_SECONDS + 10
