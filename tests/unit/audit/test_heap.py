"""`heap.LongLived` freezes what a replay built every so many events and hands it back."""

from __future__ import annotations

import gc

from services.audit import heap


def test_survivors_are_frozen_every_n_events_and_unfrozen_at_the_end() -> None:
    gc.unfreeze()
    kept = [[index] for index in range(1000)]  # objects a replay would keep
    with heap.LongLived(every_events=500) as held:
        held.advance(499)
        assert gc.get_freeze_count() == 0
        held.advance(1)
        frozen = gc.get_freeze_count()
        assert frozen >= len(kept)
        held.advance(499)
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0


def test_an_error_inside_still_unfreezes() -> None:
    try:
        with heap.LongLived(every_events=1) as held:
            held.advance(1)
            raise RuntimeError("replay failed")
    except RuntimeError:
        pass
    assert gc.get_freeze_count() == 0
