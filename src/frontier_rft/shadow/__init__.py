"""Shadows: rules followed beside a run that change nothing it trains (docs/shadow.md).

One room for the whole feature: `rule` (what a shadow is: `ShadowConfig`, `Shadow`, its
keep rule, counts and state file), `live` (shadows built on a run's pool and fed each step:
`build_shadow`, `load_shadow`, and `RunShadows`, what the TRL, verl, SkyRL and tinker
adapters hold), `replay` (the reward log a run writes and `frontier shadow replay` reads
back), `foreign_logs` (TRL's completion logs and verl's rollout dumps, read bounded into
steps), with `trl_table` (TRL's completions table: its reward columns and rows) and
`log_reading` (what reading those logs shares: their files and cells). The reference
trainer, the adapters and the CLI call these; none of them holds shadow logic.
(`replay.replay`, the function, is not re-exported here: its name is its module's.)
"""

from __future__ import annotations

from frontier_rft.shadow.live import (
    SHADOW_FILE,
    RunShadows,
    build_shadow,
    load_shadow,
    shadow_config,
)
from frontier_rft.shadow.replay import (
    REWARD_LOG,
    RewardStep,
    read_reward_log,
    read_shadow_summary,
    replay_table,
    reward_record,
)
from frontier_rft.shadow.rule import (
    PASS_KEYS,
    SUMMARY_KEY,
    Shadow,
    ShadowConfig,
    check_shadow_rules,
    passes_table,
    save_shadow,
)

__all__ = [
    "PASS_KEYS",
    "REWARD_LOG",
    "SHADOW_FILE",
    "SUMMARY_KEY",
    "RewardStep",
    "RunShadows",
    "Shadow",
    "ShadowConfig",
    "build_shadow",
    "check_shadow_rules",
    "load_shadow",
    "passes_table",
    "read_reward_log",
    "read_shadow_summary",
    "replay_table",
    "reward_record",
    "save_shadow",
    "shadow_config",
]
