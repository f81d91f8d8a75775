"""Host ports (NodePorts): app, sidecar or plain init containers asking for a few host ports,
TCP or UDP, on every address or one host IP, so pods collide on some nodes."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest, main_container
from tests.e2e.differential.families.requests import IMAGE

PORTS = (8080, 8081, 9090)
HOST_IPS = ("", "", "127.0.0.1", "10.0.0.7")


class HostPorts(Base):
    name = "host-ports"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.15:
            return
        ports = []
        for port in rng.sample(PORTS, rng.choice([1, 1, 2])):
            entry: Manifest = {"containerPort": port, "hostPort": port}
            protocol = rng.choice(["", "", "TCP", "UDP", "SCTP"])
            if protocol:
                entry["protocol"] = protocol
            host_ip = rng.choice(HOST_IPS)
            if host_ip:
                entry["hostIP"] = host_ip
            ports.append(entry)
        roll = rng.random()
        if roll < 0.2:  # a sidecar's ports are held for the pod's life (NodePorts counts them)
            _init(pod, "port-sidecar", ports, restart="Always")
        elif roll < 0.3:  # a plain init container's ports are not (NodePorts skips them)
            _init(pod, "port-init", ports)
        else:
            main_container(pod)["ports"] = ports


def _init(pod: Manifest, name: str, ports: list[Manifest], restart: str = "") -> None:
    container: Manifest = {"name": name, "image": IMAGE, "ports": ports}
    if restart:
        container["restartPolicy"] = restart
    pod["spec"].setdefault("initContainers", []).append(container)
