"""Credentials that cannot be supplied for a request leave the client as a KubeError, like
every other failure.

The in-cluster case uses kubernetes_asyncio's own service-account loader on token files in a
temporary directory (re-read before every request: refresh period 0).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

import certifi
import pytest
from kubernetes_asyncio.config import incluster_config

from services.config.settings import KubeSettings
from services.kube import client, errors


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pod's service account: the token file (returned) and CA file, and the API server's
    address (a port nothing listens on) in the environment, as the kubelet provides them."""
    token = tmp_path / "token"
    token.write_text("t0ken")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", certifi.where())
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", datetime.timedelta(0))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    return token


def removed(token: Path) -> None:
    token.unlink()


def emptied(token: Path) -> None:
    token.write_text("")


@pytest.mark.parametrize("spoil", [removed, emptied], ids=["token-removed", "token-empty"])
async def test_a_service_account_token_that_cannot_be_reread_is_kube_unavailable(
        service_account: Path, spoil: Callable[[Path], None]) -> None:
    kube = await client.connect(KubeSettings())
    try:
        spoil(service_account)
        with pytest.raises(errors.KubeUnavailable,
                           match=r"^GET /api/v1/nodes/n1: credentials unavailable: "):
            await kube.request("GET", "/api/v1/nodes/n1")
        with pytest.raises(errors.KubeUnavailable, match="credentials unavailable"):
            async for _ in kube.stream("/api/v1/nodes", (("watch", "true"),),
                                       read_timeout_seconds=1):
                pass
    finally:
        await kube.close()
