"""`subjects.token`: the cached token equals the regex substitution, and the cache is bounded."""

from __future__ import annotations

from services.contracts import subjects

TEXTS = ["ml", "w-0", "a.b", "a*b>c", "tab\tspace name", "", "...", "x" * 300, "ünï.cödé"]


def _uncached(text: str) -> str:
    return subjects._UNSAFE.sub("_", text) or subjects.CLUSTER_SCOPE


def test_cached_token_equals_the_substitution_on_first_and_repeated_calls() -> None:
    for text in TEXTS * 2:
        assert subjects.token(text) == _uncached(text)


def test_token_cache_is_bounded_and_hit_by_repeated_texts() -> None:
    subjects.token.cache_clear()
    subjects.token("ns-a")
    subjects.token("ns-a")
    info = subjects.token.cache_info()
    assert info.maxsize == subjects.TOKEN_CACHE_SIZE
    assert (info.hits, info.misses) == (1, 1)


def test_decisions_subject_uses_the_tokens() -> None:
    assert (subjects.decisions_subject("gangsched", "Placement", "my.ns", "g*1")
            == "gangsched.decisions.Placement.my_ns.g_1")
