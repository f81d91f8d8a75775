"""Reading manifest YAML as strictly as kubectl does, with errors in one line.

Layer: cli (the only YAML reader of user files: `gangsched simulate`). PyYAML's safe loader
takes a mapping key given twice silently (the last one wins), so a manifest with
`name: a` and `name: b` would be simulated as something its author may not have meant;
here it is refused, as the Kubernetes YAML library's strict decoding (`sigs.k8s.io/yaml`
`UnmarshalStrict`) refuses it: `key "name" already set in map`.

Also as kubectl reads YAML (`sigs.k8s.io/yaml`, go-yaml v2 into JSON): a timestamp
(`creationTimestamp: 2024-05-01T10:00:00Z` unquoted, a label value `2024-05-01`) stays the
text it is, not a date; an alias inside the very node its anchor names (`&a [*a]`, a value
containing itself) is refused ("anchor value contains itself"). And what no manifest needs
and would exhaust the reader is refused with its line: nesting deeper than `MAX_DEPTH`
lists and mappings, an integer too long for Python to read (more than 4300 digits).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

YAMLError = yaml.YAMLError
MAX_DEPTH = 200
"""The deepest nesting of lists and mappings read: far beyond any Kubernetes object (a pod
with affinity terms nests about 12 deep, the PodGroup CRD 14, a CRD embedding a pod template
some tens), and shallow enough for Python's recursion limit in the reader and in the copies
simulate makes (deeper, either would end in a RecursionError, not a message)."""


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing a mapping that gives one key twice (merge keys `<<` aside), a
    value containing itself and nesting deeper than `MAX_DEPTH`; timestamps read as text
    (module docstring)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.open_anchors: list[str] = []
        """The anchor of each node being composed ("" for none), outermost first: as many as
        the depth of the node composed next."""

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """The next node, as the safe loader composes it.

        Raises:
            ComposerError: an alias to an anchor being composed (a value containing itself),
                or a node nested deeper than `MAX_DEPTH` (with its line and column).
        """
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        mark: Any = event.start_mark
        if isinstance(event, AliasEvent):
            if event.anchor in self.open_anchors:
                raise ComposerError(None, None, f"anchor {event.anchor!r} value contains "
                                    "itself", mark)
            return super().compose_node(parent, index)
        if len(self.open_anchors) >= MAX_DEPTH:
            raise ComposerError(None, None, f"nested more than {MAX_DEPTH} lists and mappings "
                                "deep; no Kubernetes object is", mark)
        self.open_anchors.append(getattr(event, "anchor", None) or "")
        try:
            return super().compose_node(parent, index)
        finally:
            self.open_anchors.pop()

    def construct_yaml_int(self, node: ScalarNode) -> int:
        """An integer, as the safe loader reads it.

        Raises:
            ConstructorError: more digits than Python reads (`sys.get_int_max_str_digits`).
        """
        try:
            return int(super().construct_yaml_int(node))
        except ValueError as error:
            raise ConstructorError(None, None, f"an integer of {len(str(node.value))} "
                                   "characters: too long to read", node.start_mark) from error

    def construct_yaml_timestamp(self, node: ScalarNode) -> str:  # type: ignore[override]
        """A timestamp as the text it is (kubectl's YAML reader keeps it a string)."""
        return str(self.construct_scalar(node))

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        """The mapping of `node`, as the safe loader builds it.

        Raises:
            ConstructorError: a key given twice (with the line and column of the second).
        """
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                is_repeated = key in seen
            except TypeError:  # an unhashable key: the base class says so
                break
            if is_repeated:
                raise ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"key {key!r} already set in this mapping (given twice)",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp",
                              _StrictLoader.construct_yaml_timestamp)


def load_all(text: str) -> list[Any]:
    """Every YAML document of `text`, in order (an empty document is None).

    Raises:
        yaml.YAMLError: not YAML, or a mapping with a repeated key (`one_line` says where).
    """
    return list(yaml.load_all(text, Loader=_StrictLoader))


def one_line(error: OSError | yaml.YAMLError) -> str:
    """A read or YAML error in one line: where (line and column, or character position) and
    what, without PyYAML's multi-line span, caret drawing or `"<unicode string>"` name."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"line {mark.line + 1} column {mark.column + 1}: {error.problem}"
    if isinstance(error, yaml.reader.ReaderError):
        return (f"character {error.position + 1}: #x{error.character:04x} is not allowed in "
                f"YAML ({error.reason}): not a YAML or JSON file?")
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return " ".join(str(error).split())
