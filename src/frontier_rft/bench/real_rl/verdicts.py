"""What the real standard testbed measured, per selector: the verdicts a simulated table is read
against.

Held-out pass@1 at the end of the real-RL benchmark (`frontier bench-rl --scale standard`:
tiny Llama, GRPO on Countdown, 360 steps x 16 prompts x 8 rollouts, 5 paired seeds), minus
uniform's, classed by its bootstrap 95% CI: 'helps' (above 0), 'hurts' (below 0) or 'noise'
(the CI holds 0). The table is data, verdicts.json beside this module (shipped with the
package): each verdict names the committed results files it was read from (GPU runs and the
run ledger's CPU runs, entries whose ledger definition is today's only; docs/results/real_rl.md
explains them), and tests/test_real_rl_verdicts.py recomputes every verdict and every
`RECOMMENDED` number from those files, so a stale table fails.

Verdicts are keyed by the bench-rl entry measured. A simulated entry gets the verdict of the
real entry that runs the same thing: the same selector, overrides and step sampler
(`TrainConfig.sampler` and `.sampler_config`, which both kinds of entry give: `run_spec`),
whatever each is labelled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from frontier_rft.bench.real_rl.entries import EFFECT_ENTRIES, MAIN_ENTRIES, BenchEntry
from frontier_rft.simulation.runner import Entry

__all__ = [
    "REAL_RL_DOC",
    "REAL_RL_SOURCES",
    "REAL_RL_VERDICTS",
    "RECOMMENDED",
    "SCENARIO_REGIME",
    "Evidence",
    "real_rl_context",
    "run_spec",
]

_DATA: dict[str, Any] = json.loads(
    files("frontier_rft.bench.real_rl").joinpath("verdicts.json").read_text(encoding="utf-8")
)

REAL_RL_DOC: str = _DATA["doc"]
"""Where the real-RL results are explained (path in the frontier-rft repository)."""

REAL_RL_VERDICTS: dict[str, dict[str, str]] = {
    pool: {label: v["verdict"] for label, v in table.items()}
    for pool, table in _DATA["verdicts"].items()
}
"""Real held-out verdict per bench-rl entry, by real pool size."""

REAL_RL_SOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    pool: {label: tuple(v["sources"]) for label, v in table.items()}
    for pool, table in _DATA["verdicts"].items()
}
"""The committed results files (`*_full.json`, paths in the repository) each verdict was read
from, by real pool size."""


def run_spec(entry: Entry | BenchEntry) -> str:
    """What an entry runs, whichever kind: its selector, overrides and step sampler (as
    TrainConfig spells it, every field), and a bench entry's own batch size where it sets
    one, as one canonical string: two are equal exactly when the runs configure the selector,
    its sampler and the step's prompts alike."""
    sampler, config = entry.sampler.pair()
    spec: list[Any] = [entry.selector, dict(entry.overrides), sampler, config]
    batch = getattr(entry, "train", {}).get("batch_size")  # a bench entry's own step size
    if batch is not None:
        spec.append({"batch_size": batch})
    return json.dumps(spec, sort_keys=True, default=str)


@cache
def _real_specs() -> dict[str, str]:
    """Each bench-rl entry's spec, by its label (built on first use, not at import)."""
    return {e.label: run_spec(e) for e in (*MAIN_ENTRIES, *EFFECT_ENTRIES)}


SCENARIO_REGIME = {"small-pool": "512", "large-pool": "1280"}
"""The real pool each calibrated scenario mirrors (512 prompts for 11 epochs; 1,280 for 4.5)."""


def real_rl_context(
    scenario: str, entries: Sequence[Entry], modified: bool = False
) -> dict[str, Any]:
    """The real-RL verdicts that apply to a simulated table of `entries` on `scenario`, by
    the simulated label: a calibrated scenario's own pool's; for any other, or a `modified`
    one (fields overridden), the verdict both real pools agree on, else 'noise'. An entry
    gets the verdict of the real entry with its spec (`run_spec`); an entry no real run
    matches (another sampler or overrides, `Entry.oracle`) gets none."""
    pool = None if modified else SCENARIO_REGIME.get(scenario)
    if pool is not None:
        verdicts = REAL_RL_VERDICTS[pool]
    else:
        small, large = REAL_RL_VERDICTS["512"], REAL_RL_VERDICTS["1280"]
        verdicts = {k: v if large.get(k) == v else "noise" for k, v in small.items()}
    specs = _real_specs()
    by_spec = {specs[label]: verdict for label, verdict in verdicts.items()}
    found = {e.label: by_spec.get(run_spec(e)) for e in entries if not e.oracle}
    return {
        "calibrated": pool is not None,
        "modified": modified,
        "pool": pool,
        "doc": REAL_RL_DOC,
        "verdicts": {label: v for label, v in found.items() if v is not None},
    }


@dataclass(frozen=True)
class Evidence:
    """One selector against uniform on the real testbed, as the demo quotes it (mean and
    bootstrap 95% CI over paired seeds; tests/test_real_rl_verdicts.py checks the numbers
    against the committed results; the demo's wording: bench/simulation/demo.py)."""

    selector: str
    """The selector measured (TRL's default, `FrontierConfig().selector`)."""
    entry: str
    """Its bench-rl entry in the results: the selector with `rollouts: kept`."""
    regime: str
    """The real pool, how long it was trained, and on whose schedule."""
    source: str
    """The committed results page (path in the repository); `<stem>_full.json` beside it."""
    seeds: int
    """Paired seeds measured."""
    rollouts_vs_uniform: tuple[float, float, float]
    """Its total rollouts over uniform's, on uniform's schedule."""
    generated_tokens_vs_uniform: tuple[float, float, float]
    """Its generated completion tokens over uniform's."""
    final_minus_uniform: tuple[float, float, float]
    """Final held-out pass@1 minus uniform's."""


_REC = _DATA["recommended"]
RECOMMENDED = Evidence(
    selector=_REC["selector"],
    entry=_REC["entry"],
    regime=_REC["regime"],
    source=_REC["source"],
    seeds=int(_REC["seeds"]),
    rollouts_vs_uniform=tuple(_REC["rollouts_vs_uniform"]),
    generated_tokens_vs_uniform=tuple(_REC["generated_tokens_vs_uniform"]),
    final_minus_uniform=tuple(_REC["final_minus_uniform"]),
)
"""The adapters' default (`skip`; `rollouts: auto` is kept on a run of up to 2 epochs) and
the real-RL measurement behind it, on a run of that length."""
