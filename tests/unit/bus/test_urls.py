"""NATS URLs: credentials never shown, several servers, and the inbox of a user in the URL."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from nats.aio.client import Client

from services.bus import connection, urls
from services.config.settings import BusSettings


def test_a_url_is_shown_without_user_password_or_token() -> None:
    assert urls.shown("nats://watcher:s3cret@nats:4222") == "nats://nats:4222"
    assert urls.shown("nats://t0ken@nats:4222") == "nats://nats:4222"
    assert urls.shown("tls://nats.example:4443") == "tls://nats.example:4443"


def test_several_comma_separated_servers_are_split_and_each_shown_bare() -> None:
    value = "nats://a:pw@n1:4222, n2:4222,"
    assert urls.server_urls(value) == ["nats://a:pw@n1:4222", "n2:4222"]
    assert urls.shown(value) == "nats://n1:4222,nats://n2:4222"


def test_an_unparsable_url_is_never_echoed_back() -> None:
    assert urls.shown("nats://u:pw@host:notaport") == "<unparsable NATS URL>"


def test_the_user_of_a_url_is_the_one_before_a_password_never_a_token() -> None:
    assert urls.user("nats://watcher:pw@nats:4222") == "watcher"
    assert urls.user("nats://t0ken@nats:4222") is None
    assert urls.user("nats://nats:4222") is None


def test_a_user_named_only_in_the_url_gets_its_own_inbox_as_the_chart_permits() -> None:
    in_url = BusSettings(url="nats://watcher:pw@gangsched-nats:4222")
    assert connection.inbox_prefix(in_url) == "_INBOX_watcher"


def test_a_given_user_and_password_win_over_the_url_as_nats_py_sends_them() -> None:
    both = BusSettings(url="nats://watcher:pw@nats:4222", user="binder", password="x")
    assert connection.inbox_prefix(both) == "_INBOX_binder"
    assert connection.inbox_prefix(BusSettings(url="nats://nats:4222")) == "_INBOX"
    assert connection.inbox_prefix(BusSettings(url="nats://t0ken@nats:4222")) == "_INBOX"


def test_a_host_no_resolver_takes_is_refused_a_reachable_shape_is_not() -> None:
    assert urls.problem("nats://a:pw@n1:4222,ho st:4222") == (
        "'ho st' is not a host name or IP address")
    for usable in ("nats://nats", "nats:4222", "tls://nats.example.:4443", "nats://[::1]:4222",
                   "nats://10.0.0.1", "ws://nats_1:8080", "nats://unreachable.invalid:4222",
                   # bare hosts: nats-py's nats://host:4222 (a Service name, as charts give)
                   "localhost", "nats", "nats.messaging.svc", "a:pw@nats", "t0ken@nats",
                   "nats1:4222,nats2", "notaurl"):
        assert urls.problem(usable) is None, usable


MALFORMED = [
    ("NATS://nats:4222", "NATS:// must be written in lowercase, nats://: nats-py reads 'NATS' "
                         "as a host name"),
    ("nats://a:4222,Tls://b:4443", "Tls:// must be written in lowercase, tls://: nats-py reads "
                                   "'Tls' as a host name"),
    ("nats:/nats", "'nats:/nats' is neither host:port nor a URL (nats://host:port)"),
    ("u:secret@nats//nats:4222", "'nats//nats:4222' is neither host:port nor a URL "
                                 "(nats://host:port)"),
    ("nats:4222?x", "'nats:4222?x' is neither host:port nor a URL (nats://host:port)"),
    ("none", "'none' is no host nats-py connects to: it takes it for a missing one"),
    ("nats://None:4222", "'none' is no host nats-py connects to: it takes it for a missing one"),
    ("nats://a:4222,ws://b:8080", "websocket (ws://, wss://) and other (nats://, tls://) servers "
                                  "in one list: nats-py connects to either kind, never both"),
    ("http://x:4222", "http:// is not a NATS scheme (use nats://, tls://, ws://, wss://)"),
    ("nats://host:notaport", "'nats://host:notaport' has a bad port"),
    (" , ", "no server URL"),
]
"""Values nats-py refuses (some only once it connects, with a traceback) or reads as another
server than the one meant (`NATS://h:4222` as the host `NATS`, `nats:/h` as the host `nats`),
and why each is refused."""


@pytest.mark.parametrize(("url", "why"), MALFORMED)
def test_a_value_nats_py_refuses_or_misreads_is_refused_saying_why(url: str, why: str) -> None:
    assert urls.problem(url) == why


USABLE = ["nats://nats", "nats:4222", "tls://nats.example.:4443", "nats://[::1]:4222",
          "[::1]:4222", "nats://10.0.0.1", "ws://nats_1:8080", "ws://a,wss://b:443",
          "nats://u:pw@n1:4222, tls://n2:4443", "nats://h:4222/", "localhost", "nats", "nats:",
          "a:pw@nats", "t0ken@nats", "nats1:4222,nats2", "notaurl"]
"""Values taken: URLs, bare hosts and `host:port` (nats-py's `nats://host:4222` and
`nats://host:port`; a Service name, as charts give), and lists of them."""


@pytest.mark.parametrize("url", USABLE)
def test_a_value_taken_is_the_servers_nats_py_connects_to(url: str) -> None:
    """What `problem` takes, nats-py takes too, as the same hosts and ports: nothing it would
    refuse, nor read as another server, gets past the options."""
    assert urls.problem(url) is None
    client = Client()
    client._setup_server_pool(urls.server_urls(url))  # nats-py's own parsing
    read = [(server.uri.hostname, server.uri.port) for server in client._server_pool]
    meant = []
    for server in urls.server_urls(url):
        part = urlsplit(server if "://" in server else f"nats://{server}")
        meant.append((part.hostname, part.port or (4222 if part.scheme in ("nats", "tls")
                                                   else None)))
    assert read == meant
