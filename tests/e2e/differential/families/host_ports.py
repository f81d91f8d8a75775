"""Host ports (NodePorts): app containers and sidecars asking for a few host ports, TCP or UDP,
on every address or one host IP, so pods collide on some nodes."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest, main_container

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
            if rng.random() < 0.3:
                entry["protocol"] = "UDP"
            host_ip = rng.choice(HOST_IPS)
            if host_ip:
                entry["hostIP"] = host_ip
            ports.append(entry)
        main_container(pod)["ports"] = ports
