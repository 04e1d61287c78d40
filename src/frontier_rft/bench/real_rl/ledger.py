"""The run ledger: one small committed record per finished real-RL run, so that evidence adds
up across sessions and machines (`frontier bench-rl` skips what it holds, and `--report-only`
reports from it alone).

Layout, under the ledger root (benchmarks/ledger in this repository)::

    <testbed digest>/testbed.json                       the testbed's settings
    <testbed digest>/<device class>/<entry>/<definition digest>/seed<s>.json.gz

The testbed digest hashes the settings that decide what a run computes (the start model's
recipe, the RL settings, the pool seeds), leaving out where and in what pieces it runs (device,
threads, update_rows) and any field still at its default, so that a field added later with a
neutral default keeps old records valid. The device class ('cpu' or 'cuda') is part of the key
because CPU and CUDA runs differ in floating-point detail: seeds are paired within one class
only. The definition digest hashes what the entry runs: its selector with every config field
resolved (defaults included), what it is given and its dynamic sampling; a selector whose
defaults or fields change gets records of its own, and the old ones stay, never mixed with the
new.

A record holds the run's metric rows (every step and evaluation, floats to 6 significant
digits), its run.json facts, its seed's start state, the start model's digest, the code that
ran it and the machine: tens of KB gzipped; no weights, no checkpoints.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_rft.bench.real_rl.device_seconds import (
    PROJECTED_DEVICES,
    projected_axis,
    projected_seconds,
)
from frontier_rft.bench.real_rl.testbed import Testbed
from frontier_rft.core.bounds import MAX_ABS_VALUE, MAX_STEP, is_finite_real
from frontier_rft.core.jsonsafe import loads_bounded
from frontier_rft.core.persistence import atomic_write_bytes
from frontier_rft.metrics_log import METRICS_PREFIX, read_metrics_jsonl
from frontier_rft.sampling.sampler_flags import flat_train_fields
from frontier_rft.training.config import ModelConfig, SFTConfig, TrainConfig
from frontier_rft.training.run_info import read_run_info

__all__ = [
    "RECORD_SCHEMA",
    "RunLedger",
    "check_same_scores",
    "definition_digest",
    "device_class",
    "directory_digest",
    "entry_definition",
    "eval_scores",
    "read_record",
    "record_from_run_dir",
    "run_curves",
    "run_from_record",
    "settings_digest",
    "testbed_digest",
    "timed_in_one_run",
]

RECORD_SCHEMA = 1
"""Version of a record's layout; a reader refuses a newer one with a message."""
WHERE_IT_RUNS = ("device", "threads", "update_rows")
"""Settings that change where or in what pieces a run computes, not what: outside the digest
(update_rows: the update in micro-batches, the same gradient up to float rounding, as the
thread count changes it)."""
RECORDED_ONLY = ("reward_log",)
"""Settings that change what a run writes beside its metrics, not what it computes: outside
the digest (`bench-rl --reward-log`)."""
MAX_RECORD_BYTES = 16 << 20
"""Largest decompressed record read (a 360-step run is ~0.3 MB)."""
SIGNIFICANT_DIGITS = 6
"""Floats are stored to this many significant digits (the report's precision is 3)."""
_DEFAULTS: dict[str, Any] = {
    "model": dataclasses.asdict(ModelConfig()),
    "sft": dataclasses.asdict(SFTConfig()),
    "train": flat_train_fields(dataclasses.asdict(TrainConfig())),  # as Testbed.to_json has it
}


def testbed_digest(tb: Testbed) -> str:
    """12 hex digits naming what a testbed's runs compute (see the module docstring)."""
    return settings_digest(tb.to_json())


def settings_digest(testbed_json: Mapping[str, Any]) -> str:
    """`testbed_digest` of a testbed's settings as `Testbed.to_json` writes them."""
    settings: dict[str, Any] = {}
    for part, value in testbed_json.items():
        default = _DEFAULTS.get(part)
        if isinstance(value, dict) and default is not None:
            base = json.loads(json.dumps(default))
            value = {
                k: v
                for k, v in value.items()
                if k not in WHERE_IT_RUNS + RECORDED_ONLY and (k not in base or base[k] != v)
            }
        settings[part] = value
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def directory_digest(folder: Path) -> str:
    """12 hex digits of a model directory's weights (*.safetensors, in name order): which
    start model a run trained from."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        digest.update(path.name.encode("utf-8"))
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:12]


_SPELLED_APART = ("passthrough", "dynamic_sampling", "allocation", "pilot_commit", "fewer_rollouts")
"""Step-sampler kinds an entry definition spells by keys of their own (fewer_rollouts: by the
entry's own training fields, BenchEntry.own_train); any other kind is recorded as its spec."""


def entry_definition(config: TrainConfig, own: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a run's entry runs: its selector, every config field resolved (defaults
    included), what it is given, its dynamic sampling settings (None when off), when on, its
    rollout allocation's and its Pilot-Commit settings, and the training fields the entry
    sets itself (`own`: BenchEntry.own_train, e.g. its group size)."""
    from frontier_rft.core.config import config_from_dict
    from frontier_rft.selectors.registry import SELECTORS

    cls = SELECTORS[config.selector]
    resolved = config_from_dict(
        cls.config_class, dict(config.selector_overrides), what=f"selector {config.selector!r}"
    )
    settings = config.sampler_settings()
    # The sampler keeps the keys it had as flat TrainConfig fields: every digest stays.
    definition: dict[str, Any] = {
        "selector": config.selector,
        "config": dataclasses.asdict(resolved),
        "given": config.given,
        "dynamic_sampling": (
            dataclasses.asdict(settings) if config.sampler == "dynamic_sampling" else None
        ),
    }
    if config.sampler == "allocation":  # only then: the digests of entries without one stay
        allocation = dataclasses.asdict(settings)
        definition["allocation"] = {**allocation, "group_weighting": config.group_weighting}
    if config.sampler == "pilot_commit":  # likewise
        definition["pilot_commit"] = dataclasses.asdict(settings)
    if config.sampler not in _SPELLED_APART:  # a kind without keys of its own: by its spec
        definition["sampler"] = list(config.sampler_spec().pair())
    definition.update(own or {})  # likewise: only what an entry sets itself
    out: dict[str, Any] = json.loads(json.dumps(definition, sort_keys=True, default=str))
    return out


def definition_digest(definition: Mapping[str, Any]) -> str:
    """8 hex digits of an entry definition (`entry_definition`)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def device_class(device: str) -> str:
    """'cuda' for a CUDA device name, else 'cpu' ('auto' is resolved on this machine)."""
    if device == "auto":
        from frontier_rft.lm.device import resolve_device

        return resolve_device(device).type
    return "cuda" if device.startswith("cuda") else "cpu"


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else None
    return value


def record_from_run_dir(
    run_dir: Path,
    *,
    label: str,
    seed: int,
    definition: Mapping[str, Any],
    start_state: Mapping[str, Any] | None,
    start_model: str,
    code: Mapping[str, Any],
    machine: str,
) -> dict[str, Any]:
    """The ledger record of a finished run directory (metrics.jsonl and run.json)."""
    rows = read_metrics_jsonl(run_dir / "metrics.jsonl")
    logged = {k for r in rows for k in r if k not in ("step", "time")}
    # read_metrics_jsonl adds each curriculum/ key unprefixed too: store the logged one only
    keys = sorted(k for k in logged if METRICS_PREFIX + k not in logged)
    info = read_run_info(run_dir / "run.json")
    return {
        "schema": RECORD_SCHEMA,
        "entry": label,
        "seed": seed,
        "definition": dict(definition),
        "steps": [int(r["step"]) for r in rows],
        "columns": {k: [_rounded(r.get(k)) for r in rows] for k in keys},
        "info": {k: v for k, v in info.items() if k != "model_dir"},
        "start_state": dict(start_state) if start_state is not None else None,
        "start_model": start_model,
        "code": dict(code),
        "machine": machine,
    }


def _rows(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The metric rows of a record, as metrics.jsonl held them (absent keys left out)."""
    columns: Mapping[str, Sequence[Any]] = record["columns"]
    rows: list[dict[str, Any]] = []
    for i, step in enumerate(record["steps"]):
        row: dict[str, Any] = {"step": step}
        row.update({k: col[i] for k, col in columns.items() if col[i] is not None})
        row.update(
            {k[len(METRICS_PREFIX) :]: v for k, v in row.items() if k.startswith(METRICS_PREFIX)}
        )
        rows.append(row)
    return rows


def run_curves(rows: Sequence[Mapping[str, Any]], info: Mapping[str, Any]) -> dict[str, Any]:
    """A run's curves from its metric rows: held-out pass@1 against steps, cumulative rollouts
    and wall-clock seconds, the final evaluation, the per-step rows and its run.json facts."""
    train = [dict(r) for r in rows if "train/reward_mean" in r]
    evals = [r for r in rows if "eval/pass@1" in r]
    cum_rollouts = [0.0]
    cum_seconds = [float(info.get("embed_seconds", 0.0))]
    cum_cpu = [0.0]  # the steps' CPU time: less swayed by other work than wall-clock
    for r in train:
        cum_rollouts.append(cum_rollouts[-1] + r.get("train/rollouts", 0.0))
        cum_seconds.append(cum_seconds[-1] + r["perf/step_s"])
        cum_cpu.append(cum_cpu[-1] + float(r.get("perf/step_cpu_s", 0.0)))
    timed = all("perf/step_cpu_s" in r for r in train)  # older records lack it
    eval_steps = [int(r["step"]) for r in evals]
    projected = {  # each step costed on a named device's measured curve (device_seconds)
        projected_axis(device): [cum[s] for s in eval_steps]
        for device in PROJECTED_DEVICES
        for cum in (projected_seconds(train, info, device),)
    }
    ks = sorted({k for r in evals for k in r if k.startswith("eval/pass@") and k != "eval/pass@1"})
    return {
        "eval_steps": eval_steps,
        "eval_rollouts": [cum_rollouts[s] for s in eval_steps],
        "eval_seconds": [cum_seconds[s] for s in eval_steps],
        **({"eval_cpu_seconds": [cum_cpu[s] for s in eval_steps]} if timed else {}),
        **projected,
        "pass1": [float(r["eval/pass@1"]) for r in evals],
        "passk": {k: [float(r.get(k, math.nan)) for r in evals] for k in ks},
        "final": {k: v for k, v in evals[-1].items() if k.startswith("eval/")},
        "train": train,
        "info": dict(info),
    }


def run_from_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record's curves and summaries, as `bench.real_rl.runs.load_run` gives them, and
    `made_by`: the code commit and machine that ran it (`timed_in_one_run` reads them)."""
    code = record.get("code")
    commit = code.get("commit") if isinstance(code, dict) else None
    dirty = code.get("dirty", False) if isinstance(code, dict) else False
    run = run_curves(_rows(record), dict(record["info"]))
    run["made_by"] = {
        "commit": commit if isinstance(commit, str) and commit and dirty is False else None,
        "machine": str(record.get("machine", "")),
    }
    return run


def timed_in_one_run(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two loaded runs' wall-clock can be compared: made in one bench-rl run on one
    machine. A record holds no run id or start time, so its code stands in: bench-rl stamps
    every run of one invocation with the commit it started at, so records at two commits
    were timed in two invocations, never side by side. Two records of one machine and one
    clean commit count as one run (they may still be two invocations at that commit, which
    the records cannot tell apart); a record with no commit or from a dirty tree is one run
    with nothing but itself. Runs loaded from run directories (no ledger: one bench-rl
    root) carry no `made_by` and count as one run."""
    ma, mb = a.get("made_by"), b.get("made_by")
    if ma is None and mb is None:
        return True
    if a is b:
        return True
    if ma is None or mb is None:
        return False
    return ma["commit"] is not None and ma == mb


def eval_scores(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The held-out scores (eval/pass@k) every evaluation of a checked record holds."""
    return tuple(sorted(k for k in record["columns"] if k.startswith("eval/pass@")))


def check_same_scores(held: Mapping[tuple[str, ...], Path]) -> None:
    """Records compared in one report hold the same held-out scores: `held` maps each set
    of scores (`eval_scores`) to a record that has it; a ValueError names two that differ."""
    if len(held) > 1:
        (first, where), (other, path) = list(held.items())[:2]
        raise ValueError(
            f"{path} is not a run ledger record this report can pair: its evaluations score "
            f"{', '.join(other) or 'nothing'}, those of {where} {', '.join(first) or 'nothing'}"
        )


@dataclass(frozen=True)
class RunLedger:
    """The records of one testbed on one device class, under a ledger root."""

    root: Path
    """The ledger root (benchmarks/ledger)."""
    testbed: Testbed
    """The testbed whose records these are."""
    device: str
    """The device class, 'cpu' or 'cuda'."""

    @property
    def folder(self) -> Path:
        return self.root / testbed_digest(self.testbed) / self.device

    def path(self, label: str, definition: str, seed: int) -> Path:
        """A record's file: entry label, definition digest, seed."""
        return self.folder / label / definition / f"seed{seed}.json.gz"

    def has(self, label: str, definition: str, seed: int) -> bool:
        return self.path(label, definition, seed).is_file()

    def add(self, record: Mapping[str, Any]) -> Path:
        """Write a record atomically (its testbed.json beside it the first time)."""
        settings = self.root / testbed_digest(self.testbed) / "testbed.json"
        if not settings.is_file():
            body = (json.dumps(self.testbed.to_json(), indent=1, sort_keys=True) + "\n").encode()
            settings.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(settings, lambda fh: fh.write(body))
        digest = definition_digest(record["definition"])
        path = self.path(str(record["entry"]), digest, int(record["seed"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record, separators=(",", ":"), allow_nan=False)
        # mtime 0: the same record gives the same bytes, so a rewrite is no change in git
        data = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
        atomic_write_bytes(path, lambda fh: fh.write(data))
        return path

    def reward_log_path(self, label: str, definition: str, seed: int) -> Path:
        """Where a run's per-prompt reward log lies beside its record."""
        return self.folder / label / definition / f"seed{seed}.rewards.jsonl.gz"

    def add_reward_log(self, label: str, definition: str, seed: int, source: Path) -> Path:
        """A run's reward log (`rewards.jsonl`) gzipped beside its record, atomically."""
        path = self.reward_log_path(label, definition, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = gzip.compress(source.read_bytes(), compresslevel=9, mtime=0)
        atomic_write_bytes(path, lambda fh: fh.write(data))
        return path

    def load(self, label: str, definition: str, seed: int) -> dict[str, Any]:
        """A record, checked: a ValueError naming the file when it cannot be one."""
        return read_record(self.path(label, definition, seed))

    def labels(self) -> Iterator[tuple[str, str, int]]:
        """Every (entry, definition digest, seed) recorded for this testbed and device class."""
        if not self.folder.is_dir():
            return
        for path in sorted(self.folder.glob("*/*/seed*.json.gz")):
            seed = path.name.removeprefix("seed").removesuffix(".json.gz")
            if seed.isdigit():
                yield path.parents[1].name, path.parent.name, int(seed)


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ledger record at `path` (<entry>/<definition digest>/seed<N>.json.gz), read within
    MAX_RECORD_BYTES decompressed and checked as every report reads it (its entry, seed and
    definition those its place names; every value one a report can compute with): the one
    reader of ledger records. A ValueError naming the file for anything else (a cut-off or
    damaged .gz, a record too large, a value out of range)."""
    path = Path(path)
    seed_text = path.name.removeprefix("seed").removesuffix(".json.gz")
    if not (
        path.name.startswith("seed") and path.name.endswith(".json.gz") and seed_text.isdigit()
    ):
        raise ValueError(f"{path} is not a run ledger record: its name is not seed<N>.json.gz")
    label, definition, seed = path.parents[1].name, path.parent.name, int(seed_text)
    try:
        with gzip.open(path, "rb") as fh:
            raw = fh.read(MAX_RECORD_BYTES + 1)
        if len(raw) > MAX_RECORD_BYTES:
            raise ValueError(f"larger than {MAX_RECORD_BYTES} bytes decompressed")
        record = loads_bounded(raw.decode("utf-8"), max_chars=MAX_RECORD_BYTES, max_depth=16)
        _check_record(record, label, definition, seed)
    except (OSError, EOFError, UnicodeDecodeError, ValueError, zlib.error) as exc:
        raise ValueError(f"{path} is not a run ledger record: {exc}") from None
    return dict(record)


def _check_record(record: Any, label: str, definition: str, seed: int) -> None:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    schema = record.get("schema")
    if not isinstance(schema, int) or schema > RECORD_SCHEMA:
        raise ValueError(
            f"schema {schema!r} is newer than this frontier_rft reads ({RECORD_SCHEMA}); upgrade"
        )
    if record.get("entry") != label or record.get("seed") != seed:
        raise ValueError(f"it records {record.get('entry')!r} seed {record.get('seed')!r}")
    held = record.get("definition")
    if not isinstance(held, dict) or definition_digest(held) != definition:
        raise ValueError(f"its entry definition is not the one its folder names ({definition})")
    steps, columns = record.get("steps"), record.get("columns")
    if not isinstance(steps, list) or not isinstance(columns, dict):
        raise ValueError("steps or columns missing")
    if any(not isinstance(c, list) or len(c) != len(steps) for c in columns.values()):
        raise ValueError("a metric column's length differs from the steps'")
    if not isinstance(record.get("info"), dict):
        raise ValueError("info missing")
    _check_values(record)


def _number(value: Any, lo: float = -MAX_ABS_VALUE, hi: float = MAX_ABS_VALUE) -> bool:
    """A finite JSON number (not a bool) in [lo, hi]."""
    return is_finite_real(value) and lo <= value <= hi


def _numbers(value: Any) -> bool:
    """A number, or a list of numbers (a histogram)."""
    return _number(value) or (isinstance(value, list) and all(_number(v) for v in value))


def _check_values(record: Mapping[str, Any]) -> None:
    """What a report reads from a well-formed record, checked for values it can compute
    with: a ValueError naming the first problem (the report would end in a traceback)."""
    steps, columns, info = record["steps"], record["columns"], record["info"]
    if not isinstance(record["seed"], int) or isinstance(record["seed"], bool):
        raise ValueError(f"seed {record['seed']!r} is not an int")
    for step in steps:
        if not is_finite_real(step) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
            raise ValueError(f"step {step!r} is not a non-negative int")
    for key, column in columns.items():
        for step, value in zip(steps, column, strict=True):
            if value is not None and not _number(value):
                raise ValueError(
                    f"metric {key!r} at step {step} is {value!r}: a metric is a number "
                    f"(|x| <= {MAX_ABS_VALUE:g}) or null"
                )
    rows = _rows(record)
    train = [r for r in rows if "train/reward_mean" in r]
    evals = [r for r in rows if "eval/pass@1" in r]
    for row in train:
        for key, required in (("perf/step_s", True), ("train/rollouts", False)):
            if (required or key in row) and not _number(row.get(key), lo=0.0):
                raise ValueError(
                    f"the training row of step {row['step']} has {key} = {row.get(key)!r}, "
                    "not a non-negative number"
                )
    if not evals:
        raise ValueError("it holds no evaluation (eval/pass@1)")
    scores = eval_scores(record)
    for row in evals:
        missing = [k for k in scores if k not in row]
        if missing:
            raise ValueError(
                f"the evaluation at step {row['step']} has no {missing[0]}, a score of its "
                "other evaluations"
            )
        if row["step"] > len(train):
            raise ValueError(
                f"an evaluation at step {row['step']} is past its {len(train)} training rows"
            )
        bad = [k for k, v in row.items() if k.startswith("eval/pass@") and not 0 <= v <= 1]
        if bad:
            raise ValueError(f"{bad[0]} at step {row['step']} is {row[bad[0]]!r}, not in [0, 1]")
    _check_info(info)
    _check_start_state(record.get("start_state"))
    for key, kind in (("start_model", str), ("machine", str), ("code", dict)):
        if not isinstance(record.get(key), kind):
            raise ValueError(f"{key} is {record.get(key)!r}, not {_KIND_NAMES[kind]}")


_KIND_NAMES = {dict: "an object", list: "a list", int: "an int", str: "a string"}
_INFO_KINDS: dict[str, Any] = {
    "config": dict,
    "evidence": dict,
    "given": list,
    "train_tasks": int,
    "eval_tasks": int,
    "parameters": int,
}


def _check_info(info: Mapping[str, Any]) -> None:
    """The run.json facts a report reads, where the record holds them."""
    if "embed_seconds" in info and not _number(info["embed_seconds"], lo=0.0):
        raise ValueError(f"info.embed_seconds is {info['embed_seconds']!r}, not seconds")
    for key, kind in _INFO_KINDS.items():
        value = info.get(key, kind())
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"info.{key} is {value!r}, not {_KIND_NAMES[kind]}")
    config = info.get("config", {})
    if not isinstance(config.get("selector_overrides", {}), dict):
        raise ValueError("info.config.selector_overrides is not an object")
    batch = config.get("batch_size", 1)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"info.config.batch_size is {batch!r}, not a positive int")


def _check_start_state(state: Any) -> None:
    """The seed's start state: its zero-variance share, and numbers (or histograms) only,
    overall and per level."""
    if not isinstance(state, dict):
        raise ValueError(f"start_state is {state!r}, not an object (the seed's start state)")
    zero = state.get("zero_variance")
    if not _number(zero, 0.0, 1.0):
        raise ValueError(f"start_state.zero_variance is {zero!r}, not a share in [0, 1]")
    levels = state.get("per_level", {})
    if not isinstance(levels, dict):
        raise ValueError(f"start_state.per_level is {levels!r}, not an object")
    parts = [("start_state", {k: v for k, v in state.items() if k != "per_level"})]
    for level, part in levels.items():
        if not level.isdigit() or not isinstance(part, dict):
            raise ValueError(f"start_state.per_level holds {level!r}: {part!r}, not a level")
        parts.append((f"start_state.per_level.{level}", part))
    for where, part in parts:
        for key, value in part.items():
            if not _numbers(value):
                raise ValueError(f"{where}.{key} is {value!r}, not a number or a histogram")
