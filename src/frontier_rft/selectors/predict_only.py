"""`predict-only`: the three-way outcome predictor of `skip-predict` alone, with no per-prompt
posterior (issue 62, item 6: "the predictor alone and combined with the skip").

`skip-predict` judges untried prompts by the predictor (selectors/_outcome.py) and tried ones
by `skip`'s per-prompt Beta posterior. This variant judges every prompt, tried or untried, by
the predictor's rules alone, as `skip-predict` judges an untried one:

    keep_k = 1
    w_k >= wrong_threshold:     keep_k = wrong_floor
    c_k >= correct_threshold:   keep_k = min(keep_k, correct_keep)

with (c_k, w_k) = (P(all-correct), P(all-wrong)) of prompt k's next group. A prompt's own
rollouts reach its keep only through what the predictor learns across prompts from them. It
is the comparison that says what the posterior adds: the same walk, the same window
(`rollouts: kept`), the same predictor, fitted and calibrated alike, and the same
calibration metrics (the class is `skip-predict`'s, with `reads_posterior` off). The
posterior is still kept (it says which prompts are untried and keeps `skip`'s metrics), but
no keep reads it, so the settings that shape only the posterior are refused here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from frontier_rft.core.config import check
from frontier_rft.core.facts import Needs
from frontier_rft.selectors.skip_predict import SkipPredictConfig, SkipPredictSelector

__all__ = ["POSTERIOR_ONLY", "PredictOnlyConfig", "PredictOnlySelector"]

POSTERIOR_ONLY = ("alpha0", "beta0", "lam", "plugin", "regression_ridge", "untried")
"""skip-predict's settings that no keep of predict-only reads (the posterior's prior,
forgetting and implicit evidence; `untried`, since every prompt is judged alike): refused
unless at their defaults."""
_DEFAULTS = {f.name: f.default for f in fields(SkipPredictConfig) if f.name in POSTERIOR_ONLY}


@dataclass(frozen=True)
class PredictOnlyConfig(SkipPredictConfig):
    """`skip-predict`'s predictor and rules for every prompt, no posterior (our variant)."""

    # Redeclared for their help only (same defaults, same order: the ledger's digests stay):
    # here they act on tried prompts too.
    untried: Literal["auto", "take", "predict"] = SkipPredictConfig.untried
    """Refused unless 'auto': every prompt, tried or untried, is judged by the predictor."""
    wrong_threshold: float = SkipPredictConfig.wrong_threshold
    """P(all-wrong) at or above which a prompt (untried or tried) is kept with `wrong_floor`."""
    wrong_floor: float = SkipPredictConfig.wrong_floor
    """Retest floor: keep probability of a prompt (untried or tried) predicted all-wrong."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, default in _DEFAULTS.items():
            value = getattr(self, name)
            check(
                value == default,
                f"{name} shapes skip's per-prompt posterior, which predict-only does not read "
                f"(every prompt is judged by the predictor); leave it at {default!r} or use "
                f"skip-predict, got {name}={value!r}",
            )


class PredictOnlySelector(SkipPredictSelector):
    """Walks the data like `skip-predict` and judges every prompt, tried or untried, by the
    three-way predictor alone: predicted all-correct kept with correct_keep, predicted
    all-wrong with wrong_floor, the rest taken."""

    name = "predict-only"
    # kept_loses and kept_level_epochs are skip's, as skip-predict's: rollouts: auto keeps
    # full batches.
    config_class = PredictOnlyConfig
    config: PredictOnlyConfig
    needs: ClassVar[Needs] = Needs(
        "a three-way outcome predictor across prompts, for every prompt (no per-prompt posterior)",
        "the predictor reads prompt-text features",
        "features=(N, d) your embeddings, e.g. the policy's (policy_embeddings)",
        ("evidence/features/text", "evidence/plugin/regression"),
    )
    color: ClassVar[str] = "#6a994e"  # a sage green: skip-predict's family, apart from every colour
    test_configs: ClassVar[tuple[dict[str, Any], ...]] = ({"wrong_floor": 0.5},)
    reads_posterior: ClassVar[bool] = False
