"""Shadow: what a rule that passes over prompts before rollout would have saved and lost on the
batches a run actually drew, at no cost and without changing the run (docs/shadow.md).

A rule is a selector's skip (`greso`, `skip`: `Selector.keeps`, the keep rule of its
`select_window`), screening with k of n rollouts (our own k-of-n screen, as `FewerRollouts` runs
it), or both. Each step, before the step's rewards reach the rule, the shadow asks it which of
the run's B prompts it would have rolled out; the run rolled out all of them, so the log shows
what every left-out group turned out to be:

- rollouts saved: B n less what the rule spends (n a kept group, k a group screened out); a
  step where the skip keeps none of the B is charged one group's first round (the rule walks
  on to a prompt beyond the batch, whose outcome the run does not show);
- precision: the share of left-out groups (skipped or screened out) whose n rewards were all
  equal (zero GRPO advantage: nothing lost);
- informative groups lost (mixed ones left out) and their share of the step's sum of |GRPO
  advantage| over all B groups;
- where the run knows each completion's length (tokens, or the unit its log holds), the
  generated tokens saved: the run's tokens less the kept groups' and the screened-out groups'
  first k completions' (a step that keeps none is charged k, or n, of the step's mean length).
  Skipped groups are not average-length, so this share may differ from the rollouts'.

Then the rule's selector receives only the feedback the rule would have seen: the kept
groups, a screened-out group's first k rewards. First order only: a run under the rule
would have trained other groups and drawn another trajectory.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from frontier_rft.core.advantages import group_advantages
from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.bounds import MAX_STEP, bounded_int
from frontier_rft.core.config import check, config_from_dict, did_you_mean
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.selector import MAX_SEED, Selector
from frontier_rft.core.state_check import check_keys, read_array, read_int, read_keys
from frontier_rft.sampling.wrap_file import load_wrap, save_wrap_state

__all__ = [
    "MAX_LENGTH",
    "PASS_KEYS",
    "SUMMARY_KEY",
    "Shadow",
    "ShadowConfig",
    "check_shadow_rules",
    "load_shadow_file",
    "parse_rule",
    "passes_table",
    "save_shadow",
]

_KIND = "shadow"
_SCREEN = re.compile(r"screen(\d{1,6})")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_COUNTS = (
    "steps",
    "groups",
    "rollouts",
    "saved",
    "skipped",
    "screened_out",
    "zero_lost",
    "informative_lost",
)
"""Per pass over the pool: steps, groups the run rolled out, their rollouts, rollouts the rule
saves, groups it skips, groups it screens out, left-out groups that were zero-variance,
left-out groups that were mixed."""
_SIGNAL = ("abs_advantage", "abs_advantage_lost")
"""Per pass: the sum of |GRPO advantage| over the run's groups, and over the left-out ones."""
_TOKENS = ("steps", "tokens", "saved")
"""Per pass, over the steps whose completion lengths were given: those steps, the run's
generated tokens in them, and the tokens the rule saves."""
_LAST = ("saved", "informative_lost", "abs_advantage", "abs_advantage_lost")
_STATE_KEYS = (
    "kind",
    "config",
    "seed",
    "pool_size",
    "positions",
    "counts",
    "signal",
    "last",
    "selector",
)
MAX_LENGTH = 1 << 31
"""Longest completion counted (tokens or characters): a run's sums stay far inside int64."""
_OPTIONAL_KEYS = ("tokens", "tokens_last")
"""Absent from a state saved before shadows counted tokens: it loads with no token counts."""


@dataclass(frozen=True)
class ShadowConfig:
    """A rule a shadow follows beside a run: a selector's skip, screening, or both."""

    selector: str = ""
    """A selector that walks the data (greso, skip), whose skip is predicted ('' = none)."""
    screen: int = 0
    """Screening rollouts per prompt, k (0 = none): a group is left out when its first k
    rewards are all equal (a k-of-n screen, our own)."""

    def __post_init__(self) -> None:
        check(
            isinstance(self.selector, str)
            and (not self.selector or _NAME.fullmatch(self.selector) is not None),
            f"a shadow's selector must be a selector name, got {self.selector!r}",
        )
        check(
            isinstance(self.screen, int)
            and not isinstance(self.screen, bool)
            and (self.screen == 0 or 2 <= self.screen <= MAX_STEP),
            f"a shadow's screen must be 0 (none) or k >= 2 rollouts (one reward is never "
            f"mixed), got {self.screen!r}",
        )
        check(
            bool(self.selector) or self.screen > 0,
            "a shadow needs a rule: a selector that skips (greso, skip), screenK, or both",
        )

    @property
    def name(self) -> str:
        """The rule as written: 'greso', 'screen4', 'greso+screen4'."""
        parts = [self.selector] if self.selector else []
        return "+".join(parts + ([f"screen{self.screen}"] if self.screen else []))

    @classmethod
    def parse(cls, text: object) -> ShadowConfig:
        """'greso', 'screen4' or 'greso+screen4'; a ValueError that says how to write one."""
        how = "write a rule as greso, skip, screenK (K >= 2) or greso+screenK"
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"a shadow rule must be a non-empty string ({how}), got {text!r}")
        selector, screen = "", 0
        for part in text.strip().split("+"):
            found = _SCREEN.fullmatch(part)
            if found and not screen:
                screen = int(found.group(1))
            elif _NAME.fullmatch(part) and not part.startswith("screen") and not selector:
                selector = part
            else:
                raise ValueError(f"shadow rule {text!r}: cannot read {part[:40]!r}; {how}")
        try:
            return cls(selector=selector, screen=screen)
        except ValueError as exc:
            raise ValueError(f"shadow rule {text!r}: {exc}") from None


class Shadow:
    """One rule's decisions and what they would have cost, step by step beside a run."""

    def __init__(
        self,
        config: ShadowConfig,
        selector: Selector | None,
        pool_size: int,
        *,
        seed: int = 0,
        pass_size: int | None = None,
    ):
        if not isinstance(config, ShadowConfig):
            raise ValueError(f"Shadow takes a ShadowConfig, got {type(config).__name__}")
        if (selector is None) != (config.selector == ""):
            raise ValueError(
                f"shadow {config.name!r}: pass its {config.selector!r} selector"
                if config.selector
                else f"shadow {config.name!r} screens only: pass no selector"
            )
        if selector is not None:
            if selector.name != config.selector:
                raise ValueError(f"shadow {config.name!r} got a {selector.name!r} selector")
            if not selector.walks_windows():
                raise ValueError(
                    f"shadow {config.name!r}: {selector.name!r} does not walk the data, so it "
                    "skips no prompt of a batch; shadow greso, skip or screenK"
                )
            pool_size = selector.num_tasks
        self.config = config
        self.selector = selector
        self.pool_size = bounded_int(pool_size, "pool_size", lo=1)
        self.pass_size = bounded_int(
            self.pool_size if pass_size is None else pass_size, "pass_size", lo=1, hi=self.pool_size
        )
        """Prompts a pass over the pool draws: the pool, or less where the trainer drops each
        epoch's remainder (TRL's, verl's: pool // batch batches)."""
        self.seed = bounded_int(seed, "seed", hi=MAX_SEED - 1)
        self._positions = 0  # prompts the run drew so far: the pass is this / pass_size
        self._counts = np.zeros((0, len(_COUNTS)), dtype=np.int64)  # one row per pass
        self._signal = np.zeros((0, len(_SIGNAL)), dtype=np.float64)
        self._tokens = np.zeros((0, len(_TOKENS)), dtype=np.int64)
        self._last = dict.fromkeys(_LAST, float("nan"))
        self._tokens_last = float("nan")  # tokens saved at the last step (NaN: not known)

    @property
    def name(self) -> str:
        return self.config.name

    # ------------------------------------------------------------------ one step
    def observe(
        self,
        step: int,
        task_ids: I64,
        rewards: F64,
        group_size: int,
        lengths: I64 | None = None,
    ) -> None:
        """Step `step` of the run: its prompts `task_ids` (distinct, in the order drawn) and
        their `group_size` rewards each, prompt-major; `lengths` (optional), each completion's
        length in generated tokens (or another unit, counted alike), as `rewards`. Decide,
        count, then fold what the rule would have seen. A ValueError, changing nothing, for
        arguments that do not fit."""
        step = bounded_int(step, "step")
        n = bounded_int(group_size, "group_size", lo=2, hi=1 << 20)
        ids = np.asarray(task_ids)
        r = np.asarray(rewards, dtype=np.float64)
        k = self.config.screen
        if k and not k < n:
            raise ValueError(
                f"shadow {self.name!r} screens with {k} rollouts, so it needs groups of more "
                f"than {k}; this run's have {n}: shadow a smaller screen"
            )
        if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
            raise ValueError("a shadow needs the step's task ids as a non-empty 1-d int array")
        if ids.min() < 0 or ids.max() >= self.pool_size or np.unique(ids).size != ids.size:
            raise ValueError(
                f"a step's task ids must be distinct ids of the pool [0, {self.pool_size})"
            )
        if r.shape != (ids.size * n,) or not np.all(np.isfinite(r)):
            raise ValueError(
                f"a shadow needs {n} finite rewards for each of the {ids.size} prompts "
                f"({ids.size * n}), prompt-major; got shape {r.shape}"
            )
        sizes_in = None
        if lengths is not None:
            sizes_in = np.asarray(lengths)
            if (
                sizes_in.shape != r.shape
                or sizes_in.dtype.kind not in "iu"
                or (sizes_in.size and (sizes_in.min() < 0 or sizes_in.max() > MAX_LENGTH))
            ):
                raise ValueError(
                    f"a shadow needs one completion length (an int in [0, {MAX_LENGTH}]) per "
                    f"reward, prompt-major ({r.size}); got shape {sizes_in.shape}, dtype "
                    f"{sizes_in.dtype}"
                )
        bounds = self.selector.reward_bounds if self.selector is not None else None
        if bounds is not None and (r.min() < bounds[0] or r.max() > bounds[1]):
            raise ValueError(
                f"shadow {self.name!r}: rewards must lie in [{bounds[0]:g}, {bounds[1]:g}]"
            )
        ids = ids.astype(np.int64)
        groups = r.reshape(ids.size, n)
        kept = (
            np.ones(ids.size, dtype=np.bool_) if self.selector is None else self.selector.keeps(ids)
        )
        screened = np.zeros(ids.size, dtype=np.bool_)
        if k:
            head = groups[:, :k]
            screened = kept & np.all(head == head[:, :1], axis=1)
        left_out = ~kept | screened
        spent = n * int((kept & ~screened).sum()) + k * int(screened.sum())
        if not kept.any():  # the rule walks on to a prompt beyond the batch: its first round
            spent += k or n
        zero = np.all(groups == groups[:, :1], axis=1)
        offsets = np.arange(ids.size + 1, dtype=np.int64) * n
        signal = np.abs(group_advantages(r, offsets, "grpo")).reshape(ids.size, n).sum(axis=1)
        row = np.array(
            [
                1,
                ids.size,
                ids.size * n,
                ids.size * n - spent,
                int((~kept).sum()),
                int(screened.sum()),
                int((left_out & zero).sum()),
                int((left_out & ~zero).sum()),
            ],
            dtype=np.int64,
        )
        lost = float(signal[left_out].sum())
        tokens = np.zeros(len(_TOKENS), dtype=np.int64)
        if sizes_in is not None:
            size = sizes_in.astype(np.int64).reshape(ids.size, n)
            run = int(size.sum())
            used = int(size[kept & ~screened].sum()) + int(size[screened, :k].sum())
            if not kept.any():  # the first round of a prompt beyond the batch: mean length
                used += round((k or n) * run / size.size)
            tokens[:] = (1, run, run - used)
        self._add(row, np.array([float(signal.sum()), lost]), tokens)
        self._positions += ids.size
        self._last = {
            "saved": float(row[3]),
            "informative_lost": float(row[7]),
            "abs_advantage": float(signal.sum()),
            "abs_advantage_lost": lost,
        }
        self._tokens_last = float(tokens[2]) if sizes_in is not None else float("nan")
        if self.selector is not None and kept.any():
            sizes = np.where(screened[kept], k, n)
            seen = np.concatenate([g[:s] for g, s in zip(groups[kept], sizes, strict=True)])
            self.selector.update(Feedback(np.repeat(ids[kept], sizes), seen, step=step))
            self.selector.flush()

    def _add(self, counts: I64, signal: F64, tokens: I64) -> None:
        """Add a step's counts to the row of the pass its first prompt falls in."""
        index = self._positions // self.pass_size
        while self._counts.shape[0] <= index:
            self._counts = np.vstack([self._counts, np.zeros((1, len(_COUNTS)), np.int64)])
            self._signal = np.vstack([self._signal, np.zeros((1, len(_SIGNAL)))])
            self._tokens = np.vstack([self._tokens, np.zeros((1, len(_TOKENS)), np.int64)])
        self._counts[index] += counts
        self._signal[index] += signal
        self._tokens[index] += tokens

    # ------------------------------------------------------------------ read out
    def passes(self) -> list[dict[str, float]]:
        """Per pass over the pool (the first is 1): the counts of its steps, and the totals
        over all passes as a last row with pass 0. The token counts (`token_steps`, `tokens`,
        `tokens_saved`, `tokens_saved_share`) cover the steps whose lengths were given."""
        parts = zip(self._counts, self._signal, self._tokens, strict=True)
        rows = [(i + 1, c, s, t) for i, (c, s, t) in enumerate(parts)]
        rows.append(
            (0, self._counts.sum(axis=0), self._signal.sum(axis=0), self._tokens.sum(axis=0))
        )
        return [_summary(p, c, s, t) for p, c, s, t in rows]

    def metrics(self) -> dict[str, float]:
        """Cumulative and this step's figures (docs/shadow.md lists them), unprefixed."""
        total = self.passes()[-1]
        epoch = self.passes()[-2] if self._counts.shape[0] else total
        last = self._last
        tokens = (
            {
                "tokens_saved": total["tokens_saved"],
                "tokens_saved_share": total["tokens_saved_share"],
                "tokens_saved_step": self._tokens_last,
            }
            if total["token_steps"] > 0
            else {}
        )
        return {
            "epoch": float(self._counts.shape[0]),
            "rollouts_saved": total["rollouts_saved"],
            "rollouts_saved_share": total["rollouts_saved_share"],
            "rollouts_saved_epoch": epoch["rollouts_saved"],
            "rollouts_saved_step": last["saved"],
            "skipped": total["skipped"],
            "screened_out": total["screened_out"],
            "skip_precision": total["skip_precision"],
            "informative_lost": total["informative_lost"],
            "informative_lost_step": last["informative_lost"],
            "abs_advantage_lost_share": _share(last["abs_advantage_lost"], last["abs_advantage"]),
            "abs_advantage_lost_share_cumulative": total["abs_advantage_lost_share"],
            **tokens,
        }

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly, the rule's selector state nested."""
        return {
            "kind": _KIND,
            "config": asdict(self.config),
            "seed": self.seed,
            "pool_size": self.pool_size,
            "positions": self._positions,
            "counts": self._counts.copy(),
            "signal": self._signal.copy(),
            "tokens": self._tokens.copy(),
            "last": dict(self._last),
            "tokens_last": self._tokens_last,
            "selector": {} if self.selector is None else self.selector.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict; on any error nothing changes."""
        who = f"shadow {self.name!r}"
        state = check_keys(state, f"{who} state", _STATE_KEYS, _OPTIONAL_KEYS)
        if state["kind"] != _KIND:
            raise ValueError(f"{who} state: kind {state['kind']!r} is not {_KIND!r}")
        saved = config_from_dict(ShadowConfig, state["config"], what=f"{who} state: config")
        if saved != self.config:
            raise ValueError(f"{who} state was saved for shadow {saved.name!r}")
        if read_int(state, "pool_size", who, lo=1) != self.pool_size:
            raise ValueError(f"{who} state: saved for a pool of another size")
        positions = read_int(state, "positions", who, hi=2**62)
        counts = read_array(state, "counts", who, np.int64, shape=(None, len(_COUNTS)), lo=0)
        signal = read_array(
            state, "signal", who, np.float64, shape=(None, len(_SIGNAL)), lo=0, finite=True
        )
        passes = counts.shape[0]  # a step counts in the pass its first prompt falls in
        tokens = (
            read_array(state, "tokens", who, np.int64, shape=(None, len(_TOKENS)), lo=0)
            if "tokens" in state
            else np.zeros((passes, len(_TOKENS)), dtype=np.int64)  # saved before tokens
        )
        tokens_last = state.get("tokens_last", float("nan"))
        if (
            isinstance(tokens_last, bool)
            or not isinstance(tokens_last, int | float | np.integer | np.floating)
            or (tokens_last < 0 and not math.isnan(tokens_last))
        ):
            raise ValueError(f"{who} state: tokens_last must be a number >= 0 or NaN")
        if (
            signal.shape[0] != passes
            or tokens.shape[0] != passes
            or np.any(tokens[:, 0] > counts[:, 0])
            or np.any(tokens[:, 2] > tokens[:, 1])
            or not (passes == 0) == (positions == 0)
            or (passes > positions // self.pass_size + 1)
        ):
            raise ValueError(f"{who} state: its passes do not match the prompts it counted")
        last = read_keys(state, "last", who, _LAST)
        if not all(isinstance(v, int | float) for v in last.values()):
            raise ValueError(f"{who} state: last must hold numbers")
        seed = read_int(state, "seed", who, hi=MAX_SEED - 1)
        inner = state["selector"]
        if not isinstance(inner, dict) or bool(inner) != (self.selector is not None):
            raise ValueError(f"{who} state: selector state does not match the rule")
        if self.selector is not None:
            self.selector.load_state_dict(inner)  # atomic; the last step that can fail
        self._positions, self._counts, self._signal = positions, counts, signal
        self._tokens, self._tokens_last = tokens, float(tokens_last)
        self._last = {k: float(v) for k, v in last.items()}
        self.seed = seed


SUMMARY_KEY = "shadow_passes"
"""The key of a metrics log's end-of-run record of live shadows: per rule, its passes()."""
PASS_KEYS = (
    "pass",
    "steps",
    "groups",
    "rollouts",
    "rollouts_saved",
    "rollouts_saved_share",
    "skipped",
    "screened_out",
    "left_out",
    "skip_precision",
    "informative_lost",
    "abs_advantage_lost_share",
    "token_steps",
    "tokens",
    "tokens_saved",
    "tokens_saved_share",
)
"""The figures of a row of `Shadow.passes()`."""


def passes_table(named: Sequence[tuple[str, Sequence[Mapping[str, float]]]]) -> str:
    """Per rule (its name and `Shadow.passes()` rows) and pass over the pool, and in total:
    rollouts saved, the share of the run's generated tokens saved ('-' where none were
    counted), groups left out, the share of those that were zero-variance, informative
    groups lost and their |advantage|. The replay's table, and a live run's at its end."""
    head = (
        "| rule | pass | steps | rollouts | saved | saved share | tokens saved share "
        "| skipped | screened out | precision | informative lost | abs(A) lost |"
    )
    lines = [head, "|---|---|" + "---:|" * 10]
    for name, rows in named:
        for row in rows:
            label = "all" if row["pass"] == 0 else str(int(row["pass"]))
            cells = [name, label]
            cells += [f"{row[k]:.0f}" for k in ("steps", "rollouts", "rollouts_saved")]
            cells.append(_pct(row["rollouts_saved_share"]))
            cells.append(_pct(row["tokens_saved_share"]))
            cells += [f"{row[k]:.0f}" for k in ("skipped", "screened_out")]
            cells.append(_pct(row["skip_precision"]))
            cells.append(f"{row['informative_lost']:.0f}")
            cells.append(_pct(row["abs_advantage_lost_share"]))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}%"


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else float("nan")


def _summary(index: int, counts: I64, signal: F64, tokens: I64) -> dict[str, float]:
    c = dict(zip(_COUNTS, counts.tolist(), strict=True))
    t = dict(zip(_TOKENS, tokens.tolist(), strict=True))
    left_out = c["zero_lost"] + c["informative_lost"]
    return {
        "pass": float(index),
        "steps": float(c["steps"]),
        "groups": float(c["groups"]),
        "rollouts": float(c["rollouts"]),
        "rollouts_saved": float(c["saved"]),
        "rollouts_saved_share": _share(c["saved"], c["rollouts"]),
        "skipped": float(c["skipped"]),
        "screened_out": float(c["screened_out"]),
        "left_out": float(left_out),
        "skip_precision": _share(c["zero_lost"], left_out),
        "informative_lost": float(c["informative_lost"]),
        "abs_advantage_lost_share": _share(float(signal[1]), float(signal[0])),
        "token_steps": float(t["steps"]),
        "tokens": float(t["tokens"]),
        "tokens_saved": float(t["saved"]),
        "tokens_saved_share": _share(t["saved"], t["tokens"]),
    }


# ---------------------------------------------------------------------------- rules of a run
def parse_rule(text: object, selectors: Mapping[str, type[Selector]]) -> ShadowConfig:
    """The rule `text` names, its selector one of `selectors` (the registry, passed in by the
    layer that holds it) that walks the data; a ValueError that says how to write one."""
    config = ShadowConfig.parse(text)
    name = config.selector
    if name and name not in selectors:
        raise ValueError(
            f"shadow rule {text!r}: unknown selector {name!r}{did_you_mean(name, selectors)}; "
            "a shadow predicts the skip of greso or skip, or screenK"
        )
    if name and not selectors[name].walks_windows():
        raise ValueError(
            f"shadow rule {text!r}: {name!r} re-draws from the whole pool, so there is no "
            "prompt of the run's batch it passes over; shadow greso, skip or screenK"
        )
    return config


def check_shadow_rules(
    rules: Sequence[object],
    selectors: Mapping[str, type[Selector]],
    *,
    group_size: int | None,
    group_name: str,
    partial: Sequence[str],
    example: str,
) -> tuple[ShadowConfig, ...]:
    """The rules a run's shadows follow, parsed and checked against the run: no rule twice,
    screens below the group size (`group_name` as the run's config calls it; None: not known
    yet), and no setting in `partial` (those that roll out partial or extra groups, where a
    shadow cannot read each prompt's whole group once a step). `example`: how to write a
    shadow in this run's config, for the message."""
    configs = tuple(parse_rule(text, selectors) for text in rules)
    names = [c.name for c in configs]
    check(len(set(names)) == len(names), f"shadows names a rule twice: {', '.join(names)}")
    for config in configs:
        check(
            group_size is None or config.screen < group_size,
            f"shadow {config.name!r} screens with {config.screen} rollouts, so it needs "
            f"{group_name} above {config.screen} (now {group_size})",
        )
    check(
        not (configs and partial),
        f"shadows read each prompt's whole group of {group_name} once a step, which "
        f"{', '.join(partial)} does not roll out; shadow a run without it ({example})",
    )
    return configs


def save_shadow(shadow: Shadow, path: str | os.PathLike[str]) -> None:
    """Atomically write a shadow's state (its selector's nested) to `path`."""
    save_wrap_state(_KIND, shadow.state_dict(), path)


def load_shadow_file(
    path: str | os.PathLike[str], config: ShadowConfig, build: Callable[[ShadowConfig, int], Shadow]
) -> Shadow:
    """The shadow saved in `path`, rebuilt by `build(config, seed)`; a ValueError naming the
    file when it is not one of `config`'s."""

    def make(saved: ShadowConfig, seed: int) -> Shadow:
        if saved != config:
            raise ValueError(f"it holds shadow {saved.name!r}, not {config.name!r}")
        return build(saved, seed)

    return load_wrap(path, _KIND, "a shadow", ShadowConfig, make)
