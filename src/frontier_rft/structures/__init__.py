"""Priority structures behind the prioritized-replay selector (numpy only, no torch).

- `MaxHeap`: binary max-heap with `extract_max` / `insert` and batched pop / push.
- `IndexedMaxHeap`: the same plus a position map: `contains`, arbitrary deletion,
  priority change (needed for uniform exploration from the heap).
- `TournamentTree`: the same order with vectorised batched top-k / insert / delete,
  for large pools where Python-level sifting is too slow.
- `SumTree`: priority-proportional sampling (with and without replacement).
- `TimestampHeap`: min-heap keyed by the step of the last test (solved / unsolved pools).

Every priority entry carries a unique integer tie-breaker, so equal priorities never
compare payloads; every structure exports and imports its arrays for exact resume.
"""

from __future__ import annotations

from frontier_rft.structures.max_heap import IndexedMaxHeap, MaxHeap
from frontier_rft.structures.sum_tree import SumTree
from frontier_rft.structures.timestamp_heap import TimestampHeap
from frontier_rft.structures.tournament import TournamentTree

__all__ = ["IndexedMaxHeap", "MaxHeap", "SumTree", "TimestampHeap", "TournamentTree"]
