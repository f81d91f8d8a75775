"""Whole-gang placement search: a bounded, deterministic backtracking search over members' nodes.

Layer: planner core (pure; NumPy). Used when placing members one by one in member order fails
for a gang whose members differ (sizes, filters, host ports): members constrain each other, so
the gang is solved together. Members are tried largest first (dominant share of the largest
free amount, then most host ports), each on its candidate nodes best-ranked first (ties: lowest
row), backtracking on failure, until a placement of at least `need` members is found, the
search space is exhausted (no placement exists), or the step budget runs out.

Pruning, each sound (it never drops the last placement that exists):
- capacity: when no member may be left out any more, the members still to place must fit in
  the summed free capacity of the nodes any of them may use;
- interchangeable members (same requests, filters and ports) take nodes in non-decreasing row
  order (unless the fence is order-dependent, as topology spread is: which members came first
  decides where the next may go), and the ones left out come last;
- interchangeable nodes (same free capacity, same filter results for every member, no host
  port in use, the same side of every interchangeable-member bound; with inter-pod affinity,
  the same topology domains or each alone in its own and no member placed there) are tried
  once.

Never mutates anything it does not restore: capacity taken while searching is given back before
it returns; the caller takes the capacity of the placement it returns. Never reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from services.contracts.events import HostPort
from services.fit import filters
from services.planner.core.capacity import BoolArray, FloatArray, IntArray

_NO_ROWS: IntArray = np.zeros(0, dtype=np.int64)
_BITS_BETWEEN_RENUMBERING = 40
"""Shape bits added to node class ids between dense renumberings: ids stay below
rows * 2**40, inside int64 for up to 2**23 nodes."""

Rank = Callable[[int, IntArray], FloatArray]
"""Preference of member `m` (position in the member list) for each of `rows` (higher first)."""
UsedPorts = Callable[[int], tuple[HostPort, ...]]
"""The host ports in use on a row before the search (other pods, bound or reserved)."""
Fence = Callable[[int, list[tuple[int, int]]], BoolArray]
"""The rows member `m` may take given the (member, row) placements made so far (inter-pod
affinity: members placed earlier count as pods on their nodes)."""


class Member:
    """What the search needs of one member: its request, where it may go, its host ports.

    Shapes: `vec[col]` the request (a column vector of the capacity array), `cols` the columns
    it asks for; `allowed[row]` the nodes its other filters accept; `shape` equal for members
    that are interchangeable; `extra[col]` what it adds, once placed, to the amounts only
    `rank` reads (`solve`'s `counted`: the non-zero extra of NodeResourcesFit's score), or None.
    """

    def __init__(self, vec: IntArray, cols: list[int], allowed: BoolArray,
                 ports: tuple[HostPort, ...], shape: int, extra: IntArray | None = None) -> None:
        self.vec = vec
        self.extra = extra
        self.cols = cols
        self.allowed = allowed
        self.ports = ports
        self.shape = shape


class Outcome:
    """The search's result. Shapes: `rows[m]` the row of member `m`, None if left out; `rows`
    itself None when no placement was found; `order` the members in the order the search
    placed them (what `fence` judged each against). `steps` members tried on a node;
    `is_exhausted` when the budget ran out before the search space did."""

    def __init__(self, rows: list[int | None] | None, steps: int, is_exhausted: bool,
                 order: list[int] | None = None) -> None:
        self.rows = rows
        self.steps = steps
        self.is_exhausted = is_exhausted
        self.order = order or []


class _Frame:
    """One level of the depth-first search: a member, its candidate rows, the next one to try.

    Shapes: `ranked` the candidate rows best first; `distinct` the same without interchangeable
    rows, computed only once the first candidate failed (most levels never need it).
    """

    def __init__(self, member: int, ranked: IntArray, may_skip: bool) -> None:
        self.member = member
        self.ranked = ranked
        self.distinct: IntArray | None = None
        self.next = 0
        self.may_skip = may_skip
        self.has_skipped = False
        self.row: int | None = None
        self.is_skipping = False
        self.previous_bound: int | None = None

    def candidate(self, search: _Search) -> int | None:
        """The next row to try (the search is back in this level's state), or None."""
        if self.next and self.distinct is None:
            self.distinct = search.distinct(self.ranked)
        rows = self.ranked if self.distinct is None else self.distinct
        return int(rows[self.next]) if self.next < len(rows) else None


class _Search:
    """The mutable state of one search (see `solve`)."""

    def __init__(self, fit: IntArray, others: Sequence[IntArray], members: list[Member],
                 rank: Rank, used_ports: UsedPorts, port_rows: list[int],
                 fence: tuple[Fence, IntArray] | None = None,
                 order: list[int] | None = None, counted: IntArray | None = None) -> None:
        self.fit, self.others, self.members, self.rank = fit, others, members, rank
        self.counted = counted
        self.fence = fence
        self.placed: list[tuple[int, int]] = []
        """(member, row) of every member placed, in placement order (for `fence`)."""
        self.used_ports = used_ports
        self.port_rows = set(port_rows)
        self.placed_ports: dict[int, list[HostPort]] = {}
        self.order = largest_first(fit, members) if order is None else order
        self.node_class: IntArray | None = None
        """Per row, equal for rows every member's filters treat alike (on first need)."""
        union = np.zeros(fit.shape[1], dtype=np.bool_)
        for member in members:
            union |= member.allowed
        self.avail: IntArray = np.maximum(fit[:, union], 0).sum(axis=1)
        demand = [np.zeros(fit.shape[0], dtype=np.int64)]
        for position in reversed(self.order):
            demand.append(demand[-1] + members[position].vec)
        self.demand: list[IntArray] = demand[::-1]
        """`demand[d]`: what members `order[d:]` request together."""
        self.last_row: dict[int, int] = {}
        self.keeps_row_order = True
        """Whether interchangeable members take rows in non-decreasing order (see `solve`)."""
        self.skipped_shapes: set[int] = set()

    def take(self, member: int, row: int, sign: int) -> None:
        vec = self.members[member].vec
        self.fit[:, row] -= sign * vec
        for array in self.others:
            array[:, row] -= sign * vec
        extra = self.members[member].extra
        if extra is not None and self.counted is not None:
            self.counted[:, row] += sign * extra
        self.avail -= sign * vec
        if sign > 0:
            self.placed.append((member, row))
        else:
            self.placed.remove((member, row))
        ports = self.members[member].ports
        if ports and sign > 0:
            self.placed_ports.setdefault(row, []).extend(ports)
        elif ports:
            held = self.placed_ports[row]
            del held[len(held) - len(ports):]
            if not held:
                del self.placed_ports[row]

    def candidates(self, depth: int) -> IntArray:
        """The rows member `order[depth]` may take now, best-ranked first."""
        position = self.order[depth]
        member = self.members[position]
        if member.shape in self.skipped_shapes:
            return _NO_ROWS
        mask = member.allowed.copy()
        for col in member.cols:
            mask &= self.fit[col] >= member.vec[col]
        if member.ports:
            for row in sorted(self.port_rows | set(self.placed_ports)):
                if mask[row] and filters.node_ports(member.ports, self._ports_on(row)):
                    mask[row] = False
        if self.fence is not None and mask.any():
            mask &= self.fence[0](position, self.placed)
        rows: IntArray = np.flatnonzero(mask)
        bound = self.last_row.get(member.shape)
        if bound is not None:
            rows = rows[rows >= bound]
        if len(rows) <= 1:
            return rows
        ranked: IntArray = rows[np.lexsort((rows, -self.rank(position, rows)))]
        return ranked

    def _ports_on(self, row: int) -> tuple[HostPort, ...]:
        return self.used_ports(row) + tuple(self.placed_ports.get(row, ()))

    def distinct(self, ranked: IntArray) -> IntArray:
        """`ranked` without rows interchangeable with an earlier one (module docstring)."""
        if len(ranked) <= 1:
            return ranked
        if self.node_class is None:
            self.node_class = _node_classes(self.members, self.fit.shape[1])
        bounds = np.array(sorted(self.last_row.values()), dtype=np.int64)
        with_ports = np.array(sorted(self.port_rows | set(self.placed_ports)), dtype=np.int64)
        has_ports = np.isin(ranked, with_ports)
        columns = [self.node_class[ranked], self.fit[:, ranked].T,
                   np.searchsorted(bounds, ranked, side="right"),
                   np.where(has_ports, ranked, -1)]
        if self.fence is not None:
            has_members = np.isin(ranked, np.array(sorted({row for _, row in self.placed}),
                                                   dtype=np.int64))
            columns += [self.fence[1][ranked], np.where(has_members, ranked, -1)]
        keys = np.column_stack(columns)
        return ranked[_first_of_each_key(keys)]

    def frame(self, depth: int, may_skip: bool) -> _Frame:
        """The search level of member `order[depth]` (`may_skip`: it may be left out)."""
        is_bounded_out = not may_skip and bool((self.demand[depth] > self.avail).any())
        rows = _NO_ROWS if is_bounded_out else self.candidates(depth)
        return _Frame(self.order[depth], rows, may_skip)


def solve(fit: IntArray, members: list[Member], need: int, budget_steps: int, rank: Rank,
          used_ports: UsedPorts, port_rows: list[int],
          others: Sequence[IntArray] = (), fence: tuple[Fence, IntArray] | None = None,
          is_order_free: bool = True, leading: Sequence[bool] = (),
          counted: IntArray | None = None) -> Outcome:
    """A placement of at least `need` of `members` (as many as the first one found places) on
    the capacity `fit`, or None (module docstring).

    Shapes: `fit[col, row]` free capacity, decremented while searching and restored before
    returning (as is every array in `others`, which only `rank` reads, and `counted`, which
    only `rank` reads too, counted up by each member's `extra`); `port_rows` the rows
    with host ports in use (`used_ports` gives them); `fence` the inter-pod affinity filter and
    its row classes (`affinity.fence`), None when it rejects nothing; `is_order_free` False
    when the fence's verdict for a member depends on the order members were placed in (then
    interchangeable members may take rows in any order). Units: those of `fit`.

    Member order matters only when the fence's verdicts depend on it: then, when the first
    pass (largest first) finds nothing within the budget, further passes share what is left of
    it: the `leading` members first (e.g. those without topology spread constraints, so those
    with constraints are judged against them), then the members' own order (the order one by
    one placement and kube-scheduler's queue take them). A review found gangs that only those
    orders place; no other order is tried.
    """
    outcome = _solve(fit, members, need, budget_steps, rank, used_ports, port_rows, others,
                     fence, is_order_free, None, counted)
    if outcome.rows is not None or outcome.is_exhausted or is_order_free:
        return outcome
    default = largest_first(fit, members)
    orders = [sorted(default, key=lambda position: not leading[position])] if leading else []
    orders.append(list(range(len(members))))
    steps, tried = outcome.steps, [default]
    for order in orders:
        if order in tried:
            continue
        tried.append(order)
        outcome = _solve(fit, members, need, budget_steps - steps, rank, used_ports,
                         port_rows, others, fence, is_order_free, order, counted)
        steps += outcome.steps
        if outcome.rows is not None or outcome.is_exhausted:
            break
    return Outcome(outcome.rows, steps, outcome.is_exhausted, outcome.order)


def _solve(fit: IntArray, members: list[Member], need: int, budget_steps: int, rank: Rank,
           used_ports: UsedPorts, port_rows: list[int], others: Sequence[IntArray],
           fence: tuple[Fence, IntArray] | None, is_order_free: bool,
           order: list[int] | None, counted: IntArray | None = None) -> Outcome:
    """One pass of `solve` with members in `order` (None: `largest_first`)."""
    search = _Search(fit, others, members, rank, used_ports, port_rows, fence, order, counted)
    search.keeps_row_order = is_order_free
    if not members:
        return Outcome([], 0, False)
    spare = len(members) - need
    stack = [search.frame(0, spare > 0)]
    steps, skipped, is_found, is_exhausted = 0, 0, False, False
    while stack:
        frame = stack[-1]
        skipped -= _undo(search, frame)
        row = frame.candidate(search)
        if row is not None:
            if steps >= budget_steps:
                is_exhausted = True
                break
            steps += 1
            _choose(search, frame, row)
        elif frame.may_skip and not frame.has_skipped:
            _choose(search, frame, None)
            skipped += 1
        else:
            stack.pop()  # every choice failed: the parent tries its next one
            continue
        if len(stack) == len(members):
            is_found = True
            break
        stack.append(search.frame(len(stack), spare > skipped))
    rows: list[int | None] | None = None
    if is_found:
        rows = [None] * len(members)
        for frame in stack:
            rows[frame.member] = frame.row
    order = [frame.member for frame in stack] if is_found else []
    for frame in reversed(stack):
        _undo(search, frame)
    return Outcome(rows, steps, is_exhausted, order)


def _choose(search: _Search, frame: _Frame, row: int | None) -> None:
    """Take `row` (None: leave the member out) for `frame`'s member."""
    shape = search.members[frame.member].shape
    if row is None:
        frame.has_skipped = frame.is_skipping = True
        search.skipped_shapes.add(shape)
        return
    frame.next += 1
    frame.row = row
    search.take(frame.member, row, 1)
    if search.keeps_row_order:
        frame.previous_bound = search.last_row.get(shape)
        search.last_row[shape] = row


def _undo(search: _Search, frame: _Frame) -> int:
    """Give back what `frame`'s current choice took; 1 if that choice was a skip, else 0."""
    shape = search.members[frame.member].shape
    if frame.row is not None:
        search.take(frame.member, frame.row, -1)
        if frame.previous_bound is None:
            search.last_row.pop(shape, None)
        else:
            search.last_row[shape] = frame.previous_bound
        frame.row = None
        return 0
    if frame.is_skipping:
        frame.is_skipping = False
        search.skipped_shapes.discard(shape)
        return 1
    return 0


def largest_first(fit: IntArray, members: list[Member]) -> list[int]:
    """Members largest first: dominant share of the largest free amount per resource, then
    most host ports, then shape and position (interchangeable members adjacent)."""
    largest = np.maximum(fit.max(axis=1, initial=0), 1).astype(np.float64)
    def key(position: int) -> tuple[float, int, int, int]:
        member = members[position]
        share = max((float(member.vec[col]) / largest[col] for col in member.cols), default=0.0)
        return (-share, -len(member.ports), member.shape, position)
    return sorted(range(len(members)), key=key)


def _node_classes(members: list[Member], rows: int) -> IntArray:
    """Per row, an id equal for rows that every member's filters treat alike: the rows' bits
    of each shape's `allowed` (one mask per shape), renumbered densely before they overflow."""
    masks: dict[int, BoolArray] = {}
    for member in members:
        masks.setdefault(member.shape, member.allowed)
    classes: IntArray = np.zeros(rows, dtype=np.int64)
    for count, shape in enumerate(sorted(masks)):
        if count and count % _BITS_BETWEEN_RENUMBERING == 0:
            classes = np.unique(classes, return_inverse=True)[1].reshape(-1).astype(np.int64)
        classes = classes * 2 + masks[shape]
    return classes


def _first_of_each_key(keys: IntArray) -> IntArray:
    """Positions of the rows of `keys` equal to no earlier row, in order (a stable sort by
    every column groups equal rows with the earliest first)."""
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    starts = np.ones(len(order), dtype=np.bool_)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    kept: IntArray = np.sort(order[starts])
    return kept
