"""Task generators and verifiers (countdown, math, reasoning-gym, code), one schema.

Submodules import their optional dependencies lazily: `tasks.math_tasks` needs the
`math` extra, `tasks.reasoning_gym` the `reasoning-gym` extra, `tasks.code` bubblewrap.
"""

from frontier_rft.tasks.base import TaskItem, Verifier, load_jsonl, pool_from_items, save_jsonl
from frontier_rft.tasks.countdown import (
    CountdownVerifier,
    countdown_demonstration,
    generate_countdown,
    solve_countdown,
)
from frontier_rft.tasks.taxonomy import classify_countdown_failure

__all__ = [
    "CountdownVerifier",
    "TaskItem",
    "Verifier",
    "classify_countdown_failure",
    "countdown_demonstration",
    "generate_countdown",
    "load_jsonl",
    "pool_from_items",
    "save_jsonl",
    "solve_countdown",
]
