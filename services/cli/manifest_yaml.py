"""Reading manifest YAML as strictly as kubectl does, with errors in one line.

Layer: cli (the only YAML reader of user files: `gangsched simulate`). PyYAML's safe loader
takes a mapping key given twice silently (the last one wins), so a manifest with
`name: a` and `name: b` would be simulated as something its author may not have meant;
here it is refused, as the Kubernetes YAML library's strict decoding (`sigs.k8s.io/yaml`
`UnmarshalStrict`) refuses it: `key "name" already set in map`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

YAMLError = yaml.YAMLError


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing a mapping that gives one key twice (merge keys `<<` aside)."""

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
