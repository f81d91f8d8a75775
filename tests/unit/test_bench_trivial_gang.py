"""The trivial binders' gate (`bench.cluster.binder.GangGate`): the gang-aware one binds a
gang whole the moment its last member and its size are known, never part of one."""

from __future__ import annotations

from bench.cluster.binder import GangGate


def test_a_gang_is_bound_whole_once_its_last_member_is_seen() -> None:
    gate = GangGate(slots=10, gangs=True)
    assert gate.gang("g1", 3) == []
    assert gate.pod("g1-0", "g1") == []
    assert gate.pod("g1-1", "g1") == []
    assert gate.pod("g1-2", "g1") == [("g1-0", 0), ("g1-1", 1), ("g1-2", 2)]


def test_members_seen_before_their_podgroup_wait_for_its_size() -> None:
    gate = GangGate(slots=10, gangs=True)
    assert gate.pod("g1-0", "g1") == []
    assert gate.pod("g1-1", "g1") == []
    assert gate.gang("g1", 2) == [("g1-0", 0), ("g1-1", 1)]


def test_a_gang_the_free_slots_cannot_hold_is_never_bound_in_part() -> None:
    gate = GangGate(slots=4, gangs=True)
    gate.gang("big", 3)
    gate.gang("small", 2)
    assert gate.pod("small-0", "small") == []
    assert gate.pod("small-1", "small") == [("small-0", 0), ("small-1", 1)]
    taken = [gate.pod(f"big-{i}", "big") for i in range(3)]
    assert taken == [[], [], []]  # 3 members, 2 free slots: none bound
    assert gate.pod("lone", None) == [("lone", 2)]  # the slots it left stay free
    assert gate.pod("big-3", "big") == [("big-3", 3)]  # decided gang: a late member goes alone
    assert gate.pod("lone-2", None) == []  # full


def test_slots_are_taken_in_order_so_no_node_gets_more_than_its_share() -> None:
    gate = GangGate(slots=6, gangs=True)
    gate.gang("a", 2)
    gate.gang("b", 2)
    slots = [slot for name, gang in [("a-0", "a"), ("b-0", "b"), ("b-1", "b"), ("a-1", "a")]
             for _, slot in gate.pod(name, gang)]
    assert slots == [0, 1, 2, 3]  # b completes first and takes 0-1; a takes 2-3


def test_without_gangs_every_pod_is_bound_alone_until_the_slots_run_out() -> None:
    gate = GangGate(slots=2, gangs=False)
    assert gate.pod("g1-0", "g1") == [("g1-0", 0)]
    assert gate.pod("x", None) == [("x", 1)]
    assert gate.pod("g1-1", "g1") == []


def test_a_pod_listed_again_is_not_counted_twice() -> None:
    gate = GangGate(slots=10, gangs=True)
    gate.gang("g1", 2)
    assert gate.pod("g1-0", "g1") == []
    assert gate.pod("g1-0", "g1") == []  # the LIST after a failed watch shows it again
    assert gate.pod("g1-1", "g1") == [("g1-0", 0), ("g1-1", 1)]
    assert gate.pod("g1-1", "g1") == []
