"""NATS URLs: credentials never shown, several servers, and the inbox of a user in the URL."""

from __future__ import annotations

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
