"""SkyRL's entrypoint with a frontier-rft selector: SkyRL's command line plus `frontier.*`.

    python -m frontier_rft.integrations.skyrl.main trainer.train_batch_size=64 \\
        data.train_data="['train.parquet']" ... frontier.selector=greso frontier.seed=1

(or SkyRL's own `python -m skyrl.train.entrypoints.main_base
trainer.override_entrypoint=frontier_rft.integrations.skyrl.main ...`). The `frontier.*`
settings are checked (check_skyrl_config: every mistake, one line each) before SkyRL is
imported or Ray starts; the rest goes to SkyRL's `SkyRLTrainConfig.from_cli_overrides`.
`trainer.fully_async.enabled=true` runs SkyRL's fully-async trainer (as SkyRL's own
fully-async example does), with the selector.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from frontier_rft.integrations.data_columns import local_rows
from frontier_rft.integrations.plan import kept_line
from frontier_rft.integrations.preflight import apply_overrides
from frontier_rft.integrations.skyrl.config import (
    SKYRL,
    SKYRL_SETTING,
    resolved_plan,
    skyrl_planned_epochs,
    skyrl_sampler_config,
)
from frontier_rft.integrations.skyrl.preflight import check_skyrl_config
from frontier_rft.selectors.registry import SELECTORS

__all__ = ["ENTRYPOINT_ARG", "main", "split_arguments"]

_log = logging.getLogger(__name__)

ENTRYPOINT_ARG = "trainer.override_entrypoint="
"""How SkyRL's own entrypoint hands its command line to this one."""


def split_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(SkyRL's arguments, the `frontier.*` ones). SkyRL's main_base reads
    `trainer.override_entrypoint=` from the command line, not its config: dropped here."""
    prefix = SKYRL_SETTING + "."
    ours = [a for a in argv if a.lstrip("+").startswith(prefix)]
    theirs = [a for a in argv if a not in ours and not a.startswith(ENTRYPOINT_ARG)]
    return theirs, ours


def _run(cfg: Any, frontier_config: Any, plan: Any) -> None:
    """SkyRL's `skyrl_entrypoint`, with the frontier-rft experiment (runs in a Ray task)."""
    from frontier_rft.integrations.skyrl.trainer import FrontierPPOExp

    FrontierPPOExp(cfg, frontier_config, plan).run()


def main(argv: Sequence[str] | None = None) -> int:
    """Check the frontier settings, then run SkyRL's training with them; 2 when they are wrong."""
    args = list(sys.argv[1:] if argv is None else argv)
    skyrl_args, ours = split_arguments(args)
    values: dict[str, Any] = {}
    try:
        apply_overrides(values, ours)
    except ValueError as exc:
        sys.stderr.write(f"frontier-rft: {exc}\n")  # an entrypoint's one-line error
        return 2
    seen: dict[str, Any] = dict(values)
    for arg in skyrl_args:  # SkyRL's keys as written, for the checks that read them
        if "=" in arg:
            with contextlib.suppress(ValueError):  # SkyRL's own parser names it
                apply_overrides(seen, [arg])
    report = check_skyrl_config(seen)
    if report.problems:
        sys.stderr.write(report.render("frontier-rft (SkyRL)") + "\n")
        return 2
    for line in report.currency:  # as check-config says it
        sys.stderr.write(f"frontier-rft (SkyRL): currency: {line}\n")
    for line in report.start:  # where to start, from the curve alone
        sys.stderr.write(f"frontier-rft (SkyRL): {line}\n")
    # First: it imports SkyRL's one module that needs a shim on Python 3.11.
    from frontier_rft.integrations.skyrl.trainer import check_skyrl_hooks, trainer_class  # isort: split

    import ray
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.utils.utils import initialize_ray, validate_cfg

    cfg = SkyRLTrainConfig.from_cli_overrides(skyrl_args)
    check_skyrl_hooks(trainer_class(cfg)._skyrl_trainer)
    validate_cfg(cfg)
    sampler_config = skyrl_sampler_config(values.get(SKYRL_SETTING), cfg.trainer.train_batch_size)
    if sampler_config.rollouts == "kept":  # set by hand: say what it does and what it cost
        _log.info(kept_line(SKYRL, SELECTORS[sampler_config.selector]))
    plan = resolved_plan(  # the run's step, decided once: rollouts: auto said before Ray starts
        sampler_config,
        fully_async=bool(cfg.trainer.fully_async.enabled),
        dynamic_sampling=cfg.trainer.algorithm.dynamic_sampling.type,
        epochs=skyrl_planned_epochs(
            cfg.trainer.epochs,
            cfg.trainer.max_training_steps,
            cfg.trainer.train_batch_size,
            partial(local_rows, cfg.data.train_data),
        ),
        policy_loss_type=cfg.trainer.algorithm.policy_loss_type,
        advantage_estimator=cfg.trainer.algorithm.advantage_estimator,
        group_size=cfg.generator.n_samples_per_prompt,
    )
    initialize_ray(cfg)
    ray.get(ray.remote(num_cpus=1)(_run).remote(cfg, sampler_config, plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
