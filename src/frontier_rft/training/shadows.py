"""The old home of the reward log, its replay and the reference trainer's shadows, kept for
users' imports: they live in `frontier_rft.shadow` (`replay`, `live`, `rule`)."""

from __future__ import annotations

from frontier_rft.shadow.live import build_shadow, load_shadow, shadow_config
from frontier_rft.shadow.replay import (
    CAVEAT,
    MAX_LINE_CHARS,
    MAX_LOG_BYTES,
    MAX_POOL,
    REWARD_LOG,
    RewardStep,
    length_unit,
    read_reward_log,
    read_shadow_summary,
    record_shape,
    replay,
    replay_table,
    reward_record,
    tokens_note,
)
from frontier_rft.shadow.rule import save_shadow

__all__ = [
    "CAVEAT",
    "MAX_LINE_CHARS",
    "MAX_LOG_BYTES",
    "MAX_POOL",
    "REWARD_LOG",
    "RewardStep",
    "build_shadow",
    "length_unit",
    "load_shadow",
    "read_reward_log",
    "read_shadow_summary",
    "record_shape",
    "replay",
    "replay_table",
    "reward_record",
    "save_shadow",
    "shadow_config",
    "tokens_note",
]
