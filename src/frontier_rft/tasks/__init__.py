"""Task generators and verifiers (countdown, math, reasoning-gym, code), one schema."""

from frontier_rft.tasks.base import TaskItem, Verifier, load_jsonl, pool_from_items, save_jsonl

__all__ = ["TaskItem", "Verifier", "load_jsonl", "pool_from_items", "save_jsonl"]
