"""METIS selection (arXiv:2605.11235, section 4, Algorithm 1): the policy judges its own curriculum.

Each step: draw m*B candidates uniformly; ask the judge, once, to predict every candidate's
within-prompt reward variance from a judge prompt holding the K most recent (prompt, realised
variance) exemplars; roll out the top B by prediction. After rollout: score each judgment with
R = 1 - (4 (v_hat - v))^2, give it the REINFORCE advantage R - b, move the EMA baseline b and
refresh the calibration memory. Training the judgment tokens is the trainer's job: it reads the
judgments back with `judge_records(step)` / `pop_judge_records()`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.bounds import MAX_ABS_VALUE
from frontier_rft.core.config import SelectorConfig, check, check_choice, check_least
from frontier_rft.core.facts import Cost, Needs, Requires
from frontier_rft.core.feedback import GroupBatch
from frontier_rft.core.pool import TaskPool
from frontier_rft.core.selector import Rollout, Selector
from frontier_rft.core.state_check import (
    decode_texts,
    encode_texts,
    read_array,
    read_counts,
    read_float,
    read_int,
    read_keys,
)
from frontier_rft.selectors.metis.judge import (
    ALLOWED_VALUES,
    MAX_VARIANCE,
    HeuristicJudge,
    candidate_block,
    exemplar_block,
    judge_messages,
    parse_judgment,
    render_judge_prompt,
    system_message,
    user_header,
)

__all__ = ["HeuristicJudge", "Judge", "JudgeRecord", "METISConfig", "METISSelector"]

Judge = Callable[[list[str]], Sequence[str]]
"""A judge maps rendered judge prompts to one response text each (see metis.judge)."""

MEMORY_SELECTIONS = ("recent", "spread")


@dataclass(frozen=True)
class METISConfig(SelectorConfig):
    """METIS hyperparameters; defaults from the paper's Table 5 and Algorithm 1."""

    pool_multiplier: int = 8
    """m: candidates judged per step = m * batch size (capped at the pool size)."""
    memory_size: int = 3
    """K: calibration exemplars in the judge prompt (0 = the paper's w/o-ICL ablation)."""
    judge_loss_weight: float = 0.01
    """lambda in L_total = L_policy + lambda * L_judge; read by the trainer, unused here."""
    baseline_ema: float = 0.95
    """alpha in the REINFORCE baseline update b <- alpha * b + (1 - alpha) * mean(R_judge)."""
    baseline_init: float = 0.0
    """Initial baseline b_0 (Algorithm 1 line 1: 0)."""
    answer_values: tuple[float, ...] = ALLOWED_VALUES
    """Values the judge is told to choose from, printed with two decimals in the prompt."""
    require_listed_value: bool = False
    """Count an in-range answer that is not in answer_values as a failure (paper: accepted)."""
    fallback_prediction: float = 0.0
    """Prediction given to a failed judgment (paper: 0.0)."""
    failure_reward: float | None = None
    """Judge reward of a failed judgment; None scores its fallback with Eq. 8 like any answer."""
    memory_selection: str = "recent"
    """Batch groups entering memory: 'recent' (K at random) or 'spread' (variance quantiles)."""
    pending_horizon: int = 8
    """Select calls a judgment waits for its feedback before it is dropped as expired."""
    keep_judge_records: int = 2
    """Scored judge records are kept for this many most recent feedback batches."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_least(self, ("pool_multiplier", "pending_horizon", "keep_judge_records"), 1)
        k = self.memory_size
        check(
            k >= 0,
            f"memory_size must be a non-negative int (paper default 3), got {k!r}",
        )
        check(
            self.judge_loss_weight >= 0,
            f"judge_loss_weight must be >= 0 (paper default 0.01), got {self.judge_loss_weight!r}",
        )
        check(
            0.0 <= self.baseline_ema <= 1.0,
            f"baseline_ema must lie in [0, 1] (paper default 0.95), got {self.baseline_ema!r}",
        )
        check(
            abs(self.baseline_init) <= MAX_ABS_VALUE,
            f"baseline_init must lie in [-1e100, 1e100] (paper: 0), got {self.baseline_init!r}",
        )
        values = self.answer_values
        check(
            len(values) > 0
            and all(0.0 <= v <= MAX_VARIANCE for v in values)
            and all(a < b for a, b in itertools.pairwise(values)),
            f"answer_values must be increasing numbers in [0, {MAX_VARIANCE}], got {values!r}",
        )
        check(
            0.0 <= self.fallback_prediction <= MAX_VARIANCE,
            f"fallback_prediction must lie in [0, {MAX_VARIANCE}], "
            f"got {self.fallback_prediction!r}",
        )
        check(
            self.failure_reward is None or abs(self.failure_reward) <= MAX_ABS_VALUE,
            f"failure_reward must be None or a number in [-1e100, 1e100], "
            f"got {self.failure_reward!r}",
        )
        check_choice("memory_selection", self.memory_selection, MEMORY_SELECTIONS)


@dataclass(frozen=True)
class JudgeRecord:
    """One scored self-judgment: what the trainer needs for the REINFORCE judge loss (Eq. 9)."""

    task_id: int
    """Candidate task that was judged (and selected)."""
    step: int
    """Trainer step of the feedback that scored it."""
    select_call: int
    """Index of the select call that produced the judgment."""
    messages: list[dict[str, str]]
    """The judge prompt as chat messages (system, user), for the trainer's chat template."""
    prompt: str
    """The flat rendering that was passed to the judge."""
    response: str
    """The judge's raw response ('' when it returned a non-string)."""
    prediction: float
    """Parsed v_hat, or the fallback for a failure."""
    failed: bool
    """True when the response could not be parsed to a value in [0, 1/4]."""
    realised_variance: float
    """v(x) of the rollout group."""
    reward: float
    """R_judge = 1 - (4 (v_hat - v))^2 (or failure_reward for a failure, when set)."""
    advantage: float
    """R_judge - b, with b the baseline before this batch's update (Algorithm 1 order)."""
    baseline: float
    """The baseline b used in `advantage`."""


_I64 = np.zeros(0, dtype=np.int64)
_F64 = np.zeros(0, dtype=np.float64)
_PENDING_ARRAYS = {"task": np.int64, "select_call": np.int64, "prediction": np.float64}
_DONE_ARRAYS = {
    **_PENDING_ARRAYS,
    "step": np.int64,
    "variance": np.float64,
    "reward": np.float64,
    "advantage": np.float64,
    "baseline": np.float64,
    "batch": np.int64,
}
_MEMORY_ARRAYS = {"task": np.int64, "variance": np.float64, "step": np.int64, "seq": np.int64}


def _empty_records(kinds: dict[str, Any]) -> dict[str, Any]:
    recs: dict[str, Any] = {k: np.zeros(0, dtype=t) for k, t in kinds.items()}
    recs.update(failed=np.zeros(0, dtype=np.bool_), user=[], response=[])
    return recs


def _take(recs: dict[str, Any], idx: NDArray[np.int64]) -> dict[str, Any]:
    """Rows `idx` of a record table (numpy columns plus the two string lists)."""
    out: dict[str, Any] = {k: v[idx] for k, v in recs.items() if isinstance(v, np.ndarray)}
    out["user"] = [recs["user"][i] for i in idx.tolist()]
    out["response"] = [recs["response"][i] for i in idx.tolist()]
    return out


def _concat(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: np.concatenate([v, b[k]]) for k, v in a.items() if isinstance(v, np.ndarray)
    }
    out["user"] = a["user"] + b["user"]
    out["response"] = a["response"] + b["response"]
    return out


class METISSelector(Selector):
    """METIS: top-B of an m*B candidate pool by a judge's predicted reward variance.

    The judge (constructor keyword `judge`, not saved with the state) is called once per
    select with the flat rendered judge prompt of every candidate (format in
    `frontier_rft.selectors.metis.judge`) and must return one response per prompt. Use
    `HeuristicJudge()` as a non-LLM stand-in; METIS then reports `metis/non_llm_judge = 1`.

    Feedback: each fed-back group is matched to the oldest still-pending judgment of its task
    (FIFO, so a task judged in two select calls before any feedback is scored twice in order).
    Groups of tasks that METIS did not select still refresh the calibration memory: their
    realised variance is evidence about the current policy all the same. A late piece of an
    older step is scored against its pending judgments and moves the baseline once more; in the
    memory it ranks by its (older) step, so it never displaces exemplars of a newer step.
    """

    name = "metis"
    needs = Needs(
        "the prompt text and a judge that predicts reward variance",
        "prompts are required; the judge is not derived",
        "judge= the policy (frontier train does this) or HeuristicJudge() (non-LLM)",
    )
    requires = Requires(("prompts",), "the judge reads each candidate's prompt text")
    cost = Cost("sublinear", "O(mB)", "judge scores m*B candidates (non-LLM judge here)")
    color = "#9467bd"  # purple
    linestyle = "-."  # next to pcl's pink, and can trace the same curve
    config_class = METISConfig
    collaborators = ("judge",)

    @classmethod
    def default_collaborators(cls, rollout: Rollout | None = None) -> dict[str, Any]:
        """The documented non-LLM judge (the real one is the policy, which callers pass)."""
        return {"judge": HeuristicJudge()}

    def __init__(
        self,
        pool: TaskPool,
        config: METISConfig | None = None,
        *,
        seed: int = 0,
        judge: Judge | None = None,
    ):
        super().__init__(pool, config, seed=seed)
        assert isinstance(self.config, METISConfig)
        self.cfg: METISConfig = self.config
        self._prompts: tuple[str, ...] = pool.require(
            "prompts", self.name, "the judge reads each candidate's prompt text"
        )
        if judge is None or not callable(judge):
            raise ValueError(
                "metis needs a judge: pass judge=callable(list[str]) -> list[str] "
                "(an LLM wrapper, or HeuristicJudge() as a non-LLM stand-in)"
            )
        self.judge = judge
        self.system_message = system_message(self.cfg.answer_values, self.cfg.memory_size > 0)
        self._allowed = self.cfg.answer_values if self.cfg.require_listed_value else None
        self._baseline = float(self.cfg.baseline_init)
        self._seq = 0  # arrival counter ordering memory entries of one step
        self._batches = 0  # _observe calls so far
        self._memory: dict[str, Any] = {k: np.zeros(0, dtype=t) for k, t in _MEMORY_ARRAYS.items()}
        self._awaiting = _empty_records(_PENDING_ARRAYS)
        self._scored = _empty_records(_DONE_ARRAYS)
        self._jtotals = {"judgments": 0, "failures": 0, "expired": 0, "scored": 0}
        self._jlast = dict.fromkeys(
            (
                "judge_failure_rate",
                "prediction_mean",
                "prediction_std",
                "selected_prediction_mean",
                "candidates",
                "judge_reward_mean",
                "calibration_mae",
                "calibration_corr",
            ),
            float("nan"),
        )

    # ------------------------------------------------------------------ judge prompts
    @property
    def is_llm_judge(self) -> bool:
        """False for HeuristicJudge or any judge whose `is_llm` attribute is False."""
        return bool(getattr(self.judge, "is_llm", True))

    def exemplars(self) -> list[tuple[str, float]]:
        """The calibration memory as (prompt, realised variance) pairs, in prompt order.

        'recent': oldest first (by feedback step, then arrival); 'spread': ascending variance,
        as in the paper's appendix B.3 listings.
        """
        mem = self._memory
        if self.cfg.memory_selection == "spread":
            order = np.lexsort((mem["seq"], mem["variance"]))
        else:
            order = np.lexsort((mem["seq"], mem["step"]))
        return [
            (self._prompts[t], float(v))
            for t, v in zip(
                mem["task"][order].tolist(), mem["variance"][order].tolist(), strict=True
            )
        ]

    def judge_user_messages(self, task_ids: Sequence[int]) -> list[str]:
        """User messages for candidates `task_ids` under the current calibration memory."""
        head = user_header(self.cfg.memory_size > 0) + exemplar_block(self.exemplars())
        return [head + candidate_block(self._prompts[int(t)]) for t in task_ids]

    # ------------------------------------------------------------------ hooks
    def _select(self, n: int) -> NDArray[np.int64]:
        cfg = self.cfg
        c = min(cfg.pool_multiplier * n, self.num_tasks)
        cand = self.rng.choice(self.num_tasks, size=c, replace=False).astype(np.int64)
        users = self.judge_user_messages(cand.tolist())
        responses = self.judge([render_judge_prompt(self.system_message, u) for u in users])
        if isinstance(responses, str) or not isinstance(responses, Sequence | np.ndarray):
            raise ValueError(
                f"metis judge must return a list of {c} response strings, "
                f"got {type(responses).__name__}"
            )
        if len(responses) != c:
            raise ValueError(
                f"metis judge returned {len(responses)} responses for {c} judge prompts; "
                "return exactly one response per prompt, in order"
            )
        parsed = self._parse_all(responses)
        failed = np.fromiter((p is None for p in parsed), dtype=np.bool_, count=c)
        pred = np.array([cfg.fallback_prediction if p is None else p for p in parsed], np.float64)
        ties = self.rng.random(c)
        top = np.lexsort((ties, -pred))[:n]
        # Nothing below can raise: state changes start here.
        live = self._awaiting["select_call"] > self.select_calls - cfg.pending_horizon
        self._jtotals["expired"] += int((~live).sum())
        new = {
            "task": cand[top],
            "select_call": np.full(n, self.select_calls, dtype=np.int64),
            "prediction": pred[top],
            "failed": failed[top],
            "user": [users[i] for i in top.tolist()],
            "response": [
                r if isinstance(r, str) else "" for r in (responses[i] for i in top.tolist())
            ],
        }
        self._awaiting = _concat(_take(self._awaiting, np.flatnonzero(live)), new)
        self._jtotals["judgments"] += c
        self._jtotals["failures"] += int(failed.sum())
        last = self._jlast
        last["judge_failure_rate"] = float(failed.mean())
        last["prediction_mean"] = float(pred.mean())
        last["prediction_std"] = float(pred.std())
        last["selected_prediction_mean"] = float(pred[top].mean())
        last["candidates"] = float(c)
        return cand[top]

    def _parse_all(self, responses: Sequence[object]) -> list[float | None]:
        memo: dict[str, float | None] = {}  # judges often repeat short answers verbatim
        out: list[float | None] = []
        for r in responses:
            if not isinstance(r, str):
                out.append(None)
            elif r in memo:
                out.append(memo[r])
            else:
                out.append(memo.setdefault(r, parse_judgment(r, self._allowed)))
        return out

    def _observe(self, batch: GroupBatch) -> None:
        variances = batch.variances
        self._score(batch, variances)
        self._refresh_memory(batch, variances)
        self._batches += 1

    def _score(self, batch: GroupBatch, variances: NDArray[np.float64]) -> None:
        """Score the oldest pending judgment of each fed-back task; update the baseline."""
        pend = self._awaiting
        hit = np.flatnonzero(np.isin(pend["task"], batch.task_ids))
        if hit.size == 0:
            return
        hit = hit[np.lexsort((pend["select_call"][hit], pend["task"][hit]))]
        _, first = np.unique(pend["task"][hit], return_index=True)
        match = np.sort(hit[first])
        rec = _take(pend, match)
        v = variances[np.searchsorted(batch.task_ids, rec["task"])]
        reward = 1.0 - (4.0 * (rec["prediction"] - v)) ** 2
        if self.cfg.failure_reward is not None:
            reward = np.where(rec["failed"], self.cfg.failure_reward, reward)
        b = self._baseline
        k = match.size
        rec.update(
            step=np.full(k, batch.step, dtype=np.int64),
            variance=v,
            reward=reward,
            advantage=reward - b,
            baseline=np.full(k, b),
            batch=np.full(k, self._batches, dtype=np.int64),
        )
        alpha = self.cfg.baseline_ema
        self._baseline = alpha * b + (1.0 - alpha) * float(reward.mean())
        keep = np.ones(pend["task"].shape[0], dtype=np.bool_)
        keep[match] = False
        self._awaiting = _take(pend, np.flatnonzero(keep))
        recent = self._scored["batch"] > self._batches - self.cfg.keep_judge_records
        self._scored = _concat(_take(self._scored, np.flatnonzero(recent)), rec)
        self._jtotals["scored"] += k
        err = rec["prediction"] - v
        self._jlast["judge_reward_mean"] = float(reward.mean())
        self._jlast["calibration_mae"] = float(np.abs(err).mean())
        self._jlast["calibration_corr"] = _correlation(rec["prediction"], v)

    def _refresh_memory(self, batch: GroupBatch, variances: NDArray[np.float64]) -> None:
        """Keep the K most recent (task, variance) pairs, recency = (step, arrival)."""
        k = self.cfg.memory_size
        g = batch.num_groups
        if k == 0:
            return
        if g <= k:
            pick = np.arange(g)
        elif self.cfg.memory_selection == "spread":  # min, ..., max of this batch's variances
            pick = np.argsort(variances, kind="stable")[
                np.round(np.linspace(0, g - 1, k)).astype(int)
            ]
        else:
            pick = self.rng.choice(g, size=k, replace=False)
        new = {
            "task": batch.task_ids[pick],
            "variance": variances[pick],
            "step": np.full(pick.size, batch.step, dtype=np.int64),
            "seq": self._seq + np.arange(pick.size, dtype=np.int64),
        }
        self._seq += int(pick.size)
        mem = {key: np.concatenate([self._memory[key], new[key]]) for key in _MEMORY_ARRAYS}
        newest = np.lexsort((mem["seq"], mem["step"]))[-k:]
        self._memory = {key: val[np.sort(newest)] for key, val in mem.items()}

    # ------------------------------------------------------------------ judge records
    def judge_records(self, step: int) -> list[JudgeRecord]:
        """Scored judgments whose feedback came from trainer step `step` (folds feedback first).

        Records are kept for the `keep_judge_records` most recent feedback batches.
        """
        self.flush()
        return self._records(np.flatnonzero(self._scored["step"] == int(step)))

    def pop_judge_records(self) -> list[JudgeRecord]:
        """All kept scored judgments, oldest first, removing them (folds feedback first)."""
        self.flush()
        out = self._records(np.arange(self._scored["task"].shape[0]))
        self._scored = _empty_records(_DONE_ARRAYS)
        return out

    def _records(self, idx: NDArray[np.int64]) -> list[JudgeRecord]:
        d = self._scored
        out = []
        for i in idx.tolist():
            user = d["user"][i]
            out.append(
                JudgeRecord(
                    task_id=int(d["task"][i]),
                    step=int(d["step"][i]),
                    select_call=int(d["select_call"][i]),
                    messages=judge_messages(self.system_message, user),
                    prompt=render_judge_prompt(self.system_message, user),
                    response=d["response"][i],
                    prediction=float(d["prediction"][i]),
                    failed=bool(d["failed"][i]),
                    realised_variance=float(d["variance"][i]),
                    reward=float(d["reward"][i]),
                    advantage=float(d["advantage"][i]),
                    baseline=float(d["baseline"][i]),
                )
            )
        return out

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        return {
            "baseline": self._baseline,
            "seq": self._seq,
            "batches": self._batches,
            "memory": _texts_as_arrays(self._memory),
            "pending": _texts_as_arrays(self._awaiting),
            "done": _texts_as_arrays(self._scored),
            "totals": dict(self._jtotals),
            "last": dict(self._jlast),
        }

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        n = self.num_tasks
        raw = read_keys(state, "memory", self.name, tuple(_MEMORY_ARRAYS))
        memory = {k: _column(raw, k, t, "memory", n) for k, t in _MEMORY_ARRAYS.items()}
        pending = _parse_records(state["pending"], _PENDING_ARRAYS, "pending", n)
        done = _parse_records(state["done"], _DONE_ARRAYS, "done", n)
        if len({v.shape for v in memory.values()}) != 1 or memory["task"].ndim != 1:
            raise ValueError("metis state: memory columns have different lengths")
        if memory["task"].shape[0] > self.cfg.memory_size:
            raise ValueError("metis state: memory holds more exemplars than memory_size")
        who = self.name
        baseline = read_float(state, "baseline", who, -MAX_ABS_VALUE, MAX_ABS_VALUE, nan=False)
        totals = read_counts(state, "totals", who, tuple(self._jtotals))
        last = read_keys(state, "last", who, tuple(self._jlast))
        last = {k: read_float(last, k, who) for k in last}
        seq, batches = read_int(state, "seq", who), read_int(state, "batches", who)
        self._baseline, self._seq, self._batches = baseline, seq, batches
        self._memory, self._awaiting, self._scored = memory, pending, done
        self._jtotals, self._jlast = totals, last

    def _metrics(self) -> dict[str, float]:
        t = self._jtotals
        return {
            **self._jlast,
            "judge_failure_rate_cumulative": (
                t["failures"] / t["judgments"] if t["judgments"] else float("nan")
            ),
            "judge_baseline": self._baseline,
            "judgments": float(t["judgments"]),
            "judgments_scored": float(t["scored"]),
            "judgments_pending": float(self._awaiting["task"].shape[0]),
            "judgments_expired": float(t["expired"]),
            "memory_entries": float(self._memory["task"].shape[0]),
            "non_llm_judge": 0.0 if self.is_llm_judge else 1.0,
        }


def _column(raw: dict[str, Any], key: str, dtype: Any, what: str, n: int) -> NDArray[Any]:
    """One column of a record table: task ids in the pool, other ints >= 0, finite floats,
    predictions and variances in [0, 1/4]."""
    lo: float | None = None if dtype is np.float64 else 0
    hi: float | None = n - 1 if key == "task" else None
    if key in ("prediction", "variance"):
        lo, hi = 0.0, MAX_VARIANCE
    return read_array(raw, key, f"metis {what}", dtype, lo=lo, hi=hi, finite=True)


def _texts_as_arrays(records: dict[str, Any]) -> dict[str, Any]:
    """A record table with its judge prompts and responses as UTF-8 arrays: an LLM judge's
    long replies go to the file's arrays, not its bounded JSON header."""
    out = dict(records)
    for key in ("user", "response"):
        if key in records:  # the exemplar memory keeps neither
            out[key] = encode_texts(records[key])
    return out


def _strings(raw: dict[str, Any], key: str, what: str) -> list[str]:
    values = raw[key]
    if isinstance(values, dict):
        return decode_texts(values, f"metis state: {what} {key}")
    # States saved before texts were arrays: a list of strings.
    if not isinstance(values, list | np.ndarray) or not all(isinstance(s, str) for s in values):
        raise ValueError(f"metis state: {what} {key} must be a list of strings")
    return [str(s) for s in values]


def _parse_records(raw: dict[str, Any], kinds: dict[str, Any], what: str, n: int) -> dict[str, Any]:
    raw = read_keys({what: raw}, what, "metis", (*kinds, "failed", "user", "response"))
    recs: dict[str, Any] = {k: _column(raw, k, t, what, n) for k, t in kinds.items()}
    recs["failed"] = read_array(raw, "failed", f"metis {what}", np.bool_)
    recs["user"] = _strings(raw, "user", what)
    recs["response"] = _strings(raw, "response", what)
    length = recs["task"].shape[0]
    if any(np.ndim(v) != 1 or len(v) != length for v in recs.values()):
        raise ValueError(f"metis state: {what} judgment columns have different lengths")
    return recs


def _correlation(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """Pearson correlation, NaN when undefined (fewer than 2 points or a constant side)."""
    if x.size < 2 or np.ptp(x) == 0.0 or np.ptp(y) == 0.0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])
