"""What the real standard testbed measured, per selector: the verdicts a simulated table is read
against.

Held-out pass@1 at the end of the real-RL benchmark (`frontier bench-rl --scale standard`:
tiny Llama, GRPO on Countdown, 360 steps x 16 prompts x 8 rollouts, 5 paired seeds), minus
uniform's, classed by its bootstrap 95% CI: 'helps' (above 0), 'hurts' (below 0) or 'noise'
(the CI holds 0). Sources: the GPU runs (benchmarks/results/real_rl_gpu*_full.json) and the
CPU runs of the run ledger (benchmarks/results/real_rl_standard_cpu_full.json, entries whose
ledger definition is today's only), docs/results/real_rl.md; tests/test_real_rl_verdicts.py
checks this table against those files.
"""

from __future__ import annotations

from typing import Any

__all__ = ["REAL_RL_DOC", "REAL_RL_VERDICTS", "SCENARIO_REGIME", "real_rl_context"]

REAL_RL_DOC = "docs/results/real_rl.md"
"""Where the real-RL results are explained (path in the frontier-rft repository)."""

REAL_RL_VERDICTS: dict[str, dict[str, str]] = {
    "512": {
        "uniform+dapo": "helps",
        "greso": "noise",
        "frontier": "noise",
        "metis": "noise",
        "sec": "noise",
        "bots": "noise",
        "pcl": "hurts",
        "dots": "hurts",
        "prioritized": "hurts",
    },
    "1280": {
        "uniform+dapo": "helps",
        "bots": "noise",
        "frontier": "noise",
        "sec": "noise",
        "pcl": "noise",
        "dots": "hurts",
        "prioritized": "hurts",
    },
}
"""Real held-out verdict per simulated label ('uniform+dapo' is the real 'dapo' entry: uniform
inside DAPO's fixed 3x dynamic sampling), by real pool size."""

SCENARIO_REGIME = {"small-pool": "512", "large-pool": "1280"}
"""The real pool each calibrated scenario mirrors (512 prompts for 11 epochs; 1,280 for 4.5)."""


def real_rl_context(scenario: str, labels: list[str], modified: bool = False) -> dict[str, Any]:
    """The real-RL verdicts that apply to a simulated table of `labels` on `scenario`: a
    calibrated scenario's own pool's; for any other, or a `modified` one (fields overridden),
    the verdict both real pools agree on, else 'noise'. Labels never run on real RL get none."""
    pool = None if modified else SCENARIO_REGIME.get(scenario)
    if pool is not None:
        verdicts = REAL_RL_VERDICTS[pool]
    else:
        small, large = REAL_RL_VERDICTS["512"], REAL_RL_VERDICTS["1280"]
        verdicts = {k: v if large.get(k) == v else "noise" for k, v in small.items()}
    return {
        "calibrated": pool is not None,
        "modified": modified,
        "pool": pool,
        "doc": REAL_RL_DOC,
        "verdicts": {label: verdicts[label] for label in labels if label in verdicts},
    }
