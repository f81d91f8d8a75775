"""The names and ports of a pod's containers the API server takes, for `gangsched simulate`.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `pkg/apis/core/validation`:
`validateContainers` and `validateInitContainers` (in that order, app containers first), each
container's name and ports as `validateContainerCommon` checks them, then its name's
uniqueness; `checkHostPortConflicts` after all app containers, and after each init container
alone (init containers run one by one). So:
- a name is required (`Required value`) and a DNS-1123 label (`ValidateDNS1123Label`); app and
  init containers share one name space (`spec.containers[1].name: Duplicate value: "c"`);
- a port (`validateContainerPorts`): a `name`, when given, an IANA service name
  (`IsValidPortName`: at most 15 characters of `a-z`, `0-9` and `-`, a letter among them, no
  `--`, no `-` first or last) unique in its container; a `containerPort` required (0 is none)
  and from 1 to 65535 (`IsValidPortNum`), a `hostPort` (0 is none) too; a `protocol` TCP, UDP
  or SCTP (an empty one is defaulted to TCP by `SetDefaults_ContainerPort`, as before
  validation);
- no two ports share a `<protocol>/<hostIP>/<hostPort>` (`Duplicate value: "TCP//80"`). An
  init container's conflict is named as the API server names it, as if it were the first
  (`initContainers[0].ports[1].hostPort`: it passes `checkHostPortConflicts` a list of that
  one container and the list's path).
The API server validates a Pod after defaulting it, which, with `hostNetwork: true`, sets a
port's `hostPort` to its `containerPort` (`pod_defaults`); a template is validated as written,
and the pods its controller makes of it are defaulted so (`template_problem`). A port's
`hostIP` is not checked: the API server takes any text there.
Not checked here: a container's `image` (required by the API server; a manifest written for
simulate may leave it out) and what kube-scheduler does not read. The messages are the API
server's, its first error in its order.

Shapes: the containers are mappings and the JSON types of `name` and of the ports' fields were
checked (`shapes`); a null port is the zero port the API server decodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from services.planner.simulate import object_labels, object_names
from services.planner.simulate.object_names import invalid, quoted
from services.planner.simulate.tolerations import unsupported

PROTOCOLS = ("SCTP", "TCP", "UDP")
"""`supportedPortProtocols`, sorted as `sets.List` shows them."""
DEFAULT_PROTOCOL = "TCP"
MAX_PORT = 65535
MAX_PORT_NAME = 15
PORT_RANGE = f"must be between 1 and {MAX_PORT}, inclusive"
_PORT_NAME_CHARSET = re.compile(r"[-a-z0-9]+")
_LETTER = re.compile(r"[a-z]")
DEFAULTED_PODS = ("in the pods its controller makes of it: with hostNetwork a pod's hostPort is "
                  "defaulted to its containerPort")
"""Why a template the API server takes is refused: its pods it would refuse."""

Found = tuple[str, str]


def problem(spec: Mapping[str, Any], is_pod: bool = True) -> Found | None:
    """The first container name or port of the pod spec `spec` the API server refuses, and
    why, as `(field, why)` with the field relative to the spec: `("containers[1].name",
    'Duplicate value: "c"')`; None when it takes them all. `is_pod`: `spec` is a Pod's,
    validated once defaulted (a hostNetwork pod's host ports); else a template's, as written."""
    return next(_errors(spec, is_pod and spec.get("hostNetwork") is True), None)


def template_problem(spec: Mapping[str, Any]) -> Found | None:
    """`problem` of a workload template's pod spec `spec`, and then of the pods made of it: a
    host port conflict that only their defaulting makes (module docstring) is refused too, the
    message saying so (`Duplicate value: "TCP//80" (in the pods ...)`)."""
    found = problem(spec, is_pod=False)
    if found is not None:
        return found
    found = problem(spec, is_pod=True)
    return None if found is None else (found[0], f"{found[1]} ({DEFAULTED_PODS})")


def _errors(spec: Mapping[str, Any], defaults_host_ports: bool) -> Iterator[Found]:
    """Every error, in the API server's order (lazily: the first is reported)."""
    containers = spec.get("containers") or []
    names: set[str] = set()
    for i, container in enumerate(containers):
        where = f"containers[{i}]"
        yield from _common_errors(container, where)
        name = container.get("name") or ""
        if name in names:
            yield f"{where}.name", f"Duplicate value: {quoted(name)}"
        names.add(name)
    yield from _host_port_conflicts(containers, "containers", defaults_host_ports)
    names = {container.get("name") or "" for container in containers}
    for i, container in enumerate(spec.get("initContainers") or []):
        where = f"initContainers[{i}]"
        yield from _common_errors(container, where)
        name = container.get("name") or ""
        if name in names:
            yield f"{where}.name", f"Duplicate value: {quoted(name)}"
        elif name:
            names.add(name)
        yield from _host_port_conflicts([container], "initContainers", defaults_host_ports)


def _common_errors(container: Mapping[str, Any], where: str) -> Iterator[Found]:
    """`validateContainerCommon`'s errors of what is checked here: the name, the ports."""
    name = container.get("name") or ""
    if not name:
        yield f"{where}.name", "Required value"
    else:
        wrong = object_names.label_problem(name)
        if wrong is not None:
            yield f"{where}.name", wrong
    yield from _port_errors(container.get("ports") or [], f"{where}.ports")


def _port_errors(ports: list[Mapping[str, Any] | None], where: str) -> Iterator[Found]:
    """`validateContainerPorts`: per port its name, containerPort, hostPort, protocol."""
    names: set[str] = set()
    for j, given in enumerate(ports):
        port, at = given or {}, f"{where}[{j}]"
        name = port.get("name") or ""
        if name:
            wrongs = port_name_problems(name)
            for wrong in wrongs:
                yield f"{at}.name", invalid(name, wrong)
            if not wrongs and name in names:
                yield f"{at}.name", f"Duplicate value: {quoted(name)}"
            if not wrongs:
                names.add(name)
        container_port = port.get("containerPort") or 0
        if not container_port:
            yield f"{at}.containerPort", "Required value"
        elif not 1 <= container_port <= MAX_PORT:
            yield f"{at}.containerPort", f"Invalid value: {container_port}: {PORT_RANGE}"
        host_port = port.get("hostPort") or 0
        if host_port and not 1 <= host_port <= MAX_PORT:
            yield f"{at}.hostPort", f"Invalid value: {host_port}: {PORT_RANGE}"
        protocol = port.get("protocol") or DEFAULT_PROTOCOL
        if protocol not in PROTOCOLS:
            yield f"{at}.protocol", unsupported(protocol, PROTOCOLS)


def port_name_problems(name: str) -> list[str]:
    """Every message `IsValidPortName` gives the non-empty port name `name`, in its order."""
    wrongs = []
    if object_labels.utf8_length(name) > MAX_PORT_NAME:
        wrongs.append(f"must be no more than {MAX_PORT_NAME} characters")
    if not _PORT_NAME_CHARSET.fullmatch(name):
        wrongs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _LETTER.search(name):
        wrongs.append("must contain at least one letter (a-z)")
    if "--" in name:
        wrongs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        wrongs.append("must not begin or end with a hyphen")
    return wrongs


def _host_port_conflicts(containers: list[Mapping[str, Any]], field: str,
                         defaults_host_ports: bool) -> Iterator[Found]:
    """`checkHostPortConflicts` of `containers` (named under `field`): a port whose
    `<protocol>/<hostIP>/<hostPort>` an earlier one has; with `defaults_host_ports`, a port's
    hostPort once defaulted (`pod_defaults.default_host_network_ports`)."""
    seen: set[str] = set()
    for i, container in enumerate(containers):
        for j, given in enumerate(container.get("ports") or []):
            port = given or {}
            host_port = port.get("hostPort") or 0
            if not host_port and defaults_host_ports:
                host_port = port.get("containerPort") or 0
            if not host_port:
                continue
            key = (f"{port.get('protocol') or DEFAULT_PROTOCOL}/{port.get('hostIP') or ''}/"
                   f"{host_port}")
            if key in seen:
                yield f"{field}[{i}].ports[{j}].hostPort", f"Duplicate value: {quoted(key)}"
            seen.add(key)
