"""Generate deploy/chart/README.md from the `# --` comments of deploy/chart/values.yaml, the
types and ranges of values.schema.json and the constraints of files/unsupported-constraints.yaml.

    python -m tests.support.chart_readme      # rewrite deploy/chart/README.md if stale

A key is documented by the `# -- text` comment block right above it (later `#` lines at the
same indentation continue it); comments without `--` are not part of the README. A unit test
(tests/unit/deploy/test_chart_docs.py) fails when README.md is stale or a key has no comment.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support import generated

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "chart"
VALUES = CHART / "values.yaml"
SCHEMA = CHART / "values.schema.json"
CONSTRAINTS = CHART / "files" / "unsupported-constraints.yaml"
README = CHART / "README.md"

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_]+):")
_DOC_START = re.compile(r"^(?P<indent> *)# -- ?(?P<text>.*)$")
_DOC_MORE = re.compile(r"^(?P<indent> *)#(?P<text>.*)$")


@dataclass(frozen=True)
class Key:
    """A documented value: its dotted path, description (one line) and default (parsed)."""

    path: tuple[str, ...]
    description: str
    default: Any

    @property
    def name(self) -> str:
        return ".".join(self.path)


def documented_keys(text: str) -> tuple[list[Key], list[str]]:
    """The keys of a values.yaml text with a `# --` comment, in file order, and the dotted
    paths of the keys without one that need one: not those below a key documented as a whole
    (one with no documented key below it, e.g. `resources`); keys inside a flow mapping or a
    list are not keys here."""
    values = yaml.safe_load(text)
    keys: list[Key] = []
    missing: list[str] = []
    stack: list[tuple[int, str]] = []
    doc: list[str] | None = None
    doc_indent = -1
    for line in text.splitlines():
        start = _DOC_START.match(line)
        if start:
            doc, doc_indent = [start.group("text").strip()], len(start.group("indent"))
            continue
        more = _DOC_MORE.match(line)
        if more:
            if doc is not None and len(more.group("indent")) == doc_indent:
                doc.append(more.group("text").strip())
            continue
        key = _KEY.match(line)
        if not key:
            doc = None
            continue
        indent = len(key.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key.group("key")))
        path = tuple(name for _, name in stack)
        if doc is not None and doc_indent == indent:
            keys.append(Key(path, " ".join(part for part in doc if part), _lookup(values, path)))
        else:
            missing.append(".".join(path))
        doc = None
    whole = [key.name + "." for key in keys if not _has_documented_child(key, keys)]
    return keys, [name for name in missing if not name.startswith(tuple(whole))]


def _has_documented_child(key: Key, keys: list[Key]) -> bool:
    """Whether a key below `key` is documented (else `key` is documented as a whole, with its
    default, and its children need no comment of their own)."""
    return any(other.path[:len(key.path)] == key.path and len(other.path) > len(key.path)
               for other in keys)


def _lookup(values: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        values = values[name]
    return values


def schema_of(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The (dereferenced) subschema of the value at `path`; {} if the schema has none."""
    node = _deref(schema, schema)
    for name in path:
        node = _deref(schema, node.get("properties", {}).get(name, {}))
    return node


def _deref(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def type_text(schema: dict[str, Any], node: dict[str, Any]) -> str:
    """A short type: `int ≥ 1`, `1 \\| 3 \\| 5`, `number > 0`, `string`, ..."""
    if "enum" in node:
        return " \\| ".join(json.dumps(choice) for choice in node["enum"])
    if "anyOf" in node:
        return type_text(schema, _deref(schema, node["anyOf"][0]))
    kind = node.get("type", "any")
    kind = "int" if kind == "integer" else kind
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    bounds = [f"≥ {node['minimum']}" if "minimum" in node else "",
              f"> {node['exclusiveMinimum']}" if "exclusiveMinimum" in node else "",
              f"≤ {node['maximum']}" if "maximum" in node else ""]
    return ", ".join([kind, *filter(None, bounds)])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_text(key: Key, keys: list[Key]) -> str:
    if _has_documented_child(key, keys):
        return ""
    return "`" + _cell(json.dumps(key.default, separators=(", ", ": "))) + "`"


INTRO = """\
# gangsched Helm chart

<!-- Generated by `python -m tests.support.chart_readme` from values.yaml (its `# --`
comments), values.schema.json and files/unsupported-constraints.yaml. Do not edit. -->

gangsched, a gang (all-or-nothing) scheduler for Kubernetes: the PodGroup CRD, the watcher,
planner and binder services with least-privilege RBAC, and a secured NATS JetStream bus.
Operating it (NATS security, passwords, TLS, the database, high availability, monitoring):
[docs/deploy.md](../../docs/deploy.md).

```sh
# the image is not published: build and push it first (docs/deploy.md), then name it
printf 'image: {repository: registry.example.com/gangsched, tag: "0.1.0"}\\n' > my-values.yaml
helm install gangsched deploy/chart -n gangsched --create-namespace -f my-values.yaml
```

`values.schema.json` checks every value: a misspelled key (`settings.logLevl`), a value out of
its range (`settings.batchSize=0`, `metrics.port=99999`) or not among its choices
(`settings.logLevel=LOUD`, `nats.replicas=2`) fails `helm install` with a line naming it, and
the templates refuse combinations the schema cannot express (two planners without leader
election or without PostgreSQL, more stream replicas than NATS servers, ...).

## Constraints the admission policy warns about

With `admissionPolicy.enabled` (the default), creating a pod whose `spec.schedulerName` is
`settings.schedulerName` and that uses one of these returns a warning (and an audit annotation);
the pod is still created and gangsched keeps it Pending with the reason shown:

| field | FailedScheduling reason |
| --- | --- |
"""


def readme_text() -> str:
    """What deploy/chart/README.md must contain."""
    keys, _ = documented_keys(VALUES.read_text())
    schema = json.loads(SCHEMA.read_text())
    constraints = yaml.safe_load(CONSTRAINTS.read_text())
    lines = [INTRO.rstrip("\n")]
    lines += [f"| `{c['field']}` | {_cell(c['reason'])} |" for c in constraints]
    lines += ["", "## Values", "", "| key | type | default | description |",
              "| --- | --- | --- | --- |"]
    for key in keys:
        kind = type_text(schema, schema_of(schema, key.path))
        lines.append(f"| `{key.name}` | {kind} | {_default_text(key, keys)} | "
                     f"{_cell(key.description)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    generated.regenerate(README, readme_text)
