"""Node reads for the binder's pre-bind validation and its post-bind existence check.

Layer: kube. One API request per call (`listed_by_hostname`: one per batch of names whose
selector fits `MAX_SELECTOR_CHARS`); never retries.
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

import msgspec

from services.kube import errors
from services.kube.client import PARTIAL_OBJECT_METADATA, KubeClient
from services.kube.resources import NODES, node_path

HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The well-known label kubelet sets on its Node: the host's name, usually the node's name."""

MAX_SELECTOR_CHARS = 6000
"""The longest label selector of one `listed_by_hostname` request, URL-encoded with every
reserved character escaped (an upper bound: the client sends `/`, `(` and `,` as they are,
3-15% shorter), so that the request line stays within the 8 KiB a proxy in front of the API
server commonly accepts (nginx's default `large_client_header_buffers`). Batches are cut by
length, not by a count of names: each LIST is a consistent read the API server filters over
every node, so fewer and longer ones cost it less and answer sooner. That is 90 names of the
longest (63 characters), 331 of 15 characters, 212 of 25. At 100 names a batch, a check of a
few hundred nodes had waited several rounds of LISTs, 1.5-5 s in workload b at 5,000 nodes of
the cluster benchmark (bench/README.md, "Session 35")."""
HOSTNAME_LISTS_AT_ONCE = 4
"""Requests of one `listed_by_hostname` in flight at once: one after another, a check of 500
nodes had waited five round trips of an API server busy with binds; all at once, a check of
thousands would send dozens of consistent LISTs together."""

PARTIAL_OBJECT_METADATA_LIST = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
"""A LIST's items as metadata only, as client-go's metadata client asks for them."""

_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)")
"""A valid label value (k8s.io/apimachinery validation.IsValidLabelValue), non-empty."""


async def get_node(client: KubeClient, name: str) -> dict[str, Any] | None:
    """The node's API JSON, or None when it does not exist.

    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(node_path(name))


async def node_exists(client: KubeClient, name: str) -> bool:
    """Whether the API server has the node `name` now (a 404 is False).

    Asks for its metadata only (a `PartialObjectMetadata`, as client-go's metadata client
    does), so the API server encodes and sends no spec and no status: a node's images list
    alone is kilobytes.
    Raises:
        KubeError subclasses other than KubeNotFound (`KubeClient.get_if_exists`).
    """
    return await client.get_if_exists(node_path(name), accept=PARTIAL_OBJECT_METADATA) is not None


async def listed_by_hostname(client: KubeClient, names: Iterable[str]) -> frozenset[str]:
    """Those of the node `names` that a consistent LIST by the `kubernetes.io/hostname` label
    finds now, by their own name: one request per batch of names whose selector fits
    `MAX_SELECTOR_CHARS` (`selector_batches`), metadata only.

    Only the names of nodes listed are returned, never a label's value: a node whose hostname
    label names another node (kubelet's `--hostname-override`) never makes that other node
    present. A name that is no valid label value, or a node whose label is not among `names`,
    is simply not found, so a caller can take every name returned as existing and must read
    the others one by one (`node_exists`): the answer errs towards "not found", never towards
    a node that is gone; so the names of a request that failed are left out ("not found")
    while the other requests' answers stand. No resourceVersion is given, so the list is as
    current as a GET. Up to `HOSTNAME_LISTS_AT_ONCE` requests are in flight at once.
    Raises:
        KubeError subclasses (`KubeClient.request`): every request failed (the first one's).
    """
    wanted = sorted({name for name in names if _LABEL_VALUE.fullmatch(name)})
    batches = selector_batches(wanted)
    gate = asyncio.Semaphore(HOSTNAME_LISTS_AT_ONCE)

    async def listed(batch: list[str]) -> frozenset[str] | errors.KubeError:
        async with gate:
            try:
                return await _listed_batch(client, batch)
            except errors.KubeError as error:
                return error

    answers = await asyncio.gather(*(listed(batch) for batch in batches))
    found = [answer for answer in answers if not isinstance(answer, errors.KubeError)]
    failures = [answer for answer in answers if isinstance(answer, errors.KubeError)]
    if failures and not found:
        raise failures[0]
    return frozenset().union(*found)


def selector_batches(names: list[str]) -> list[list[str]]:
    """`names` (valid label values, in order) cut into consecutive batches whose selector
    (`_selector`), URL-encoded, is at most `MAX_SELECTOR_CHARS` long; a name too long to share
    one goes alone. Shapes: every name in exactly one batch, none empty."""
    empty, comma = _encoded_length(_selector([])), _encoded_length(",")
    batches: list[list[str]] = []
    batch: list[str] = []
    length = empty
    for name in names:
        cost = _encoded_length(name) + comma
        if batch and length + cost > MAX_SELECTOR_CHARS:
            batches.append(batch)
            batch, length = [], empty
        batch.append(name)
        length += cost
    if batch:
        batches.append(batch)
    return batches


def _selector(batch: list[str]) -> str:
    return f"{HOSTNAME_LABEL} in ({','.join(batch)})"


def _encoded_length(text: str) -> int:
    """`text`'s length once percent-encoded in a query (the longest any client makes it)."""
    return len(urllib.parse.quote(text, safe=""))


async def _listed_batch(client: KubeClient, batch: list[str]) -> frozenset[str]:
    """Those of `batch` (one of `selector_batches`) one LIST finds."""
    selector = _selector(batch)
    listed = await client.get_as(NODES.list_path, _NameList,
                                 query=(("labelSelector", selector),),
                                 accept=PARTIAL_OBJECT_METADATA_LIST)
    asked = set(batch)
    return frozenset(item.metadata.name for item in listed.items or ()
                     if item.metadata.name in asked)


class _Name(msgspec.Struct):
    """An object's metadata as far as its name."""

    name: str = ""


class _Named(msgspec.Struct):
    """A list item as far as its name."""

    metadata: _Name = msgspec.field(default_factory=_Name)


class _NameList(msgspec.Struct):
    """A list answer as far as `listed_by_hostname` reads it: each item's name. Everything
    else (labels, annotations, managedFields) is skipped unbuilt, which was most of the
    binder's cost of this check."""

    items: list[_Named] | None = None

