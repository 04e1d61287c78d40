"""One selector shared by many rollout workers: staleness policy, leases and durability.

This is the service logic, free of any transport: `frontier_rft.integrations.ray` puts
it behind a named Ray actor, tests drive it in-process. Every state change is one
numbered operation (select, update, flush, set_policy_version) applied in arrival order;
with a `checkpoint_dir` each is appended to a write-ahead log before it is acknowledged,
and a periodic or on-demand checkpoint snapshots the selector and the service. A service
constructed on a directory that holds a checkpoint resumes from it and replays the log,
which reproduces the state exactly: the selector is deterministic given the order of
selects and updates, and the log keeps that order.

Staleness: an update's lag is the newest policy version the service has seen minus the
version its rollouts were sampled with. 'accept' folds every update in; 'drop' discards
updates lagging more than `max_lag`; 'downweight' discards those too and keeps a share
`downweight_decay ** lag` of each stale group's rollouts (a seeded subsample, never fewer
than `downweight_min_rollouts`). Feedback has no weights; a subsample keeps each group's
success-rate estimate unbiased and removes evidence, which for the count-based posteriors
(BOTS, MoPPS, DOTS) is a likelihood tempered by the kept share.

Leases: every task handed out by `select` is leased until its results arrive. A lease not
reported within `lease_timeout_selects` select calls (by default the prioritized
selector's own `inflight_timeout`, so both send the task home at the same select) or
`lease_timeout_s` seconds expires: it is dropped from the table and counted.

Duplicates: the service remembers the (step, task) groups delivered to it, folded,
thinned or dropped alike, over the selector's `dedupe_window`; an idempotent update drops
the rollouts of groups it already had before judging staleness, so each group counts
once in the counters, and the selector never sees a duplicate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frontier_rft.core.arrays import I64
from frontier_rft.core.bounds import bounded_int
from frontier_rft.core.config import config_to_dict
from frontier_rft.core.feedback import Feedback
from frontier_rft.core.pool_diff import pool_differences
from frontier_rft.core.selector import Selector
from frontier_rft.core.state_check import read_array, read_int
from frontier_rft.selectors.persistence import load_selector
from frontier_rft.service.config import (
    DEFAULT_LEASE_SELECTS,
    SelectorSpec,
    ServiceConfig,
    own_collaborators,
)
from frontier_rft.service.journal import Journal, decode_array, encode_array
from frontier_rft.service.leases import LeaseTable
from frontier_rft.service.validation import (
    Checked,
    check_feedback,
    check_integer,
    check_jump,
    check_record,
)

__all__ = ["STATE_VERSION", "SelectorService", "SelectorSpec", "ServiceConfig"]

_EMPTY = np.zeros(0, dtype=np.int64)

STATE_VERSION = 1
"""Version of the service's own checkpoint layout (ckpt-<seq>.json)."""
_COUNTERS = (
    "selects",
    "updates",
    "flushes",
    "accepted_rollouts",
    "stale_updates",
    "dropped_stale_updates",
    "dropped_stale_rollouts",
    "thinned_rollouts",
    "unversioned_updates",
    "leases_issued",
    "leases_reported",
    "leases_expired",
    "unleased_reports",
    "max_lag",
    "poison_records_skipped",
    "duplicates_dropped",
)


class SelectorService:
    """A selector plus staleness policy, lease table and (optionally) checkpoint + log.

    `selector` (or its SelectorSpec, when it crosses a process boundary) is the initial
    state, used only when `config.checkpoint_dir` holds no checkpoint; otherwise the
    service resumes from the directory, and the selector only has to match it. None
    resumes from the directory without that check (a restarted actor).
    """

    def __init__(
        self,
        selector: Selector | SelectorSpec | None,
        config: ServiceConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ):
        self.config = config = config or ServiceConfig()
        if selector is not None and not isinstance(selector, Selector | SelectorSpec):
            raise ValueError(
                "the service needs a Selector (make_selector(name, pool)) or a SelectorSpec, "
                f"got {type(selector).__name__}"
            )
        if selector is None:
            if config.checkpoint_dir is None:
                raise ValueError("a service without a selector resumes from checkpoint_dir")
            collaborators: Mapping[str, Any] = {}
        elif isinstance(selector, SelectorSpec):
            collaborators = selector.collaborators
            selector = selector.build()
        else:
            collaborators = own_collaborators(selector)
        self.clock = clock
        self.selector: Selector = selector  # type: ignore[assignment]  # set by _open if None
        self.seq = 0
        """Number of operations applied so far (the seq of the last one)."""
        self.policy_version = -1
        """Newest policy version seen in select, update or set_policy_version (-1 = none)."""
        self._counts = dict.fromkeys(_COUNTERS, 0)
        self._seen: dict[int, I64] = {}
        """Step -> sorted task ids of the groups delivered for it (folded, thinned or
        dropped), over the selector's dedupe_window steps."""
        self._failed: BaseException | None = None
        self._replaying = False
        self._group = False  # inside update_many: records are fsynced once, at its end
        self._dirty = False
        self.defer_sync = False
        """Leave fsyncs (and periodic checkpoints) to the caller, which makes the records of
        many calls durable with one fsync before acknowledging them (AsyncShardActor)."""
        self.replayed = 0
        """Operations replayed from the log when this service started."""
        self._journal: Journal | None = None
        self._last_checkpoint_time = clock()
        self._last_checkpoint_ms = float("nan")
        if config.checkpoint_dir is None:
            assert selector is not None
            self._init_leases()
            return
        self._journal = Journal(
            config.checkpoint_dir,
            sync=config.durability == "fsync",
            lock_timeout_s=config.lock_timeout_s,
        )
        try:
            self._open(selector, collaborators)
        except BaseException:
            self._journal.close()  # release the directory for a corrected retry
            raise

    def _open(self, given: Selector | None, collaborators: Mapping[str, Any]) -> None:
        """Start fresh on an empty directory, or resume: checkpoint, then replay the log."""
        assert self._journal is not None
        latest = self._journal.latest()
        if latest is None:
            if given is None:
                raise ValueError(f"{self.config.checkpoint_dir} holds no checkpoint to resume")
            self._init_leases()
            self._checkpoint()  # seq 0: a resume point from the very first operation
            return
        _, path, state = latest
        self.selector = load_selector(path, **collaborators)
        with self._damaged_files():
            self._check_resume(given, state)
            self._load_service_state(state)
            records = self._journal.records_after(self.seq)
        # Replay runs the selector's own code (a METIS judge, an ADCL estimator): its errors
        # are its own, not a damaged directory's.
        self.replay(records)
        self._checkpoint()

    @contextlib.contextmanager
    def _damaged_files(self) -> Iterator[None]:
        """A checkpoint or log that parses but has the wrong shape: one error naming the
        directory instead of a deep KeyError or TypeError."""
        try:
            yield
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ValueError(
                f"{self.config.checkpoint_dir}: cannot resume, its checkpoint or log is damaged "
                f"({type(exc).__name__}: {str(exc)[:80]}); restore the directory from a copy"
            ) from exc

    # ------------------------------------------------------------------ operations
    def select(self, batch_size: int, policy_version: int | None = None) -> NDArray[np.int64]:
        """Hand out `batch_size` tasks (leased until reported); policy_version is the caller's."""
        self._check_alive()
        version = check_integer(policy_version, "policy_version", optional=True)
        check_jump(version, self.policy_version, self.config.max_version_jump, "policy_version")
        return self._select(batch_size, version, self.clock())

    def update(self, feedback: Feedback, *, idempotent: bool = False) -> dict[str, int]:
        """Apply the staleness policy and record the feedback; durable when this returns.

        Returns the acknowledgement: `seq` of the operation, the `lag`, rollouts passed
        to the selector (`accepted`), dropped as stale (`dropped`), removed by
        down-weighting (`thinned`) and dropped as duplicates (`duplicates`). With
        `idempotent=True` the rollouts of a (step, task) group the service already had are
        duplicates, recognised before staleness is judged, so a retried delivery counts
        once in every counter (docs/contract.md).
        """
        self._check_alive()
        return self._update(self._check(feedback, self.policy_version), idempotent)

    def update_many(
        self, feedbacks: Sequence[Feedback], idempotent: bool = False
    ) -> list[dict[str, int]]:
        """Group commit: apply the updates in order and make them durable with one fsync.

        Every update is checked before the first is applied, so a bad one rejects the
        whole call and changes nothing. Returns one acknowledgement per update.
        """
        self._check_alive()
        checked = self._check_many(feedbacks)
        self._group = True
        try:
            return [self._update(c, idempotent) for c in checked]
        finally:
            self._group = False
            if not self.defer_sync:
                self._sync()

    def check_many(self, feedbacks: Sequence[Feedback]) -> int:
        """Run every check `update_many` would, apply nothing; returns the policy version.

        A sharded client calls it on every shard before sending a batch a shard might
        refuse, so no shard applies part of a call another shard rejects.
        """
        self._check_alive()
        self._check_many(feedbacks)
        return self.policy_version

    def _check_many(self, feedbacks: Sequence[Feedback]) -> list[Checked]:
        if isinstance(feedbacks, Feedback) or not isinstance(feedbacks, Sequence):
            raise ValueError(
                f"update_many takes a list of Feedback, got {type(feedbacks).__name__} "
                "(one Feedback goes to update)"
            )
        checked, newest = [], self.policy_version
        for fb in feedbacks:
            checked.append(self._check(fb, newest))
            v = checked[-1][3]
            newest = newest if v is None else max(newest, v)
        return checked

    def _check(self, feedback: Feedback, newest: int) -> Checked:
        """Every boundary check of an update (validation.py), before anything is applied."""
        sel = self.selector
        checked = check_feedback(feedback, sel.num_tasks, sel.reward_bounds)
        version = checked[3]
        if version is None and self.config.staleness != "accept":
            raise ValueError(
                f"staleness={self.config.staleness!r} needs Feedback.policy_version: set it "
                "to the policy version the rollouts were sampled with"
            )
        check_jump(version, newest, self.config.max_version_jump, "Feedback.policy_version")
        return checked

    def flush(self) -> int:
        """Fold buffered feedback into the selector now (a logged operation); returns its seq."""
        self._check_alive()
        self.selector.flush()
        self._counts["flushes"] += 1
        return self._commit({"op": "flush"}, durable=True)

    def set_policy_version(self, version: int) -> int:
        """Tell the service the trainer's newest policy version; returns the operation's seq."""
        self._check_alive()
        v = check_integer(version, "version")
        assert v is not None  # the trainer's own announcement: no jump limit
        if v < self.policy_version:
            # e.g. a trainer resumed from an older checkpoint: every worker's update would be
            # judged stale against the newer version and dropped or down-weighted.
            raise ValueError(
                f"policy version {v} is older than the newest this service has seen "
                f"({self.policy_version}); versions only move forward. A trainer resumed from "
                "an older checkpoint needs a new service (a new name or checkpoint_dir)"
            )
        self.policy_version = v
        return self._commit({"op": "version", "v": v}, durable=True)

    def save(self) -> dict[str, Any]:
        """Checkpoint now (atomically); returns {"seq", "path"} of the selector file."""
        self._check_alive()
        if self._journal is None:
            raise ValueError("this service has no checkpoint_dir; set ServiceConfig.checkpoint_dir")
        path = self._checkpoint()
        return {"seq": self.seq, "path": str(path)}

    def metrics(self) -> dict[str, float]:
        """The selector's metrics plus `service/...`; folds nothing in (like Selector.metrics)."""
        out = self.selector.metrics()
        c = self._counts
        for key in _COUNTERS:
            out[f"service/{key}"] = float(c[key])
        out["service/seq"] = float(self.seq)
        out["service/policy_version"] = float(self.policy_version)
        out["service/leases_active"] = float(self.leases.active)
        out["service/replayed_ops"] = float(self.replayed)
        j = self._journal
        out["service/checkpoint_seq"] = float(j.checkpoint_seq) if j else float("nan")
        out["service/ops_since_checkpoint"] = float(self.seq - j.checkpoint_seq) if j else 0.0
        out["service/checkpoint_ms"] = self._last_checkpoint_ms
        return out

    def selector_state(self) -> dict[str, Any]:
        """The selector's state_dict (for comparing services)."""
        return self.selector.state_dict()

    def identity(self) -> dict[str, Any]:
        """What a client starting this service must match: selector, config, pool, settings."""
        return {
            "selector": self.selector.name,
            "config": config_to_dict(self.selector.config),
            "pool": self.selector.pool.fingerprint,
            "service": dataclasses.asdict(self.config),
        }

    def service_state(self) -> dict[str, Any]:
        """The service's own state as saved in checkpoints (JSON)."""
        return {
            "state_version": STATE_VERSION,
            "seq": self.seq,
            "selector": self.selector.name,
            "semantics": self.config.semantics(),
            "policy_version": self.policy_version,
            "counts": dict(self._counts),
            "seen": {str(s): v.tolist() for s, v in self._seen.items()},
            **self.leases.state(),
        }

    def close(self) -> None:
        """Checkpoint (if durable) and release the directory; the service is unusable after."""
        if self._journal is not None:
            if self._failed is None:
                self._checkpoint()
            self._journal.close()
            self._journal = None
        self._failed = self._failed or RuntimeError("the service was closed")

    # ------------------------------------------------------------------ internals
    def _select(
        self, batch_size: int, version: int | None, now: float, logged: list[int] | None = None
    ) -> NDArray[np.int64]:
        call = self._counts["selects"]
        ids = self.selector.select(batch_size)  # raises before any change on bad input
        if logged is not None and ids.tolist() != logged:
            raise RuntimeError(
                f"replay diverged at operation {self.seq + 1}: select returned different "
                "tasks than logged (a non-deterministic collaborator, or a different "
                "frontier_rft version)"
            )
        self._counts["selects"] += 1
        if version is not None:
            self.policy_version = max(self.policy_version, version)
        self.leases.expire(call, now)
        self.leases.lease(ids, call, now)
        record = {"op": "select", "n": int(batch_size), "v": version, "t": now, "ids": ids.tolist()}
        self._commit(record, durable=False)  # durable with the next acknowledged update
        return ids

    def _update(self, checked: Checked, idempotent: bool) -> dict[str, int]:
        ids, rewards, step, version = checked
        cfg = self.config
        current = self.policy_version if version is None else max(self.policy_version, version)
        lag = 0 if version is None else current - version
        # Re-delivered groups go before staleness is judged, so each group counts once
        # whatever its lag is now (a retry may arrive after the trainer moved on).
        new = self._screen(ids, step, idempotent)
        new_ids, new_rewards = ids[new], rewards[new]
        n_in = int(new_ids.shape[0])
        keep_ids, keep_rewards = new_ids, new_rewards
        drop = cfg.staleness != "accept" and lag > cfg.max_lag and n_in > 0
        if not drop and cfg.staleness == "downweight" and lag > 0 and n_in > 0:
            assert version is not None
            keep_ids, keep_rewards = self._thin(new_ids, new_rewards, lag, step, version)
        if not drop:
            self._deliver(keep_ids, keep_rewards, step, version, idempotent)
        # The selector accepted it (or it is dropped): now count, release leases and log.
        self.policy_version = current
        c = self._counts
        c["updates"] += 1
        c["unversioned_updates"] += int(version is None)
        c["stale_updates"] += int(lag > 0)
        c["max_lag"] = max(c["max_lag"], lag)
        if drop:
            c["dropped_stale_updates"] += 1
            c["dropped_stale_rollouts"] += n_in
        else:
            c["accepted_rollouts"] += int(keep_ids.shape[0])
            c["thinned_rollouts"] += n_in - int(keep_ids.shape[0])
            self.leases.release(new_ids)  # a dropped update never reached the selector: lease stays
        record = {
            "op": "update",
            "ids": encode_array(ids),
            "r": encode_array(rewards),
            "step": step,
            "pv": version,
            "idem": bool(idempotent),
        }
        seq = self._commit(record, durable=True)
        accepted = 0 if drop else int(keep_ids.shape[0])
        ack = {
            "seq": seq,
            "lag": lag,
            "accepted": accepted,
            "dropped": n_in if drop else 0,
            "thinned": 0 if drop else n_in - accepted,
            "duplicates": int(ids.shape[0]) - n_in,
        }
        return ack

    def _screen(self, ids: I64, step: int, idempotent: bool) -> NDArray[np.bool_]:
        """Rollouts of (step, task) groups not delivered before, recording them whether
        they are then folded, thinned or dropped as stale. With idempotent delivery the
        others are duplicates, dropped before the staleness decision: a re-delivered group
        counts once, and a group folded before its reply was lost is not dropped as stale
        when its retry arrives after the trainer moved on."""
        seen = self._seen.get(step, _EMPTY)
        tasks = np.unique(ids)  # a few dozen groups: compare those, not every rollout
        pos = np.searchsorted(seen, tasks)
        old = pos < seen.shape[0]
        old[old] = seen[pos[old]] == tasks[old]
        if not old.all():
            self._seen[step] = np.insert(seen, pos[~old], tasks[~old])
            # The selector's own rule (Selector._prune_seen): forget the steps dedupe_window
            # or more behind the newest (the window the docs promise).
            oldest = max(self._seen) - self.selector.config.dedupe_window
            for s in [s for s in self._seen if s <= oldest]:
                del self._seen[s]
        if not idempotent or not old.any():
            return np.ones(ids.shape[0], dtype=np.bool_)
        keep: NDArray[np.bool_] = ~np.isin(ids, tasks[old])
        self._counts["duplicates_dropped"] += int((~keep).sum())
        return keep

    def _deliver(
        self,
        ids: NDArray[np.int64],
        rewards: NDArray[np.float64],
        step: int,
        version: int | None,
        idempotent: bool,
    ) -> None:
        """Hand accepted rollouts to the selector (a shard buffers them instead)."""
        if ids.shape[0]:  # none when every group was a duplicate
            self.selector.update(Feedback(ids, rewards, step, version), idempotent=idempotent)

    def _thin(
        self,
        ids: NDArray[np.int64],
        rewards: NDArray[np.float64],
        lag: int,
        step: int,
        version: int,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Keep ceil(decay**lag * n) of each group's n rollouts (>= min), a seeded subset.

        Seeded by (seed, step, version), so a retried delivery keeps the same rollouts.
        """
        cfg = self.config
        share = cfg.downweight_decay**lag
        rng = np.random.Generator(np.random.PCG64([cfg.seed, step, version]))
        keys = np.asarray(rng.random(ids.shape[0]))
        order = np.lexsort((keys, ids))  # by task, then randomly within a task
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
        counts = np.diff(np.append(starts, ids.shape[0]))
        want = np.ceil(share * counts - 1e-9).astype(np.int64)
        want = np.minimum(counts, np.maximum(want, cfg.downweight_min_rollouts))
        rank = np.arange(ids.shape[0]) - np.repeat(starts, counts)
        keep = np.zeros(ids.shape[0], dtype=np.bool_)
        keep[order] = rank < np.repeat(want, counts)
        return ids[keep], rewards[keep]  # arrival order preserved

    # ------------------------------------------------------------------ leases
    def _init_leases(self) -> None:
        own = getattr(self.selector.config, "inflight_timeout", None)
        t = self.config.lease_timeout_selects
        if t is not None and own is not None and t != own:
            raise ValueError(
                f"lease_timeout_selects={t} differs from the {self.selector.name} selector's "
                f"inflight_timeout={own}; leave it None to use the selector's value, or set "
                "both to the same number"
            )
        timeout = int(t if t is not None else (own or DEFAULT_LEASE_SELECTS))
        self.leases = LeaseTable(timeout, self.config.lease_timeout_s, self._counts)

    # ------------------------------------------------------------------ durability
    def _commit(self, record: dict[str, Any], *, durable: bool) -> int:
        """Number the applied operation and log it; the caller acknowledges after this."""
        self.seq += 1
        if self._journal is None or self._replaying:
            return self.seq
        record = {"seq": self.seq, **record}
        if self.config.durability != "checkpoint":
            try:
                now = durable and not (self._group or self.defer_sync)
                self._journal.append(record, durable=now)
                self._dirty = self._dirty or (durable and not now)
            except BaseException as exc:
                # The state already holds this operation but the log does not: refuse to
                # go on, so a restart resumes from what is on disk.
                self._failed = exc
                raise
        self._maybe_checkpoint()
        return self.seq

    def _sync(self) -> None:
        """Make the records of a group commit durable (one fsync for all of them)."""
        if not self._dirty or self._journal is None:
            return
        self._dirty = False
        try:
            self._journal.commit()
        except BaseException as exc:
            self._failed = exc
            raise

    def _maybe_checkpoint(self) -> None:
        if not self.defer_sync and self.checkpoint_due():
            self._checkpoint()

    def checkpoint_due(self) -> bool:
        """Whether a periodic checkpoint is due (by operations or seconds)."""
        if self._journal is None:
            return False
        cfg = self.config
        ops = self.seq - self._journal.checkpoint_seq
        due_ops = cfg.checkpoint_every_ops > 0 and ops >= cfg.checkpoint_every_ops
        elapsed = self.clock() - self._last_checkpoint_time
        return due_ops or (cfg.checkpoint_every_s > 0 and elapsed >= cfg.checkpoint_every_s)

    def _checkpoint(self) -> Any:
        assert self._journal is not None
        start = time.perf_counter()
        try:
            path = self._journal.checkpoint(
                self.seq, self.selector, self.service_state(), keep_history=self.config.keep_history
            )
        except BaseException as exc:
            self._failed = exc
            raise
        self._last_checkpoint_time = self.clock()
        self._last_checkpoint_ms = 1e3 * (time.perf_counter() - start)
        return path

    def _check_alive(self) -> None:
        if self._failed is not None:
            raise RuntimeError(
                f"the selector service is stopped ({self._failed!r}); restart it to resume "
                "from its checkpoint directory"
            )

    def _check_resume(self, given: Selector | None, state: dict[str, Any]) -> None:
        saved = self.selector
        problems = []
        if given is None:
            pass  # a restart of this very service: nothing to compare with
        elif saved.name != given.name:
            problems.append(f"selector {saved.name!r} != {given.name!r}")
        elif dataclasses.asdict(saved.config) != dataclasses.asdict(given.config):
            problems.append("a different selector config")
        if given is not None and saved.pool.fingerprint != given.pool.fingerprint:
            differ = pool_differences(saved.pool.summary(), given.pool)
            problems.append(f"a different TaskPool ({', '.join(differ) or 'its metadata'})")
        saved_settings, settings = state.get("semantics"), self.config.semantics()
        if saved_settings != settings:
            saved_settings = saved_settings if isinstance(saved_settings, dict) else {}
            changed = [
                f"{k} {saved_settings.get(k)!r} (saved) != {v!r}"
                for k, v in settings.items()
                if saved_settings.get(k) != v
            ]
            problems.append(f"other service settings: {', '.join(changed) or saved_settings}")
        if state.get("state_version") != STATE_VERSION:
            problems.append(f"service state version {state.get('state_version')}")
        if problems:
            raise ValueError(
                f"{self.config.checkpoint_dir} holds a service with {'; '.join(problems)}; "
                "start it with the same selector and ServiceConfig, or use a new checkpoint_dir"
            )

    def _load_service_state(self, state: dict[str, Any]) -> None:
        # The checkpoint is a file on disk: read with bounds, like a selector's state.
        who = "service checkpoint"
        self.seq = read_int(state, "seq", who)
        self.policy_version = read_int(state, "policy_version", who, lo=-1)  # -1: none yet
        counts = {k: state["counts"].get(k, 0) for k in _COUNTERS}
        self._counts = {k: read_int(counts, k, who) for k in _COUNTERS}
        self._seen = self._read_seen(state.get("seen", {}), who)
        self._init_leases()
        self.leases.load(state)

    def _read_seen(self, seen: Any, who: str) -> dict[int, I64]:
        """The checkpoint's delivered groups: sorted, distinct task ids of this pool per step
        (a checkpoint written before groups were recorded has none)."""
        out: dict[int, I64] = {}
        if not isinstance(seen, Mapping):
            raise ValueError(f"{who} state: seen must map steps to task ids")
        for key in seen:
            number = int(key) if isinstance(key, str) and key.isdecimal() and len(key) < 17 else key
            step = bounded_int(number, f"{who} state: a step of seen")
            name = f"seen[{step}]"
            tasks = read_array(
                {name: seen[key]}, name, who, np.int64, lo=0, hi=self.selector.num_tasks - 1
            )
            if np.any(np.diff(tasks) <= 0):
                raise ValueError(f"{who} state: {name} must be sorted, distinct task ids")
            out[step] = tasks
        return out

    def _replay_update(self, r: dict[str, Any]) -> None:
        """A logged update; one that fails the boundary checks (written by a version
        without them) is consumed as a no-op and counted, never applied."""
        try:
            fb = Feedback(decode_array(r["ids"]), decode_array(r["r"]), r["step"], r["pv"])
        except (ValueError, TypeError):
            fb = None
        try:
            checked = check_feedback(fb, self.selector.num_tasks, self.selector.reward_bounds)
        except (ValueError, OverflowError, TypeError):
            self._counts["poison_records_skipped"] += 1
            self._commit(r, durable=False)
            return
        self._update(checked, bool(r["idem"]))

    def _replay_op(self, r: dict[str, Any]) -> None:
        """Replay an operation only a subclass logs (the shard service's rounds)."""
        raise ValueError(f"unknown logged operation {r['op']!r} at seq {r['seq']}")

    def replay(self, records: list[dict[str, Any]]) -> None:
        """Re-apply logged operations (read_log) in order, through the same code as live.

        Used on resume; also rebuilds a reference service from a full log (keep_history)
        to audit a run. Each record's seq must follow this service's.
        """
        records = [check_record(r) for r in records]  # all checked before any is applied
        if records and records[0]["seq"] != self.seq + 1:
            raise ValueError(
                f"the records start at operation {records[0]['seq']}, this service is at "
                f"{self.seq}; replay the log from operation {self.seq + 1}"
            )
        self._replaying = True
        try:
            for r in records:
                op = r["op"]
                if op == "select":
                    self._select(int(r["n"]), r["v"], float(r["t"]), logged=r["ids"])
                elif op == "update":
                    self._replay_update(r)
                elif op == "flush":
                    self.selector.flush()
                    self._counts["flushes"] += 1
                    self._commit(r, durable=False)
                elif op == "version":
                    self.policy_version = max(self.policy_version, int(r["v"]))
                    self._commit(r, durable=False)
                else:
                    self._replay_op(r)
                if self.seq != r["seq"]:
                    raise RuntimeError(f"replay numbering diverged at operation {r['seq']}")
        finally:
            self._replaying = False
        self.replayed = len(records)
