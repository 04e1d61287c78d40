"""What every sampler around a sampler shares (`WrapsSampler`), as optax's `MultiSteps` wraps a
transformation: the wrapped sampler's kind, config, selector, held groups and metrics,
forwarded, so a checkpoint names the run's sampler as its config does and a resume checks it
the same way (`sampling/sampler_file.py`). A wrapper's own work is its `sample`, its own state
one key beside the wrapped sampler's (its `name`). What a wrap needs of the sampler it wraps is
a fact of its class (`refusal`), so no wrap imports another and a plan checks them all before
anything is built (`sampling/step_plan.py`, whose `WRAPS` lists every wrap)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from frontier_rft.core.selector import Selector
from frontier_rft.sampling.step import RolloutFn, Sampler, StepSamples

__all__ = ["Generates", "WrapsSampler"]

Generates = Literal["nothing", "in_first_call", "own_call"]
"""Where a wrap's added rollouts are generated (`WrapsSampler.generates`)."""


class WrapsSampler:
    """A sampler around a sampler (`wraps`): Rescue's extra rollouts, Backfill's replayed
    groups. Its class states its own facts (the wrapped sampler's may differ: the wrapper
    decides what its groups are)."""

    wraps: Sampler
    """The sampler it wraps."""
    uneven_groups: ClassVar[bool] = False
    holds_groups: ClassVar[bool] = False
    rescuable: ClassVar[bool] = False
    replays: ClassVar[bool] = False
    """It trains groups of earlier steps again against their sampling policy's log-probs,
    which the trainer hands back after each update (`trained`): Backfill."""
    name: ClassVar[str]
    """Its name: its `WRAPS` row, its setting in a run's config, the key of its own state
    beside the wrapped sampler's in one state_dict."""
    settings: ClassVar[tuple[str, ...]]
    """What it is built with besides the sampler it wraps, in its constructor's order, each
    also a key of its own state (so a saved state rebuilds it: `sampler_file`)."""
    test_configs: ClassVar[tuple[dict[str, Any], ...]]
    """Its settings (each by name) the contract suite runs it at, around every kind it
    accepts (tests/test_sampler_contract.py finds them here)."""
    generates: ClassVar[Generates] = "nothing"
    """Where the rollouts it adds (its metric `<name>/rollouts`) are generated: nowhere
    (Backfill replays groups), as more rows of the step's first call to generate (HardGroups),
    or in a call of their own after the step's (Rescue). A step's device cost counts its calls
    by it (`bench/real_rl/device_seconds.step_shape`)."""

    @classmethod
    def refusal(cls, kind: str, config: Any) -> str | None:
        """Why it cannot wrap sampler `kind` set by `config`, in one line that says what to do;
        None when it can."""
        raise NotImplementedError

    @classmethod
    def checked_settings(cls, **settings: Any) -> dict[str, Any]:
        """Its `settings` checked as its constructor checks them, each by name: what a plan
        checks when it is made (`step_plan.Wrap`), so one its build would refuse is refused
        first; a ValueError naming the setting."""
        raise NotImplementedError

    @property
    def kind(self) -> str:
        """The wrapped sampler's kind: a checkpoint names the run's sampler, as its config does."""
        return self.wraps.kind

    @property
    def config(self) -> Any:
        """The wrapped sampler's config."""
        return self.wraps.config

    @property
    def inner(self) -> Selector:
        """The selector inside the wrapped sampler."""
        return self.wraps.inner

    def held(self) -> list[tuple[int, int, int]]:
        return self.wraps.held()

    def metrics(self) -> dict[str, float]:
        """The wrapped sampler's metrics (a wrapper's own per-step ones travel with its
        samples: `StepSamples.wrap_metrics`)."""
        return self.wraps.metrics()

    def sample(
        self, step: int, batch_size: int, group_size: int, rollout: RolloutFn
    ) -> StepSamples:
        """The wrapped sampler's step and the wrapper's work on it (`wrapped`: the former)."""
        raise NotImplementedError

    def trained(self, behaviour: Sequence[Any]) -> dict[str, float]:
        """What the trainer hands back after updating on the step's fresh rows: each row's
        tokens' log-probs under the policy that sampled them (the update's first pass), in the
        rows' order. A wrap that replays (`replays`) holds them; another hands them to the
        sampler it wraps. Returns the metrics of what is held."""
        return self.wraps.trained(behaviour)

    def rewrap(self, sampler: Sampler) -> WrapsSampler:
        """The same wrapper (its settings, none of its state) around `sampler`: what a saved
        state is tried on before a resume loads it (`sampler_file.saved_sampler_state`)."""
        raise NotImplementedError

    def _own_state(self) -> Any:
        raise NotImplementedError

    def _read_own(self, saved: Any) -> Any:
        """Its own part of a state, checked; a ValueError naming the problem."""
        raise NotImplementedError

    def _set_own(self, own: Any) -> None:
        raise NotImplementedError

    def state_dict(self, *, with_inner: bool = True) -> dict[str, Any]:
        """The wrapped sampler's state with the wrapper's own under `name`."""
        return {**self.wraps.state_dict(with_inner=with_inner), self.name: self._own_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict of this wrapper around this sampler; on any error nothing
        changes."""
        if not isinstance(state, dict) or self.name not in state:
            raise ValueError(
                f"{self.kind} state holds no {self.name} record: it was saved by a run "
                f"without {self.name}"
            )
        own = self._read_own(state[self.name])
        self.wraps.load_state_dict({k: v for k, v in state.items() if k != self.name})
        self._set_own(own)  # after the wrapped sampler's load, the last one that can fail
