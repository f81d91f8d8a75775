"""The label keys and values the API server takes, for the objects `gangsched simulate` reads.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `ValidateLabels`
(apimachinery `pkg/apis/meta/v1/validation`), with the key and value rules of
`pkg/api/validate/content` (`IsLabelKey`, `IsLabelValue`); the messages are the API server's,
whose length limits say "bytes" (the name rules of `object_names` say "characters", as the
API server's do). A selector matches labels exactly as written, so a simulated pod that keeps
a label the API server would refuse could meet an affinity term no real pod could.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from services.contracts import names
from services.planner.simulate.object_names import SUBDOMAIN_RULE, invalid

MAX_NAME = 63
"""The most bytes of a label value, and of a key's name part."""
MAX_PREFIX = 253
"""The most bytes of a key's prefix (a DNS-1123 subdomain)."""
_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FORMAT = f"({_NAME_FORMAT})?"
_NAME = re.compile(_NAME_FORMAT)
_VALUE = re.compile(_VALUE_FORMAT)
_NAME_RULE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character (e.g. 'MyName' or 'my.name' or '123-abc', regex "
              f"used for validation is '{_NAME_FORMAT}')")
VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
              f"'MyValue' or 'my_value' or '12345', regex used for validation is "
              f"'{_VALUE_FORMAT}')")
_KEY_RULE = (f"a valid label key {_NAME_RULE} with an optional DNS subdomain prefix and '/' "
             "(e.g. 'example.com/MyName')")


def problem(labels: Mapping[str, str]) -> str | None:
    """Why the API server would refuse `labels` (keys and values are text), in its words
    (`Invalid value: "a/b/c": a valid label key must consist of ...`): the first invalid key
    or value in the mapping's order, a key before its value; None when all are valid.
    The caller names the field (`metadata.labels`, `spec.template.labels`)."""
    for key, value in labels.items():
        wrong = key_problem(key)
        if wrong is not None:
            return invalid(key, wrong)
        wrong = value_problem(value)
        if wrong is not None:
            return invalid(value, wrong)
    return None


def value_problem(value: str) -> str | None:
    """Why `value` is no label value (`IsLabelValue`: its first message), or None."""
    return next(iter(value_problems(value)), None)


def value_problems(value: str) -> list[str]:
    """Every message `IsLabelValue` gives `value`, in its order (too long, then not of the
    form); empty when it is a label value. A caller joining them as the API server does
    (`strings.Join(errs, ";")`: a taint's or toleration's value) needs them all."""
    too_long = [f"must be no more than {MAX_NAME} bytes"] if utf8_length(value) > MAX_NAME else []
    return too_long if _VALUE.fullmatch(value) else [*too_long, VALUE_RULE]


def key_problem(key: str) -> str | None:
    """Why `key` is no label key (`IsLabelKey`: its first message), or None."""
    parts = key.split("/")
    if len(parts) > 2:
        return _KEY_RULE
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "prefix part must be non-empty"
        if utf8_length(prefix) > MAX_PREFIX:
            return f"prefix part must be no more than {MAX_PREFIX} bytes"
        if not names.is_dns_subdomain(prefix):
            return f"prefix part {SUBDOMAIN_RULE}"
    if not name:
        return "name part must be non-empty"
    if utf8_length(name) > MAX_NAME:
        return f"name part must be no more than {MAX_NAME} bytes"
    return None if _NAME.fullmatch(name) else f"name part {_NAME_RULE}"


def utf8_length(text: str) -> int:
    """The length of `text` in UTF-8 bytes, as Go's `len` counts it (a lone surrogate, which
    YAML can hold, as the three bytes Python would write for it)."""
    return len(text.encode("utf-8", "surrogatepass"))
