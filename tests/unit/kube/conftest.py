"""Fixtures of the client tests that talk to loopback listeners."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variables: requests to loopback listeners go straight to them."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
