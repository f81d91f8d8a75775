"""Kubernetes EBS volume IDs read as `KubernetesVolumeIDToEBSVolumeID` reads them
(`services.watcher.ebs_volume_ids`), URLs as Go's `net/url.Parse` parses them.

Each expected value below is what csi-translation-lib v0.36.3, built with Go 1.26, returns for
the same ID (None: an error)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.watcher.ebs_volume_ids import ebs_volume_id


@pytest.mark.parametrize(("kubernetes_id", "expected"), [
    ("vol-0123456789abcdef0", "vol-0123456789abcdef0"),
    ("", ""),  # a bare ID is kept, whatever it holds
    ("not/an id", "not/an id"),
    ("AWS://z/vol-1", "AWS://z/vol-1"),  # the prefix is case-sensitive: a bare ID
    ("aws://us-east-1a/vol-1", "vol-1"),
    ("aws:///vol-1", "vol-1"),
    ("aws://z//vol-1//", "vol-1"),  # slashes trimmed both sides
    ("aws://z/vol-1?x=1#frag", "vol-1"),  # query and fragment cut off
    ("aws://z/vol-%41", "vol-A"),  # the path percent-decoded
    ("aws://z/vol-%0a", "vol-\n"),  # `[^/]*` takes a newline, `$` is the end
    ("aws://z/vol-%ff", "vol-\\xff"),  # no UTF-8: its bytes escaped
    ("aws://user:pw@z:8080/vol-1", "vol-1"),
    ("aws://z%C3%A9/vol-1", "vol-1"),  # a host may escape non-ASCII bytes
    ("aws://[fe80::1%25en0]:80/vol-1", "vol-1"),
    ("aws://[::ffff:1.2.3.4]/vol-1", "vol-1"),
    ("aws://[fe80::1%25a%25b]/vol-1", "vol-1"),  # netip's zone may hold a %
])
def test_bare_ids_are_kept_and_urls_give_their_trimmed_decoded_path(
        kubernetes_id: str, expected: str) -> None:
    assert ebs_volume_id(kubernetes_id) == expected


@pytest.mark.parametrize("kubernetes_id", [
    "aws://",
    "aws://vol-1",  # the ID is the host: the path is empty
    "aws://z/other/vol-1",  # a slash left inside
    "aws://z/volume-1",
    "aws://z/vol-1%2Fx",  # `/` decoded inside the ID
    "aws://z/vol-%zz",  # a malformed escape
    "aws://z/vol-1#%zz",  # in the fragment too
    "aws://z/vol-1\x01",  # a control character
    "aws://z z/vol-1",  # a byte a host may not hold
    "aws://z%41/vol-1",  # an escaped ASCII byte in a host
    "aws://z:80x/vol-1",  # a port that is no number
    "aws://u{ser@z/vol-1",  # user info Go refuses
    "aws://z[/vol-1",
    "aws://[::1/vol-1",  # no closing bracket
    "aws://[1.2.3.4]/vol-1",  # an IPv4 literal
    "aws://[fe80::1%25]/vol-1",  # an empty zone
    "aws://[fe80::1%25%C3]/vol-1",  # a zone escaping a byte a host may not hold
    "aws://[1::2:3:4:5:6:7:8]/vol-1",  # `::` standing for no group
    "aws://[::01.2.3.4]/vol-1",  # an IPv4 field with a leading zero
])
def test_urls_go_refuses_or_whose_path_is_no_ebs_id_cannot_be_translated(
        kubernetes_id: str) -> None:
    assert ebs_volume_id(kubernetes_id) is None


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aws:/[]%25@?#.vol-1\x00é ")), max_size=30)
       .map(lambda text: "aws://" + text))
def test_any_url_is_read_without_raising(kubernetes_id: str) -> None:
    found = ebs_volume_id(kubernetes_id)
    assert found is None or (found.startswith("vol-") and "/" not in found)
