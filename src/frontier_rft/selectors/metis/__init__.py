"""METIS, the policy judging its own curriculum: the selector and its judge, one folder.

- `selector`: top-B of m*B candidates by the judge's predicted reward variance, the judge's
  REINFORCE rewards and the records a trainer trains the judge on;
- `judge`: the judge prompt, its strict answer parser and `HeuristicJudge`, the non-LLM
  stand-in.
"""

from __future__ import annotations

from frontier_rft.selectors.metis.selector import (
    HeuristicJudge,
    Judge,
    JudgeRecord,
    METISConfig,
    METISSelector,
)

__all__ = ["HeuristicJudge", "Judge", "JudgeRecord", "METISConfig", "METISSelector"]
