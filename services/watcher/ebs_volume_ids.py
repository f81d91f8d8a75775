"""AWS EBS volume IDs as kube's CSI translation reads them (`KubernetesVolumeIDToEBSVolumeID`).

Layer: watcher (pure; the simulator uses it too). An in-tree EBS volume names its disk by a
Kubernetes volume ID: a bare EBS ID (`vol-0123`), kept as it is whatever it holds, or a URL
`aws://<zone>/<EBS ID>` (`aws:///vol-0123`), whose path, its slashes trimmed, is the EBS ID when
it matches `^vol-[^/]*$`. The URL is read as Go's `net/url.Parse` reads it (Go 1.26, which
Kubernetes 1.36 is built with): the fragment and query cut off, the authority's user info, host
and port checked, the path percent-decoded. What Go refuses, or a path that is no EBS ID, cannot
be translated (None). Go strings are bytes: the URL is read as its UTF-8 bytes, and a decoded
path that is no UTF-8 (`%ff`) gives its bytes as `\\xff` escapes. Never raises.

Source: k8s.io/csi-translation-lib plugins/aws_ebs.go; Go's net/url/url.go (`parse`,
`parseAuthority`, `parseHost`, `unescape`, `shouldEscape`) and net/netip (`parseIPv6`).
"""

from __future__ import annotations

import re
from enum import Enum

AWS_PREFIX = "aws://"
"""What a Kubernetes EBS volume ID that is a URL starts with (only that prefix is parsed)."""
_EBS_ID = re.compile(rb"vol-[^/]*")
"""Go's `^vol-[^/]*$` (fully matched: Go's `$` is the end of the text, never a newline)."""
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HOST_BYTES = _ALNUM | frozenset(b"!$&'()*+,;=:[]<>\"-_.~")
"""The ASCII bytes Go's `shouldEscape` leaves as they are in a host (or an IPv6 zone)."""
_USERINFO_BYTES = _ALNUM | frozenset(b"-._:~!$&'()*+,;=%@")
"""The bytes Go's `validUserinfo` accepts."""
_PERCENT = ord("%")


class _Part(Enum):
    """Go's `encoding` modes `unescape` is called with, as far as they differ here."""

    HOST = "host"
    ZONE = "zone"
    OTHER = "other"  # path, fragment, user info: only the escapes themselves are checked


def ebs_volume_id(kubernetes_id: str) -> str | None:
    """The EBS volume ID of a Kubernetes EBS volume ID (module docstring), None when kube's
    `KubernetesVolumeIDToEBSVolumeID` returns an error for it.

    Shapes: `vol-1` → `vol-1`; `aws://us-east-1a/vol-1`, `aws:///vol-1` → `vol-1`;
    `aws://us-east-1a/other/vol-1`, `aws://vol-1`, `aws://zone%/vol-1` → None.
    """
    if not kubernetes_id.startswith(AWS_PREFIX):
        return kubernetes_id  # "assume a bare aws volume id"
    path = _url_path(kubernetes_id.encode("utf-8", "surrogatepass"))
    if path is None:
        return None
    found = path.strip(b"/")
    if not _EBS_ID.fullmatch(found):
        return None
    return found.decode("utf-8", "backslashreplace")


def _url_path(url: bytes) -> bytes | None:
    """The decoded path of `url` (starting `aws://`) as Go's `url.Parse` gives it, or None
    when Go refuses the URL."""
    url, _, fragment = url.partition(b"#")
    if any(byte < 0x20 or byte == 0x7F for byte in url):
        return None  # "net/url: invalid control character in URL"
    if fragment and _unescape(fragment, _Part.OTHER) is None:
        return None
    rest = url[len(AWS_PREFIX):].partition(b"?")[0]  # the query (or a trailing `?`) cut off
    authority, slash, path = rest.partition(b"/")
    if not _is_authority(authority):
        return None
    return _unescape(slash + path, _Part.OTHER)


def _is_authority(authority: bytes) -> bool:
    """Go's `parseAuthority` accepts `authority` (`[userinfo@]host[:port]`, `@` the last)."""
    userinfo, at, host = authority.rpartition(b"@")
    if not _is_host(host):
        return False
    if not at:
        return True
    return (all(byte in _USERINFO_BYTES for byte in userinfo)
            and _unescape(userinfo, _Part.OTHER) is not None)


def _is_host(host: bytes) -> bool:
    """Go's `parseHost` accepts `host` (`host[:port]` or `[IPv6 literal][:port]`) for a scheme
    other than http and https (the port is after the last colon)."""
    bracket = host.rfind(b"[")
    if bracket > 0:
        return False  # "invalid IP-literal"
    if bracket == 0:
        return _is_ip_literal(host)
    colon = host.rfind(b":")
    if colon >= 0 and not _is_optional_port(host[colon:]):
        return False
    return _unescape(host, _Part.HOST) is not None


def _is_ip_literal(host: bytes) -> bool:
    """Go's `parseHost` accepts `host`, starting `[`: an IPv6 address (its zone after `%25`)
    in brackets, then an optional port."""
    close = host.rfind(b"]")
    if close < 0 or not _is_optional_port(host[close + 1:]):
        return False
    name = host[1:close]
    zone_at = name.find(b"%25")
    if zone_at < 0:
        address = _unescape(name, _Part.HOST)
    else:
        head, zone = _unescape(name[:zone_at], _Part.HOST), _unescape(name[zone_at:], _Part.ZONE)
        address = None if head is None or zone is None else head + zone
    return address is not None and _is_ipv6(address)


def _is_optional_port(port: bytes) -> bool:
    """Go's `validOptionalPort`: empty, or `:` and digits only."""
    return not port or (port[:1] == b":" and all(0x30 <= byte <= 0x39 for byte in port[1:]))


def _unescape(text: bytes, part: _Part) -> bytes | None:
    """`text` percent-decoded as Go's `unescape` decodes it in `part`, or None where it returns
    an error: a `%` not followed by two hex digits; in a host, an escape of an ASCII byte
    (but `%25`) or an ASCII byte a host may not hold; in a zone, an escape of a byte a host may
    not hold (but `%25` and a space)."""
    out = bytearray()
    i = 0
    while i < len(text):
        byte = text[i]
        if byte != _PERCENT:
            if part is not _Part.OTHER and byte < 0x80 and byte not in _HOST_BYTES:
                return None
            out.append(byte)
            i += 1
            continue
        pair = text[i + 1:i + 3]
        if len(pair) < 2 or not all(digit in _HEX for digit in pair):
            return None
        value = int(pair, 16)
        if part is _Part.HOST and value < 0x80 and pair != b"25":
            return None
        if part is _Part.ZONE and pair != b"25" and value != 0x20 and value not in _HOST_BYTES:
            return None
        out.append(value)
        i += 3
    return bytes(out)


def _is_ipv6(text: bytes) -> bool:
    """Go's `netip.ParseAddr` reads `text` as an IPv6 address (zone allowed), not IPv4: the
    first of `.`, `:` and `%` in it is a `:`, and `parseIPv6` accepts it."""
    first = next((byte for byte in text if byte in b".:%"), None)
    if first != ord(":"):
        return False
    address, percent, zone = text.partition(b"%")
    if percent and not zone:
        return False  # "zone must be a non-empty string"
    return _is_ipv6_address(address)


def _is_ipv6_address(text: bytes) -> bool:
    """Go's `parseIPv6` accepts `text` (no zone): eight groups of 1-4 hex digits, at most one
    `::` standing for one or more zero groups, the last two groups possibly an IPv4 address."""
    groups, ellipsis = 0, False
    rest = text
    if rest.startswith(b"::"):
        ellipsis, rest = True, rest[2:]
        if not rest:
            return True
    while groups < 8:
        digits = len(rest) - len(rest.lstrip(b"0123456789abcdefABCDEF"))
        if digits == 0 or digits > 4:
            return False
        if rest[digits:digits + 1] == b".":
            if (not ellipsis and groups != 6) or groups > 6:
                return False
            return _is_ipv4(rest) and (groups + 2 < 8 or not ellipsis)
        groups += 1
        rest = rest[digits:]
        if not rest:
            break
        if rest[:1] != b":" or len(rest) == 1:
            return False
        rest = rest[1:]
        if rest[:1] == b":":
            if ellipsis:
                return False
            ellipsis, rest = True, rest[1:]
            if not rest:
                break
    if rest:
        return False
    return groups < 8 if ellipsis else groups == 8


def _is_ipv4(text: bytes) -> bool:
    """Go's `parseIPv4Fields` accepts `text`: four decimal fields of 0-255, no leading zero."""
    fields = text.split(b".")
    return len(fields) == 4 and all(
        0 < len(field) <= 3 and field.isdigit() and int(field) <= 255
        and (field == b"0" or not field.startswith(b"0"))
        for field in fields)
