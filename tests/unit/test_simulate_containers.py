"""`gangsched simulate` refuses container names and ports the API server refuses
(services/planner/simulate/containers.py: Kubernetes 1.36's `validateContainers`,
`validateInitContainers`, `validateContainerPorts` and `checkHostPortConflicts`), in its words,
as one line and exit status 2, a Pod's and a workload template's alike (named under
`spec.template.spec`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.test_simulate_malformed import NODE, refused, simulate

POD = "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{{spec}}}\n"
REPLICA_SET = ("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: r}}\nspec: "
               "{{replicas: 1, selector: {{matchLabels: {{app: r}}}}, template: "
               "{{metadata: {{labels: {{app: r}}}}, spec: {{{spec}}}}}}}\n")
LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',"
              "  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
RANGE = "must be between 1 and 65535, inclusive"


def ported(*ports: str) -> str:
    """A pod spec of one container `c` with `ports`."""
    return f"containers: [{{name: c, ports: [{', '.join(ports)}]}}]"


CASES = [
    ("containers: [{name: c}, {name: c}]", 'containers[1].name: Duplicate value: "c"'),
    ("containers: [{name: c}], initContainers: [{name: c}]",
     'initContainers[0].name: Duplicate value: "c"'),
    ("containers: [{name: c}], initContainers: [{name: i}, {name: i}]",
     'initContainers[1].name: Duplicate value: "i"'),
    ("containers: [{name: c}, {image: pause}]", "containers[1].name: Required value"),
    ("containers: [{name: ''}]", "containers[0].name: Required value"),
    ("containers: [{name: c}], initContainers: [{name: null}]",
     "initContainers[0].name: Required value"),
    ("containers: [{name: Web}]", f'containers[0].name: Invalid value: "Web": {LABEL_RULE}'),
    ("containers: [{name: web.v1}]",
     'containers[0].name: Invalid value: "web.v1": must not contain dots'),
    (f"containers: [{{name: {'c' * 64}}}]",
     f'containers[0].name: Invalid value: "{"c" * 64}": must be no more than 63 characters'),
    (ported("{containerPort: 80, hostPort: 99999}"),
     f"containers[0].ports[0].hostPort: Invalid value: 99999: {RANGE}"),
    (ported("{containerPort: 80, hostPort: -1}"),
     f"containers[0].ports[0].hostPort: Invalid value: -1: {RANGE}"),
    (ported("{containerPort: 0}"), "containers[0].ports[0].containerPort: Required value"),
    (ported("{hostPort: 80}"), "containers[0].ports[0].containerPort: Required value"),
    (ported("null"), "containers[0].ports[0].containerPort: Required value"),
    (ported("{containerPort: 65536}"),
     f"containers[0].ports[0].containerPort: Invalid value: 65536: {RANGE}"),
    (ported("{containerPort: 80, protocol: HTTP}"),
     'containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", '
     '"TCP", "UDP"'),
    (ported("{containerPort: 80, protocol: tcp}"),
     'containers[0].ports[0].protocol: Unsupported value: "tcp": supported values: "SCTP", '
     '"TCP", "UDP"'),
    (ported("{name: http_alt, containerPort: 80}"),
     'containers[0].ports[0].name: Invalid value: "http_alt": must contain only '
     "alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
    (ported("{name: '8080', containerPort: 80}"),
     'containers[0].ports[0].name: Invalid value: "8080": must contain at least one letter '
     "(a-z)"),
    (ported("{name: a-very-long-port-name, containerPort: 80}"),
     'containers[0].ports[0].name: Invalid value: "a-very-long-port-name": must be no more '
     "than 15 characters"),
    (ported("{name: http, containerPort: 80}", "{name: http, containerPort: 81}"),
     'containers[0].ports[1].name: Duplicate value: "http"'),
    # checkHostPortConflicts: protocol (TCP by default), host IP and host port
    ("containers: [{name: a, ports: [{containerPort: 80, hostPort: 80}]}, "
     "{name: b, ports: [{containerPort: 81, hostPort: 80, protocol: TCP}]}]",
     'containers[1].ports[0].hostPort: Duplicate value: "TCP//80"'),
    (ported("{containerPort: 80, hostPort: 80, hostIP: 10.0.0.1}",
            "{containerPort: 81, hostPort: 80, hostIP: 10.0.0.1}"),
     'containers[0].ports[1].hostPort: Duplicate value: "TCP/10.0.0.1/80"'),
    # an init container's conflicts are its own, named as if it were the first
    ("containers: [{name: c}], initContainers: [{name: a}, {name: b, ports: [{containerPort: 1, "
     "hostPort: 80}, {containerPort: 2, hostPort: 80}]}]",
     'initContainers[0].ports[1].hostPort: Duplicate value: "TCP//80"'),
]


@pytest.mark.parametrize(("spec", "told"), CASES)
def test_a_pod_with_a_container_name_or_port_the_api_server_refuses_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, told: str) -> None:
    text = NODE + POD.format(spec=spec)
    assert refused(tmp_path, text, capsys) == f" document 2 (Pod default/p): spec.{told}"


@pytest.mark.parametrize(("spec", "told"), CASES)
def test_a_workload_template_with_one_is_refused_naming_the_templates_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, told: str) -> None:
    text = NODE + REPLICA_SET.format(spec=spec)
    assert refused(tmp_path, text, capsys) == (
        f" document 2 (ReplicaSet r): spec.template.spec.{told}")


@pytest.mark.parametrize("spec", [
    ported("{name: http, containerPort: 80, hostPort: 8080, protocol: UDP}",
           "{name: https, containerPort: 443}"),
    # the same host port on another protocol or another host IP; an init container's ports
    # are not an app container's (init containers run before them, one by one)
    ported("{containerPort: 80, hostPort: 80}", "{containerPort: 80, hostPort: 80, "
                                                "protocol: UDP}",
           "{containerPort: 80, hostPort: 80, hostIP: 10.0.0.2}"),
    "containers: [{name: c, ports: [{containerPort: 80, hostPort: 80}]}], "
    "initContainers: [{name: i, ports: [{containerPort: 80, hostPort: 80}]}]",
    # the API server takes any text as a hostIP
    ported("{containerPort: 80, hostPort: 80, hostIP: not-an-ip}"),
    # without hostNetwork no hostPort is defaulted: two containers may both listen on 80
    "containers: [{name: a, ports: [{containerPort: 80}]}, {name: b, ports: [{containerPort: "
    "80}]}]",
])
def test_names_and_ports_the_api_server_takes_are_taken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    code, out, err = simulate(tmp_path, NODE + POD.format(spec=spec), capsys)
    assert code == 0, err
    assert "default/p" in json.dumps(json.loads(out))


HOST_NETWORK = ("hostNetwork: true, containers: [{name: a, ports: [{containerPort: 80}]}, "
                "{name: b, ports: [{containerPort: 80}]}]")
"""Two containers of one port without a hostPort: with hostNetwork, defaulting gives a Pod's
ports their containerPort as hostPort, then validation finds them conflicting."""


def test_a_host_network_pods_defaulted_host_ports_are_validated(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(tmp_path, NODE + POD.format(spec=HOST_NETWORK), capsys) == (
        ' document 2 (Pod default/p): spec.containers[1].ports[0].hostPort: Duplicate value: '
        '"TCP//80"')


def test_a_template_whose_pods_defaulting_makes_conflict_is_refused_saying_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The API server takes the template as written (not defaulted) and refuses each pod its
    controller makes of it: none would exist."""
    assert refused(tmp_path, NODE + REPLICA_SET.format(spec=HOST_NETWORK), capsys) == (
        ' document 2 (ReplicaSet r): spec.template.spec.containers[1].ports[0].hostPort: '
        'Duplicate value: "TCP//80" (in the pods its controller makes of it: with hostNetwork '
        "a pod's hostPort is defaulted to its containerPort)")
