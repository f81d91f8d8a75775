"""The health endpoints' bind failure points at the option to change: --http-host when the
address is not this machine's (or does not resolve), --http-port when the port is the problem."""

from __future__ import annotations

import errno
import socket

import pytest

from services.runtime.health import HealthServer, PortUnavailable, Readiness, unbindable_hint

HOST_HINT = "give another --http-host (an address of this machine, e.g. 127.0.0.1 or 0.0.0.0)"
PORT_HINT = "give another --http-port (-1: none)"


async def test_an_address_not_of_this_machine_points_at_http_host() -> None:
    with pytest.raises(PortUnavailable) as raised:
        await HealthServer(Readiness(), host="10.255.255.1", port=0).start()
    assert str(raised.value) == (
        "cannot serve /healthz, /readyz and /metrics on 10.255.255.1:0: error while attempting "
        "to bind on address ('10.255.255.1', 0): cannot assign requested address; " + HOST_HINT)


@pytest.mark.parametrize(("error", "hint"), [
    (OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address"), HOST_HINT),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), HOST_HINT),
    (OSError(errno.EADDRINUSE, "Address already in use"), PORT_HINT),
    (OSError(errno.EACCES, "Permission denied"), PORT_HINT),
])
def test_the_hint_names_what_to_change(error: OSError, hint: str) -> None:
    assert unbindable_hint(error) == hint
