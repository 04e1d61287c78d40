"""The old home of `RunShadows`, kept for users' imports: it lives in `frontier_rft.shadow`
(`live`), beside the rule, the replay and the log readers."""

from __future__ import annotations

from frontier_rft.shadow.live import SHADOW_FILE, RunShadows

__all__ = ["SHADOW_FILE", "RunShadows"]
