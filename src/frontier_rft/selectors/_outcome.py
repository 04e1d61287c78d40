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
- Calibration: temperature scaling on held-out prompts. A fifth of the prompts (by a hash
  of the id, so a prompt's groups are all in or all out) is held out of a second fit on
  the rest; one scalar s (1 / temperature) maximises the forgetting-weighted likelihood of
  the held-out groups under that fit's logits times s, and predictions are softmax(s z)
  of the full fit. So the ridge's shrinkage (under-confident) and a few hundred effective
  groups against 100+ features (over-confident) are both corrected on outcomes the fit
  did not see. The check is in the metrics (`Calibration`): each group is scored on the
  prediction made before its outcome was seen, with the mean prediction against the
  observed share. A temperature fitted to those prequential predictions themselves was
  tried first and dropped: they came from older, less-fitted models, and it sharpened the
  current one past its data (on the planted pool of tests/test_skip_predict.py, mean
  P(all-correct) 0.11 against an observed share of 0.19).

`Calibration`: per epoch, the Brier score and the AUC of each side (all-correct vs rest,
all-wrong vs rest) of the predictions made before each group's outcome was seen.

Cost: O(window (d + 1)^2) a Newton step (d features; 2 (d + 1) parameters), O(d) per
prediction; memory O(window) plus O(groups of the current epoch) for the AUC.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import F64, I64
from frontier_rft.core.state_check import AttributeState, check_keys, read_array, read_int
from frontier_rft.selectors._ridge import one_blas_thread

__all__ = ["CORRECT", "MIXED", "WRONG", "Calibration", "OutcomePredictor", "auc", "labels_of"]

CORRECT, WRONG, MIXED = 0, 1, 2  # class indices; 'mixed' is the logistic's reference
_INTERCEPT_RIDGE = 1.0  # one pseudo-observation's worth: finite logits on a one-class window
_NEWTON_STEPS = 8  # per refit, warm-started; stops early once converged
_HELD_OUT = 5  # one prompt in this many is held out of the calibration fit
_SCALE_RANGE = (0.05, 20.0)  # 1 / temperature
_MAX_SHIFT = 20.0  # the calibration's shifts of the two logits
_TOL = 1e-6  # converged: the last step moved no weight and the loss by less (relative)
_MAX_EPOCHS = 32  # finished epochs whose calibration is kept and logged (the latest)


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


def softmax3(z: F64) -> F64:
    """(n, 3) class probabilities from (n, 2) logits against the reference class."""
    full = np.hstack([z, np.zeros((z.shape[0], 1))])
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


class OutcomePredictor(AttributeState):
    """Multinomial logistic P(all-correct, all-wrong, mixed | features), online, with
    forgetting (see the module docstring)."""

    STATE_KEYS = ("ids", "labels", "stamps", "weights", "calibration", "batches")
    """The attributes `state_dict()` saves."""

    def __init__(
        self, features: F64, ridge: float, forgetting: float, window: int, min_groups: float
    ):
        self.ridge, self.forgetting = float(ridge), float(forgetting)
        self.window, self.min_groups = int(window), float(min_groups)
        self.num_tasks = int(features.shape[0])
        self._design: F64 = self.standardised(features)
        d = self._design.shape[1]
        self.weights: F64 = np.zeros((2, d))
        self.calibration: F64 = np.array([1.0, 0.0, 0.0])  # (1 / temperature, shifts)
        self.batches = 0
        self.ids: I64 = np.zeros(0, np.int64)
        self.labels: NDArray[np.int8] = np.zeros(0, np.int8)
        self.stamps: I64 = np.zeros(0, np.int64)

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

    def logits(self, ids: I64) -> F64:
        """(n, 2) logits of all-correct and all-wrong against mixed."""
        x = self._design[ids]
        out: F64 = np.einsum("ij,kj->ik", x, self.weights)
        return out

    def predict(self, ids: I64) -> F64:
        """(n, 3) calibrated P(all-correct), P(all-wrong), P(mixed) of these prompts."""
        s, shift = self.calibration[0], self.calibration[1:]
        return softmax3(s * self.logits(ids) + shift)

    # ------------------------------------------------------------------ learn
    def _decay(self) -> F64:
        out: F64 = self.forgetting ** (self.batches - self.stamps).astype(np.float64)
        return out

    def observe(self, ids: I64, labels: NDArray[np.int8]) -> F64:
        """Add one batch of group outcomes (labels -1 are ignored) and refit; returns the
        (n, 3) predictions made for these groups before their outcomes were seen."""
        before = self.predict(ids)
        keep = labels >= 0
        if keep.any():
            self.batches += 1
            tail = max(0, self.ids.shape[0] + int(keep.sum()) - self.window)
            self.ids = np.concatenate([self.ids, ids[keep]])[tail:]
            self.labels = np.concatenate([self.labels, labels[keep]])[tail:]
            self.stamps = np.concatenate(
                [self.stamps, np.full(int(keep.sum()), self.batches, np.int64)]
            )[tail:]
            with one_blas_thread():
                self._fit()
        return before

    def _fit(self) -> None:
        """The full fit (warm-started), then the temperature from the held-out prompts."""
        x, y, sw = self._design[self.ids], np.eye(3)[self.labels], self._decay()
        self.weights = self._newton(x, y, sw, self.weights)
        out = (self.ids * 2654435761) % 2**32 % _HELD_OUT == 0  # Knuth's multiplicative hash
        if float(sw[out].sum()) < self.min_groups or not (~out).any():
            return  # too few held-out groups yet: the fit's own probabilities
        part = self._newton(x[~out], y[~out], sw[~out], self.weights)
        self.calibration = _fit_calibration(x[out] @ part.T, self.labels[out], sw[out])

    def _objective(self, w: F64, x: F64, y: F64, sw: F64, pen: F64) -> float:
        z = np.hstack([x @ w.T, np.zeros((x.shape[0], 1))])
        top = z.max(axis=1, keepdims=True)
        lse = (top[:, 0] + np.log(np.exp(z - top).sum(axis=1))).astype(np.float64)
        nll = float(sw @ (lse - (z * y).sum(axis=1)))
        return nll + 0.5 * float((pen * w * w).sum())

    def _newton(self, x: F64, y: F64, sw: F64, start: F64) -> F64:
        """Newton steps from `start` on the penalised, weighted log-likelihood (step halving
        keeps every step downhill)."""
        d = x.shape[1]
        pen = np.full((2, d), self.ridge)
        pen[:, -1] = _INTERCEPT_RIDGE
        w = start.copy()
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
            gain, w, loss = loss - new, trial, new
            if float(np.abs(t * step).max()) < _TOL or gain < _TOL * abs(loss):
                break
        out: F64 = np.asarray(w, np.float64)
        return out

    # ------------------------------------------------------------------ state
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
        d = self.weights.shape[1]
        weights = read_array(state, "weights", who, np.float64, shape=(2, d), finite=True)
        calibration = read_array(
            state, "calibration", who, np.float64, shape=(3,), lo=-_MAX_SHIFT, hi=_MAX_SHIFT
        )
        if not _SCALE_RANGE[0] <= calibration[0] <= _SCALE_RANGE[1]:
            raise ValueError(f"{who} state: calibration's scale lies outside {_SCALE_RANGE}")
        self.ids, self.labels, self.stamps = ids, labels, stamps
        self.weights, self.calibration, self.batches = weights, calibration, batches


def _fit_calibration(z: F64, labels: NDArray[np.int8], sw: F64) -> F64:
    """theta = (s, b_c, b_w) maximising sum sw log softmax([s z_c + b_c, s z_w + b_w, 0])
    [label]: a temperature and a shift per side (Platt's scaling for three classes; convex:
    Newton from (1, 0, 0), penalised by |theta - (1, 0, 0)|^2 / 2: one pseudo-group's worth,
    so a one-class or separable sample stays finite; s clipped to _SCALE_RANGE)."""
    n = z.shape[0]
    phi = np.zeros((n, 3, 3))  # phi[i, k]: the features of class k's calibrated logit
    phi[:, :2, 0] = z
    phi[:, 0, 1] = phi[:, 1, 2] = 1.0
    y = np.eye(3)[labels]
    prior = np.array([1.0, 0.0, 0.0])
    theta = prior.copy()
    for _ in range(50):
        p = softmax3(np.einsum("ikj,j->ik", phi[:, :2], theta))
        mean = np.einsum("ik,ikj->ij", p, phi)
        grad = sw @ (mean - np.einsum("ik,ikj->ij", y, phi)) + (theta - prior)
        second = np.einsum("i,ik,ikj,ikl->jl", sw, p, phi, phi)
        hess = second - np.einsum("i,ij,il->jl", sw, mean, mean) + np.eye(3)
        step = np.linalg.solve(hess, grad)
        new = theta - step
        new[0] = min(max(new[0], _SCALE_RANGE[0]), _SCALE_RANGE[1])
        new[1:] = np.clip(new[1:], -_MAX_SHIFT, _MAX_SHIFT)
        done = float(np.abs(new - theta).max()) < 1e-10
        theta = new
        if done:
            break
    out: F64 = np.asarray(theta, np.float64)
    return out


class Calibration(AttributeState):
    """Brier score and AUC of each side, per epoch, of predictions made before the outcome.

    The current epoch's predictions are kept (up to `cap` groups, for the AUC; the Brier
    sums count every group) and summarised when the next epoch's first group arrives."""

    STATE_KEYS = ("epoch", "scores", "labels", "counted", "sums", "finished")
    """The attributes `state_dict()` saves."""
    COLUMNS = (
        "epoch",
        "groups",
        "brier_correct",
        "auc_correct",
        "mean_correct",
        "share_correct",
        "brier_wrong",
        "auc_wrong",
        "mean_wrong",
        "share_wrong",
    )
    """The columns of `finished` (and the metrics of each epoch): per side, the Brier score,
    the AUC, the mean predicted probability and the observed share (calibration in the
    large: the two should agree)."""

    def __init__(self, cap: int):
        self.cap = int(cap)
        self.epoch = 0
        self.scores: F64 = np.zeros((0, 2))  # P(all-correct), P(all-wrong) per group
        self.labels: NDArray[np.int8] = np.zeros(0, np.int8)
        self.counted = 0
        # per side (correct, wrong): sums of squared errors, predictions and outcomes
        self.sums: F64 = np.zeros((2, 3))
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
            self.sums = np.zeros((2, 3))
        scores, labels = probs[keep][:, :2], labels[keep]
        truth = np.stack([labels == CORRECT, labels == WRONG], axis=1)
        batch = [((scores - truth) ** 2).sum(axis=0), scores.sum(axis=0), truth.sum(axis=0)]
        self.sums = self.sums + np.stack(batch, axis=1)
        self.counted += int(keep.sum())
        room = max(0, self.cap - self.labels.shape[0])
        self.scores = np.vstack([self.scores, scores[:room]])
        self.labels = np.concatenate([self.labels, labels[:room]])

    def summary(self) -> F64:
        """The current epoch's row of `COLUMNS` (NaN where undefined)."""
        n = self.counted
        means = self.sums / n if n else np.full((2, 3), np.nan)
        row = [float(self.epoch), float(n)]
        for k in (CORRECT, WRONG):
            brier, mean, share = means[k]
            row += [brier, auc(self.scores[:, k], self.labels == k), mean, share]
        return np.array(row)

    def metrics(self) -> dict[str, float]:
        """calibration/epoch<e>/<column> for each finished epoch and the current one."""
        rows = [*self.finished, self.summary()] if self.counted else list(self.finished)
        out: dict[str, float] = {}
        for row in rows:
            e = int(row[0])
            for name, value in zip(self.COLUMNS[1:], row[1:], strict=True):
                out[f"calibration/epoch{e}/{name}"] = float(value)
        return out

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
        sums = read_array(
            state, "sums", who, np.float64, shape=(2, 3), lo=0, hi=counted, finite=True
        )
        cols = len(self.COLUMNS)
        finished = read_array(state, "finished", who, np.float64, shape=(None, cols), lo=0)
        if finished.shape[0] > _MAX_EPOCHS or not np.all(np.isfinite(finished[:, :2])):
            raise ValueError(f"{who} state: calibration's finished epochs are malformed")
        if np.any(finished[:, 2:] > 1.0):  # NaN (one class only) compares False: allowed
            raise ValueError(f"{who} state: calibration scores must lie in [0, 1]")
        self.epoch, self.counted, self.scores, self.labels = epoch, counted, scores, labels
        self.sums, self.finished = sums, finished
