"""The iteration order of a ``java.util.HashMap`` (JDK 8+), emulated: pure, no I/O.

kafka-configs prints what its Java client put in ``HashMap``s, so matching it byte for byte means knowing where
each key lands. What decides the order:

* the table is allocated at ``tableSizeFor(initialCapacity)`` buckets on the first put and doubles when the size
  passes 0.75 x its length;
* a key goes to bucket ``(h ^ h >>> 16) & (length - 1)``; a bucket is a list in insertion order, and a resize
  splits each bucket into a low and a high one keeping the relative order;
* a bucket reaching 9 nodes makes the table double instead while it has fewer than 64 buckets, and otherwise
  becomes a red-black tree: its nodes stay linked in their order but the tree's root is moved to the front, and
  a key added later is linked right after its parent in the tree. A tree split by a resize into halves of 6
  or fewer nodes becomes a list again; a half keeps its tree when the other half is empty, and is rebuilt
  as a new tree otherwise.

Keys with equal hashes are ordered in a tree by ``compareTo`` when the keys are ``Comparable`` (``String``), and
otherwise by ``System.identityHashCode``, which no one can reproduce: the layout then says it is not exact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

K = TypeVar("K")

TREEIFY_THRESHOLD = 8
UNTREEIFY_THRESHOLD = 6
MIN_TREEIFY_CAPACITY = 64


class _Node(Generic[K]):
    __slots__ = ("hash", "key", "left", "next", "parent", "prev", "red", "right")

    def __init__(self, key: K, h: int) -> None:
        self.key = key
        self.hash = h  # the spread hash, a signed 32-bit int as Java compares it
        self.next: _Node[K] | None = None
        self.prev: _Node[K] | None = None
        self.parent: _Node[K] | None = None
        self.left: _Node[K] | None = None
        self.right: _Node[K] | None = None
        self.red = False


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    s = h ^ (h >> 16)
    return s - (1 << 32) if s & 0x80000000 else s


def table_size_for(n: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= n (1 for n <= 1)."""
    cap = 1
    while cap < n:
        cap *= 2
    return cap


_OTHER_SIDE = {"left": "right", "right": "left"}


def _rotate(root: Any, p: Any, toward: str) -> Any:
    """``TreeNode.rotateLeft`` (``toward="left"``) or ``rotateRight``: ``p``'s child on the other side takes its
    place; the new root."""
    away = _OTHER_SIDE[toward]
    c = getattr(p, away) if p is not None else None
    if c is not None:
        inner = getattr(c, toward)
        setattr(p, away, inner)
        if inner is not None:
            inner.parent = p
        pp = c.parent = p.parent
        if pp is None:
            root = c
            c.red = False
        elif getattr(pp, toward) is p:
            setattr(pp, toward, c)
        else:
            setattr(pp, away, c)
        setattr(c, toward, p)
        p.parent = c
    return root


def _balance_insertion(root: Any, x: Any) -> Any:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        side = "left" if xp is xpp.left else "right"
        other = _OTHER_SIDE[side]
        uncle = getattr(xpp, other)
        if uncle is not None and uncle.red:
            uncle.red = False
            xp.red = False
            xpp.red = True
            x = xpp
        else:
            if x is getattr(xp, other):
                x = xp
                root = _rotate(root, x, side)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate(root, xpp, other)


class JavaHashMap(Generic[K]):
    """Insert-only emulation of ``new HashMap<>(initial_capacity)``; ``order()`` is its iteration order.

    ``compare`` orders two keys of equal hash as their ``compareTo`` would (``None``: the keys are not
    ``Comparable``, and a tree that has to order equal hashes makes the layout inexact).
    """

    def __init__(self, initial_capacity: int, compare: Callable[[K, K], int] | None = None) -> None:
        self.cap = table_size_for(initial_capacity)
        self.table: list[_Node[K] | None] = [None] * self.cap
        self.trees: set[int] = set()
        self.size = 0
        self.compare = compare
        self.exact = True

    # -- the parts of HashMap.putVal that decide where a node goes ----------------------------------------------

    def put(self, key: K, hash_code: int) -> None:
        """``put`` of a key not in the map yet."""
        h = _spread(hash_code)
        i = h & (self.cap - 1)
        p = self.table[i]
        if p is None:
            self.table[i] = _Node(key, h)
        elif i in self.trees:
            self._put_tree(i, key, h)
        else:
            bin_count = 0
            while p.next is not None:
                p = p.next
                bin_count += 1
            p.next = _Node(key, h)
            if bin_count >= TREEIFY_THRESHOLD - 1:
                self._treeify_bin(i)
        self.size += 1
        if self.size > int(self.cap * 0.75):
            self._resize()

    def order(self) -> list[K]:
        out = []
        for head in self.table:
            e = head
            while e is not None:
                out.append(e.key)
                e = e.next
        return out

    def _dir(self, key: K, h: int, p: _Node[K]) -> int:
        if p.hash > h:
            return -1
        if p.hash < h:
            return 1
        if self.compare is not None:
            d = self.compare(key, p.key)
            if d != 0:
                return d
        self.exact = False  # tieBreakOrder: System.identityHashCode
        return -1

    def _treeify_bin(self, i: int) -> None:
        if self.cap < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        e = self.table[i]
        prev = None
        while e is not None:  # TreeNodes linked both ways, in list order
            e.prev = prev
            prev = e
            e = e.next
        self._treeify(i)

    def _treeify(self, i: int) -> None:
        head = self.table[i]
        root: _Node[K] | None = None
        x = head
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                p = root
                while True:
                    d = self._dir(x.key, x.hash, p)
                    xp = p
                    p = p.left if d <= 0 else p.right  # type: ignore[assignment]
                    if p is None:
                        x.parent = xp
                        if d <= 0:
                            xp.left = x
                        else:
                            xp.right = x
                        root = _balance_insertion(root, x)
                        break
            x = nxt
        self.trees.add(i)
        self._move_root_to_front(root)

    def _move_root_to_front(self, root: _Node[K] | None) -> None:
        if root is None:
            return
        index = root.hash & (self.cap - 1)
        first = self.table[index]
        if root is not first:
            self.table[index] = root
            rp, rn = root.prev, root.next
            if rn is not None:
                rn.prev = rp
            if rp is not None:
                rp.next = rn
            if first is not None:
                first.prev = root
            root.next = first
            root.prev = None

    def _put_tree(self, i: int, key: K, h: int) -> None:
        root = self.table[i]
        assert root is not None
        while root.parent is not None:
            root = root.parent
        p = root
        while True:
            d = self._dir(key, h, p)
            xp = p
            p = p.left if d <= 0 else p.right  # type: ignore[assignment]
            if p is None:
                xpn = xp.next
                x = _Node(key, h)
                x.next = xpn
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                xp.next = x
                x.parent = x.prev = xp
                if xpn is not None:
                    xpn.prev = x
                self._move_root_to_front(_balance_insertion(root, x))
                return

    def _resize(self) -> None:
        old, old_cap, old_trees = self.table, self.cap, self.trees
        self.cap *= 2
        self.table = [None] * self.cap
        self.trees = set()
        for j, e in enumerate(old):
            if e is None:
                continue
            lo_head = lo_tail = hi_head = hi_tail = None
            lc = hc = 0
            while e is not None:
                nxt = e.next
                e.next = None
                if e.hash & old_cap == 0:
                    e.prev = lo_tail
                    if lo_tail is None:
                        lo_head = e
                    else:
                        lo_tail.next = e
                    lo_tail = e
                    lc += 1
                else:
                    e.prev = hi_tail
                    if hi_tail is None:
                        hi_head = e
                    else:
                        hi_tail.next = e
                    hi_tail = e
                    hc += 1
                e = nxt
            was_tree = j in old_trees
            for index, head, count, other in ((j, lo_head, lc, hi_head), (j + old_cap, hi_head, hc, lo_head)):
                if head is None:
                    continue
                self.table[index] = head
                if not was_tree or count <= UNTREEIFY_THRESHOLD:
                    continue  # a list (untreeify keeps the order)
                if other is not None:
                    self._treeify(index)
                else:
                    self.trees.add(index)  # the whole tree moved as it was


def java_hashmap_layout(
    items: Iterable[tuple[K, int]], initial_capacity: int, compare: Callable[[K, K], int] | None = None
) -> tuple[list[K], bool]:
    """(order, exact): the iteration order of ``new HashMap<>(initial_capacity)`` after ``put`` of each distinct
    (key, hashCode) in turn, and whether that is Java's order for certain (see the module docstring)."""
    m: JavaHashMap[K] = JavaHashMap(initial_capacity, compare)
    for key, h in items:
        m.put(key, h)
    return m.order(), m.exact


def java_string_compare(a: str, b: str) -> int:
    """``String.compareTo``: lexicographic by UTF-16 code unit."""
    ua, ub = a.encode("utf-16-be"), b.encode("utf-16-be")
    for i in range(0, min(len(ua), len(ub)), 2):
        ca, cb = (ua[i] << 8) | ua[i + 1], (ub[i] << 8) | ub[i + 1]
        if ca != cb:
            return ca - cb
    return (len(ua) - len(ub)) // 2
