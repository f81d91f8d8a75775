"""`KubeClient.get_as`: an answer decoded into a Struct that names only the fields read; a
wrong shape is KubeInvalid and an error status the usual KubeError.

The far end is a loopback TCP listener that answers one fixed HTTP response.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from services.kube import errors
from tests.unit.kube.test_client_transport import Handler, connected, listening


class Meta(msgspec.Struct):
    name: str = ""


class Item(msgspec.Struct):
    metadata: Meta


class Names(msgspec.Struct):
    items: list[Item] | None = None


def answering(status: str, body: dict[str, Any]) -> Handler:
    payload = json.dumps(body).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()).strip():
            pass  # the request's headers; a GET has no body
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        await writer.drain()

    return answer


async def get_names(tmp_path: Path, status: str, body: dict[str, Any]) -> Names:
    async with listening(answering(status, body)) as listener:
        kube = await connected(tmp_path, f"http://127.0.0.1:{listener.port}")
        try:
            return await kube.get_as("/api/v1/nodes", Names,
                                     query=(("labelSelector", "a in (b)"),))
        finally:
            await kube.close()


@pytest.mark.usefixtures("no_proxy_environment")
async def test_an_answer_is_decoded_into_the_declared_fields_only(tmp_path: Path) -> None:
    body = {"kind": "PartialObjectMetadataList", "items": [
        {"metadata": {"name": "n1", "labels": {"x": "y"}, "managedFields": [{"manager": "k"}]}},
        {"metadata": {"name": "n2"}, "extra": [1, 2, 3]}]}
    names = await get_names(tmp_path, "200 OK", body)
    assert names == Names(items=[Item(Meta("n1")), Item(Meta("n2"))])


@pytest.mark.usefixtures("no_proxy_environment")
async def test_an_answer_of_another_shape_is_kube_invalid(tmp_path: Path) -> None:
    with pytest.raises(errors.KubeInvalid, match=r"^GET /api/v1/nodes: unexpected answer: "
                                                 r"Expected `object`, got `str`"):
        await get_names(tmp_path, "200 OK", {"items": ["n1"]})


@pytest.mark.usefixtures("no_proxy_environment")
async def test_an_error_status_is_the_usual_kube_error(tmp_path: Path) -> None:
    status = {"kind": "Status", "status": "Failure", "message": "nodes is forbidden",
              "reason": "Forbidden", "code": 403}
    with pytest.raises(errors.KubeForbidden, match="nodes is forbidden"):
        await get_names(tmp_path, "403 Forbidden", status)
