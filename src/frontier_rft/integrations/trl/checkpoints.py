"""A frontier-rft TRL run's checkpoints, as a mixin of its trainer (`FrontierTrainerMixin`):
the step sampler's, selector's, sampler's and shadows' state written into each checkpoint TRL
saves (`_save_checkpoint`, the seam TRL uses for its own extra state) and restored before a
resumed run trains (state.py holds the files)."""

from __future__ import annotations

import os
from typing import Any

from frontier_rft.integrations.trl.driver_kinds import spelled
from frontier_rft.integrations.trl.run_state import FrontierRun
from frontier_rft.integrations.trl.state import (
    FEWER_DEFAULTS,
    check_fewer_settings,
    load_state,
    load_step_sampler,
    save_state,
    save_step_sampler,
    state_digest,
)
from frontier_rft.sampling.step import Sampler

__all__ = ["FrontierCheckpoints"]


class FrontierCheckpoints:
    """The checkpoint half of `FrontierTrainerMixin` (put after it in the bases)."""

    # What the trainer provides: TRL's attributes and the run's state.
    args: Any
    state: Any
    accelerator: Any
    frontier_run: FrontierRun

    def save_frontier_state(self, directory: str | os.PathLike[str]) -> None:
        """Write the step sampler's state (the record of the fewer-rollouts and dynamic
        sampling settings), then the selector and sampler state, into `directory`."""
        # The settings' record first: a save cut short is then refused for its missing
        # state, not mistaken for a run with other settings.
        run = self.frontier_run
        save_step_sampler(directory, self._frontier_step_sampler())
        save_state(directory, run.selector, run.sampler, run.counters)
        run.shadows.save(directory)

    def _frontier_step_sampler(self) -> Sampler:
        """The step sampler around the selector: dynamic sampling's or FewerRollouts inside
        each generation step, else the pass-through (TRL's own generation: no state)."""
        run = self.frontier_run
        if run.driver is None:  # the run's plan is the pass-through
            return run.plan.build(run.selector)
        return run.driver.sampler

    def load_frontier_state(self, directory: str | os.PathLike[str]) -> None:
        """Restore the selector and sampler state (dynamic sampling's, the shadows') saved in
        `directory`; a refused checkpoint (other fewer-rollouts or dynamic sampling settings
        than this trainer's included) changes nothing."""
        run = self.frontier_run
        check_fewer_settings(directory, self._frontier_fewer_record())
        restore = load_step_sampler(directory, self._frontier_step_sampler())  # checked first
        shadows = run.shadows.load(directory)  # read, not yet in place
        counters = load_state(directory, run.selector, run.sampler)
        restore()
        run.shadows.shadows = shadows
        run.counters.update(counters)

    def _frontier_fewer_record(self) -> dict[str, Any]:
        """This trainer's fewer-rollouts settings, as a checkpoint records them: as its plan's
        step sampler spells them (`driver_kinds.spelled`); a run ended by its passes has
        rollouts fewer_steps (one set by max_steps: full)."""
        plan = self.frontier_run.plan
        record = {k: v for k, v in spelled(plan.sampler).items() if k in FEWER_DEFAULTS}
        if plan.ends_by == "passes":
            record["rollouts"] = "fewer_steps"
        return record

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)  # type: ignore[misc]
        self._frontier_check_sync()
        if self.args.should_save:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            run_dir = self._get_output_dir(trial=trial)  # type: ignore[attr-defined]
            folder = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            self.save_frontier_state(os.path.join(run_dir, folder))

    def _init_training_state(self, *args: Any, **kwargs: Any) -> Any:
        """The Trainer's resume position decides whether the sampler replays the saved epoch
        (the Trainer skips the batches already trained in it) or starts a new one."""
        epochs_trained, skipped = super()._init_training_state(*args, **kwargs)  # type: ignore[misc]
        run = self.frontier_run
        if run.resuming:
            run.resuming = False
            run.sampler.resume_mid_epoch(int(skipped) > 0)
        return epochs_trained, skipped

    def _frontier_check_sync(self) -> None:
        """Raise if processes hold different selector states (they must select identically)."""
        if not self.frontier_run.config.check_sync or self.accelerator.num_processes == 1:
            return
        import torch.distributed as dist

        digests: list[str | None] = [None] * self.accelerator.num_processes
        state = self._frontier_step_sampler().state_dict()  # the selector's nested
        dist.all_gather_object(digests, state_digest(state))
        if len(set(digests)) != 1:
            raise RuntimeError(
                "the selector's state differs across processes; build it with the same "
                "make_selector(name, pool, seed=...) call on every process"
            )
