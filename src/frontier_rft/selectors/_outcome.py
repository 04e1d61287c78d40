"""A rollout-free, three-way predictor of a prompt's group outcome, and its calibration.

`OutcomePredictor`: P(all-correct), P(all-wrong), P(mixed) for a group of a prompt from its
features alone (the policy's self-embeddings where given), learned online across prompts
from every group outcome seen so far, so it scores prompts never rolled out.

- Model: multinomial logistic regression on the pool-standardised features plus an
  intercept, class 'mixed' the reference (logits z = [x W_c, x W_w, 0]), fitted by
  penalised maximum likelihood (L2 `ridge` on the weights, 1 on the intercepts: one
  pseudo-observation, so a window of one class keeps finite logits).
- Forgetting: the fit weighs a group seen t batches ago by forgetting^t, over a window of
  the last `window` groups (stored as prompt ids, so refreshed features are used for old
  outcomes too); the policy moves and the fit follows it. Refit after each batch by Newton
  steps warm-started from the last weights (convex, so a handful suffices).
- Calibration: temperature scaling. Each group's raw logits are stored as they were BEFORE
  its outcome was seen (prequential); after each refit one scalar s (1 / temperature) is
  fitted to them by weighted maximum likelihood, and predictions are softmax(s z). An
  L2-penalised fit on a few hundred effective groups and 100+ features is over- or
  under-confident out of sample; s corrects that on exactly the out-of-sample predictions
  the calibration metrics score.

`Calibration`: per epoch, the Brier score and the AUC of each side (all-correct vs rest,
all-wrong vs rest) of the predictions made before each group's outcome was seen.

Cost: O(window (d + 1)^2) a Newton step (d features; 2 (d + 1) parameters), O(d) per
prediction; memory O(window) plus O(groups of the current epoch) for the AUC.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.state_check import check_keys, read_array, read_float, read_int
from frontier_rft.selectors._ridge import one_blas_thread

__all__ = ["CORRECT", "MIXED", "WRONG", "Calibration", "OutcomePredictor", "auc", "labels_of"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
CORRECT, WRONG, MIXED = 0, 1, 2  # class indices; 'mixed' is the logistic's reference
_INTERCEPT_RIDGE = 1.0  # one pseudo-observation's worth: finite logits on a one-class window
_NEWTON_STEPS = 8  # per refit, warm-started; stops early once converged
_TOL = 1e-7
_SCALE_RANGE = (0.1, 10.0)  # 1 / temperature
_MAX_LOGIT = 50.0  # stored prequential logits are clipped here (exp stays finite)
_MAX_EPOCHS = 64  # finished epochs whose calibration is kept (the latest)


def labels_of(lo: F64, hi: F64) -> NDArray[np.int8]:
    """Class of each group from its lowest and highest reward: CORRECT (all 1), WRONG (all
    0), MIXED (not all equal), -1 for a flat group in between (fractional rewards: not a
    class the predictor learns)."""
    out = np.full(lo.shape[0], -1, np.int8)
    out[hi > lo] = MIXED
    flat = hi <= lo
    out[flat & (lo >= 1.0 - 1e-9)] = CORRECT
    out[flat & (hi <= 1e-9)] = WRONG
    return out


def softmax3(z: F64, scale: float = 1.0) -> F64:
    """(n, 3) class probabilities from (n, 2) logits against the reference class."""
    full = np.hstack([scale * z, np.zeros((z.shape[0], 1))])
    full -= full.max(axis=1, keepdims=True)
    e = np.exp(full)
    out: F64 = e / e.sum(axis=1, keepdims=True)
    return out


def auc(scores: F64, positive: NDArray[np.bool_]) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half); NaN with one class only."""
    pos = int(positive.sum())
    neg = positive.shape[0] - pos
    if pos == 0 or neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    ranks = np.empty(scores.shape[0])
    start = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    end = np.r_[start[1:], scores.shape[0]]
    midrank = (start + end + 1) / 2.0  # 1-based midranks of each run of ties
    ranks[order] = np.repeat(midrank, end - start)
    return float((ranks[positive].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


class OutcomePredictor:
    """Multinomial logistic P(all-correct, all-wrong, mixed | features), online, calibrated
    by temperature on its own prequential predictions (see the module docstring)."""

    STATE_KEYS = ("ids", "labels", "stamps", "logits", "weights", "scale", "batches")
    """The keys of `state_dict()`."""

    def __init__(
        self, features: F64, ridge: float, forgetting: float, window: int, min_groups: float
    ):
        self.ridge, self.forgetting = float(ridge), float(forgetting)
        self.window, self.min_groups = int(window), float(min_groups)
        self.num_tasks = int(features.shape[0])
        self._design: F64 = self.standardised(features)
        d = self._design.shape[1]
        self.weights: F64 = np.zeros((2, d))
        self.scale = 1.0
        self.batches = 0
        self.ids: I64 = np.zeros(0, np.int64)
        self.labels: NDArray[np.int8] = np.zeros(0, np.int8)
        self.stamps: I64 = np.zeros(0, np.int64)
        self.logits: F64 = np.zeros((0, 2))

    @staticmethod
    def standardised(features: F64) -> F64:
        """[(x - mean) / sd, 1] over the pool: the ridge penalty is then the same for every
        feature whatever its scale (self-embeddings have unit rows: entries ~ 1 / sqrt(d))."""
        x = np.asarray(features, np.float64)
        mean, sd = x.mean(axis=0), x.std(axis=0)
        sd = np.where(sd > 1e-12 * max(1.0, float(np.abs(x).max(initial=0.0))), sd, 1.0)
        return np.hstack([(x - mean) / sd, np.ones((x.shape[0], 1))])

    def refresh(self, features: F64) -> None:
        """Read new features (same dimension); past outcomes are refitted on them at the next
        batch."""
        self._design = self.standardised(features)

    # ------------------------------------------------------------------ predict
    @property
    def evidence(self) -> float:
        """Groups in the window, each weighed by its forgetting."""
        return float(self._decay().sum())

    @property
    def ready(self) -> bool:
        """Whether enough (decayed) groups were seen to act on the predictions."""
        return self.batches > 0 and self.evidence >= self.min_groups

    def raw_logits(self, ids: I64) -> F64:
        """(n, 2) logits of all-correct and all-wrong against mixed, before calibration."""
        x = self._design[ids]
        out: F64 = np.einsum("ij,kj->ik", x, self.weights)
        return out

    def predict(self, ids: I64) -> F64:
        """(n, 3) calibrated P(all-correct), P(all-wrong), P(mixed) of these prompts."""
        return softmax3(self.raw_logits(ids), self.scale)

    # ------------------------------------------------------------------ learn
    def _decay(self) -> F64:
        out: F64 = self.forgetting ** (self.batches - self.stamps).astype(np.float64)
        return out

    def observe(self, ids: I64, labels: NDArray[np.int8]) -> F64:
        """Add one batch of group outcomes (labels -1 are ignored) and refit; returns the
        calibrated (n, 3) predictions made for these groups before their outcomes were seen."""
        before = self.predict(ids)
        keep = labels >= 0
        if keep.any():
            raw = np.clip(self.raw_logits(ids[keep]), -_MAX_LOGIT, _MAX_LOGIT)
            self.batches += 1
            tail = max(0, self.ids.shape[0] + int(keep.sum()) - self.window)
            self.ids = np.concatenate([self.ids, ids[keep]])[tail:]
            self.labels = np.concatenate([self.labels, labels[keep]])[tail:]
            self.stamps = np.concatenate(
                [self.stamps, np.full(int(keep.sum()), self.batches, np.int64)]
            )[tail:]
            self.logits = np.concatenate([self.logits, raw])[tail:]
            with one_blas_thread():
                self._fit()
            self.scale = self._fit_scale()
        return before

    def _objective(self, w: F64, x: F64, y: F64, sw: F64, pen: F64) -> float:
        z = np.hstack([x @ w.T, np.zeros((x.shape[0], 1))])
        top = z.max(axis=1, keepdims=True)
        lse = (top[:, 0] + np.log(np.exp(z - top).sum(axis=1))).astype(np.float64)
        nll = float(sw @ (lse - (z * y).sum(axis=1)))
        return nll + 0.5 * float((pen * w * w).sum())

    def _fit(self) -> None:
        """Newton steps on the penalised, forgetting-weighted log-likelihood (step halving
        keeps every step downhill)."""
        x, sw = self._design[self.ids], self._decay()
        y = np.eye(3)[self.labels]
        d = x.shape[1]
        pen = np.full((2, d), self.ridge)
        pen[:, -1] = _INTERCEPT_RIDGE
        w = self.weights.copy()
        loss = self._objective(w, x, y, sw, pen)
        for _ in range(_NEWTON_STEPS):
            p = softmax3(x @ w.T)
            grad = ((p[:, :2] - y[:, :2]) * sw[:, None]).T @ x + pen * w
            hess = np.empty((2 * d, 2 * d))
            for a in range(2):
                for b in range(a, 2):
                    c = p[:, a] * ((a == b) - p[:, b]) * sw
                    block = (x * c[:, None]).T @ x
                    hess[a * d : (a + 1) * d, b * d : (b + 1) * d] = block
                    hess[b * d : (b + 1) * d, a * d : (a + 1) * d] = block.T
            hess[np.diag_indices(2 * d)] += pen.ravel()
            step = np.linalg.solve(hess, grad.ravel()).reshape(2, d)
            t = 1.0
            while t > 1e-4:
                trial = w - t * step
                new = self._objective(trial, x, y, sw, pen)
                if new <= loss + 1e-12 * abs(loss):
                    break
                t /= 2.0
            else:
                break  # no descent left: at the optimum up to rounding
            w, loss = trial, new
            if float(np.abs(t * step).max()) < _TOL:
                break
        self.weights = w

    def _fit_scale(self) -> float:
        """s = 1 / temperature maximising the weighted likelihood of the prequential logits
        (convex in s: Newton, clipped to [0.1, 10]); 1 until min_groups were predicted."""
        sw = self._decay()
        if float(sw.sum()) < self.min_groups:
            return 1.0
        z = np.hstack([self.logits, np.zeros((self.logits.shape[0], 1))])
        zy = z[np.arange(z.shape[0]), self.labels]
        lo, hi = _SCALE_RANGE
        s = min(max(self.scale, lo), hi)
        for _ in range(30):
            p = softmax3(self.logits, s)
            mean = (p * z).sum(axis=1)
            grad = float(sw @ (mean - zy))
            curv = float(sw @ ((p * z * z).sum(axis=1) - mean * mean))
            if curv <= 1e-12:  # every stored logit alike: nothing to scale
                break
            new = min(max(s - grad / curv, lo), hi)
            if abs(new - s) < 1e-10:
                s = new
                break
            s = new
        return s

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {
            "ids": self.ids,
            "labels": self.labels,
            "stamps": self.stamps,
            "logits": self.logits,
            "weights": self.weights,
            "scale": self.scale,
            "batches": self.batches,
        }

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        """Restore; a ValueError naming `who` leaves this predictor unchanged."""
        state = check_keys(state, f"{who} state: predictor", self.STATE_KEYS)
        batches = read_int(state, "batches", who)
        ids = read_array(state, "ids", who, np.int64, lo=0, hi=self.num_tasks - 1)
        m = ids.shape[0]
        if m > self.window:
            raise ValueError(f"{who} state: predictor holds {m} groups, its window {self.window}")
        labels = read_array(state, "labels", who, np.int8, shape=(m,), lo=0, hi=2)
        stamps = read_array(state, "stamps", who, np.int64, shape=(m,), lo=1, hi=batches)
        if np.any(np.diff(stamps) < 0):
            raise ValueError(f"{who} state: predictor stamps are not in arrival order")
        logits = read_array(
            state, "logits", who, np.float64, shape=(m, 2), lo=-_MAX_LOGIT, hi=_MAX_LOGIT
        )
        d = self.weights.shape[1]
        weights = read_array(state, "weights", who, np.float64, shape=(2, d), finite=True)
        scale = read_float(state, "scale", who, *_SCALE_RANGE, nan=False)
        self.ids, self.labels, self.stamps, self.logits = ids, labels, stamps, logits
        self.weights, self.scale, self.batches = weights, scale, batches


class Calibration:
    """Brier score and AUC of each side, per epoch, of predictions made before the outcome.

    The current epoch's predictions are kept (up to `cap` groups, for the AUC; the Brier
    sums count every group) and summarised when the next epoch's first group arrives."""

    STATE_KEYS = ("epoch", "scores", "labels", "counted", "squares", "finished")
    """The keys of `state_dict()`."""
    COLUMNS = ("epoch", "groups", "brier_correct", "auc_correct", "brier_wrong", "auc_wrong")
    """The columns of `finished` (and the metrics of each epoch)."""

    def __init__(self, cap: int):
        self.cap = int(cap)
        self.epoch = 0
        self.scores: F64 = np.zeros((0, 2))  # P(all-correct), P(all-wrong) per group
        self.labels: NDArray[np.int8] = np.zeros(0, np.int8)
        self.counted = 0
        self.squares: F64 = np.zeros(2)  # sums of squared errors, each side
        self.finished: F64 = np.zeros((0, len(self.COLUMNS)))

    def add(self, epoch: int, probs: F64, labels: NDArray[np.int8]) -> None:
        """Score one batch's pre-outcome predictions (labels -1 are not scored)."""
        keep = labels >= 0
        if not keep.any():
            return
        if epoch != self.epoch:
            if self.counted:
                self.finished = np.vstack([self.finished, self.summary()])[-_MAX_EPOCHS:]
            self.epoch, self.counted = epoch, 0
            self.scores, self.labels = np.zeros((0, 2)), np.zeros(0, np.int8)
            self.squares = np.zeros(2)
        scores, labels = probs[keep][:, :2], labels[keep]
        truth = np.stack([labels == CORRECT, labels == WRONG], axis=1)
        self.squares = self.squares + ((scores - truth) ** 2).sum(axis=0)
        self.counted += int(keep.sum())
        room = max(0, self.cap - self.labels.shape[0])
        self.scores = np.vstack([self.scores, scores[:room]])
        self.labels = np.concatenate([self.labels, labels[:room]])

    def summary(self) -> F64:
        """The current epoch's row of `COLUMNS` (NaN where undefined)."""
        n = self.counted
        brier = self.squares / n if n else np.full(2, np.nan)
        sides = [auc(self.scores[:, k], self.labels == k) for k in (CORRECT, WRONG)]
        return np.array([self.epoch, n, brier[0], sides[0], brier[1], sides[1]])

    def metrics(self) -> dict[str, float]:
        """calibration/epoch<e>/<column> for each finished epoch and the current one."""
        rows = [*self.finished, self.summary()] if self.counted else list(self.finished)
        out: dict[str, float] = {}
        for row in rows:
            e = int(row[0])
            for name, value in zip(self.COLUMNS[1:], row[1:], strict=True):
                out[f"calibration/epoch{e}/{name}"] = float(value)
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "scores": self.scores,
            "labels": self.labels,
            "counted": self.counted,
            "squares": self.squares,
            "finished": self.finished,
        }

    def load_state_dict(self, state: dict[str, Any], who: str) -> None:
        """Restore; a ValueError naming `who` leaves this record unchanged."""
        state = check_keys(state, f"{who} state: calibration", self.STATE_KEYS)
        epoch = read_int(state, "epoch", who)
        counted = read_int(state, "counted", who, hi=2**62)
        scores = read_array(state, "scores", who, np.float64, shape=(None, 2), lo=0, hi=1)
        m = scores.shape[0]
        if m > min(self.cap, counted):
            raise ValueError(f"{who} state: calibration holds {m} scores for {counted} groups")
        labels = read_array(state, "labels", who, np.int8, shape=(m,), lo=0, hi=2)
        squares = read_array(
            state, "squares", who, np.float64, shape=(2,), lo=0, hi=counted, finite=True
        )
        cols = len(self.COLUMNS)
        finished = read_array(state, "finished", who, np.float64, shape=(None, cols), lo=0)
        if finished.shape[0] > _MAX_EPOCHS or not np.all(np.isfinite(finished[:, :2])):
            raise ValueError(f"{who} state: calibration's finished epochs are malformed")
        if np.any(finished[:, 2:] > 1.0):  # NaN (one class only) compares False: allowed
            raise ValueError(f"{who} state: calibration scores must lie in [0, 1]")
        self.epoch, self.counted, self.scores, self.labels = epoch, counted, scores, labels
        self.squares, self.finished = squares, finished
