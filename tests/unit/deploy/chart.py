"""Render deploy/chart with the helm binary the testbed builds, and keep the plain manifests
(deploy/manifests/gangsched.yaml) current.

    python -m tests.unit.deploy.chart          # rewrite deploy/manifests/gangsched.yaml if stale

The plain manifests are rendered with `MANIFEST_VALUES`: the NATS passwords come from a Secret
the user creates (nats.auth.existingSecret), so the file holds no password and two renders are
identical.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import fixture
from tests.support import generated

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "chart"
MANIFEST = REPO / "deploy" / "manifests" / "gangsched.yaml"
RELEASE = "gangsched"
NAMESPACE = "gangsched"
USERS = ("watcher", "planner", "binder", "subscriber")
USERS_SECRET = "gangsched-nats-users"
KEY_SECRET = "gangsched-decision-key"
MANIFEST_VALUES = (f"nats.auth.existingSecret={USERS_SECRET}",
                   f"decisionKey.existingSecret={KEY_SECRET}")
"""`--set` values of the plain manifests (besides the chart's defaults)."""
CREATE_SECRET = (
    f"kubectl -n {NAMESPACE} create secret generic {USERS_SECRET} "
    + " ".join(f"--from-literal={user}=p$(openssl rand -hex 24)" for user in USERS)
)
"""The command creating the NATS users' Secret the plain manifests need (docs/deploy.md)."""
CREATE_KEY_SECRET = (f"kubectl -n {NAMESPACE} create secret generic {KEY_SECRET} "
                     "--from-literal=key=$(openssl rand -hex 32)")
"""The command creating the decision key's Secret the plain manifests need."""

HEADER = f"""\
# gangsched, plain manifests: the chart deploy/chart rendered with its default values by
#   helm template gangsched deploy/chart -n gangsched --include-crds \\
#     --set nats.auth.existingSecret={USERS_SECRET} \\
#     --set decisionKey.existingSecret={KEY_SECRET}
# Do not edit; regenerate with `python -m tests.unit.deploy.chart` (a unit test fails when
# this file is stale). This file holds no secret: create the NATS users' Secret and the
# decision key's first (docs/deploy.md, "Passwords"), then apply with `kubectl apply -k deploy/`
# (or your overlay of it); apply the namespace rather than create it, so that applying it again
# with the rest warns of nothing:
#   kubectl apply -f deploy/manifests/namespace.yaml
#   {CREATE_SECRET}
#   {CREATE_KEY_SECRET}
"""


@functools.cache
def helm() -> Path:
    """The helm binary from the testbed's cache (built by `tests/cluster/testbed build`)."""
    return fixture.build() / "helm"


def render_text(*values: str, namespace: str = NAMESPACE) -> str:
    """`helm template` of the chart with `--set` `values`, CRDs included.

    Raises:
        subprocess.CalledProcessError: helm refused (its stderr in the message's output).
    """
    set_args = [arg for value in values for arg in ("--set", value)]
    result = subprocess.run(
        [str(helm()), "template", RELEASE, str(CHART), "-n", namespace, "--include-crds",
         *set_args],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise subprocess.CalledProcessError(result.returncode, result.args, result.stdout,
                                            result.stderr)
    return result.stdout


def render(*values: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The chart's objects (see `render_text`), in render order."""
    return documents(render_text(*values, namespace=namespace))


def documents(text: str) -> list[dict[str, Any]]:
    """The non-empty YAML documents of `text`."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def manifest_text() -> str:
    """What deploy/manifests/gangsched.yaml must contain."""
    return HEADER + render_text(*MANIFEST_VALUES)


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The object of `kind` named `name`. Raises LookupError if absent."""
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise LookupError(f"no {kind} {name}")


def secret_data(secret: dict[str, Any]) -> dict[str, str]:
    """A Secret's values, decoded (`data` base64-decoded, `stringData` as is)."""
    values = {key: base64.b64decode(value).decode() for key, value in
              (secret.get("data") or {}).items()}
    values.update(secret.get("stringData") or {})
    return values


_PASSWORD_VARIABLE = re.compile(r'^\{"password":(\$[A-Z_]+),')
"""The start of a user's entry whose password nats-server reads from the environment
(`nats.auth.existingSecret`, as in the plain manifests): `{"password":$GANGSCHED_X_PASSWORD,`."""


def nats_users(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """user name → its entry (password hash, permissions) in the rendered nats.conf; a
    password read from the environment is the variable's name (`$GANGSCHED_X_PASSWORD`)."""
    conf = secret_data(find(objects, "Secret", f"{RELEASE}-nats-config"))["nats.conf"]
    users = {}
    for line in conf.splitlines():
        line = line.strip()
        if line.startswith('{"password"'):
            entry = json.loads(_PASSWORD_VARIABLE.sub(r'{"password":"\1",', line))
            users[entry["user"]] = entry
    return users


def manifest_objects() -> list[dict[str, Any]]:
    """The objects of the plain manifests as shipped (deploy/manifests/gangsched.yaml)."""
    return documents(MANIFEST.read_text())


if __name__ == "__main__":
    generated.regenerate(MANIFEST, manifest_text)


def container(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The first container of workload `kind`/`name`."""
    spec = find(objects, kind, name)["spec"]["template"]["spec"]
    first: dict[str, Any] = spec["containers"][0]
    return first


def container_env(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, str]:
    """The environment the chart gives workload `kind`/`name`'s first container, resolved as
    the kubelet would: `envFrom` ConfigMaps, then `env` values and Secret/ConfigMap keys.

    Raises:
        LookupError: a reference the render does not contain (or a fieldRef: pods only).
    """
    spec = container(objects, kind, name)
    env: dict[str, str] = {}
    for source in spec.get("envFrom", []):
        env.update(find(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    for item in spec.get("env", []):
        env[item["name"]] = _env_value(objects, item)
    return env


def _env_value(objects: list[dict[str, Any]], item: dict[str, Any]) -> str:
    """One `env` entry's value (literal, secretKeyRef or configMapKeyRef)."""
    if "value" in item:
        return str(item["value"])
    source = item.get("valueFrom", {})
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        return secret_data(find(objects, "Secret", ref["name"]))[ref["key"]]
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        return str(find(objects, "ConfigMap", ref["name"])["data"][ref["key"]])
    raise LookupError(f"env {item['name']}: {source} is only known inside a pod")
