"""Capture what the `frontier` command says, so a move of code can be shown to change nothing.

    python scripts/behaviour_snapshot.py OUTDIR        # in the checkout to capture
    diff -r BEFORE AFTER                               # empty when behaviour is unchanged

It runs, on 2 CPU cores in a few minutes, the outputs issue 61's gate names: `frontier demo`
and `compare` small (each step sampler once), `simulate --fit` on the test fixture's run,
`check-config trl|verl|skyrl` on every file under examples/ and on the hostile configs the
tests use (read from the test modules themselves), a toy `bench-rl` of the sampler entries
and `bench-rl --report-only` of committed ledger reports. Timings, temp paths and progress
bars are stripped, so two runs of the same code diff empty.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
# Table columns and JSON keys that hold a time (or the CPU it took), not behaviour.
TIMED = re.compile(r"ms/step|seconds|wall|elapsed|per_sec|/s\b|\btime|duration", re.I)
TIMED_KEY = re.compile(
    r"(^|_)(ms|s|cpu|seconds|wall|elapsed|time|duration|machine)(_|$)|per_sec|overhead", re.I
)


def frontier(*argv: str, cwd: Path) -> str:
    """The command's exit status and its stdout+stderr, as a user sees them."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "100"}
    env.pop("FRONTIER_LOG_LEVEL", None)
    proc = subprocess.run(
        [sys.executable, "-m", "frontier_rft", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return f"$ frontier {shlex.join(argv)}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"


def clean(text: str, tmp: Path) -> str:
    """Drop progress bars, temp paths and timed table columns."""
    text = text.replace(str(tmp), "<TMP>").replace(str(REPO), "<REPO>")
    text = re.sub(r"/tmp/[\w./-]+", "<TMPPATH>", text)
    out: list[str] = []
    timed_cols: set[int] = set()
    for line in text.splitlines():
        if "\r" in line or re.search(r"\|\s*[#█ ]*\|\s*\d+/\d+ \[", line) or "it/s]" in line:
            continue  # a progress bar
        if re.match(r"^\S.*:\s+\d+%\|", line):
            continue
        if line.startswith("|") and set(line) <= set("|-: "):
            header = out[-1].split("|") if out else []  # the row above a separator
            timed_cols = {i for i, c in enumerate(header) if TIMED.search(c)}
        elif line.startswith("|") and timed_cols:
            cells = line.split("|")
            line = "|".join("<t>" if i in timed_cols else c for i, c in enumerate(cells))
        elif not line.startswith("|"):
            timed_cols = set()
        line = re.sub(r"\b\d+(\.\d+)?\s?(ms|s|min|h)\b(?= (a|per|each|on|of|wall))", "<t>", line)
        line = re.sub(r"in \d+(\.\d+)?\s?(ms|s|min)\b", "in <t>", line)
        out.append(line)
    return "\n".join(out) + "\n"


def untimed(value: Any) -> Any:
    """A JSON value without the keys that hold a time, a path or a machine."""
    if isinstance(value, dict):
        return {
            k: untimed(v)
            for k, v in value.items()
            if not (TIMED.search(k) or TIMED_KEY.search(k)) and k != "command"
        }
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def json_file(path: Path, tmp: Path) -> str:
    if not path.is_file():
        return f"{path.name}: missing\n"
    data = untimed(json.loads(path.read_text(encoding="utf-8")))
    return clean(f"{path.name}\n{json.dumps(data, indent=1, sort_keys=True)}", tmp)


def test_module(name: str) -> Any:
    """A test module's constants (the hostile configs), loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"_snap_{name}", TESTS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(TESTS))
    spec.loader.exec_module(module)
    return module


def simulated(tmp: Path) -> dict[str, str]:
    """demo, compare with every step sampler, simulate --fit."""
    out: dict[str, str] = {}
    small = ["--steps", "20", "--seeds", "2", "--jobs", "1"]
    out["demo"] = frontier("demo", *small, "--out", str(tmp / "demo"), cwd=tmp)
    out["demo"] += json_file(tmp / "demo" / "results.json", tmp)
    sel = ["--selectors", "uniform,greso,skip", *small]
    variants = {
        "plain": [],
        "dapo": ["--dynamic-sampling", "dapo"],
        "adaptive": ["--dynamic-sampling", "adaptive"],
        "allocation": ["--allocation", "pilot=4"],
        "kept": ["--fewer-rollouts", "rollouts=kept"],
        "screen": ["--fewer-rollouts", "screen=4"],
    }
    for name, flags in variants.items():
        folder = tmp / f"compare-{name}"
        text = frontier("compare", *sel, *flags, "--out", str(folder), cwd=tmp)
        out[f"compare-{name}"] = text + json_file(folder / "results.json", tmp)
    fit = TESTS / "fixtures" / "fit_run"
    folder = tmp / "fit"
    args = ["--fit", str(fit), "--fit-steps", "30", "--selector", "greso", *small[2:]]
    out["simulate-fit"] = frontier("simulate", *args, "--out", str(folder), cwd=tmp)
    out["simulate-fit"] += json_file(folder / "results.json", tmp)
    return out


def check_configs(tmp: Path) -> dict[str, str]:
    """check-config on examples/ and on the tests' hostile configs."""
    out: dict[str, str] = {}
    for path in sorted((REPO / "examples").rglob("*.yaml")):
        kind = path.parent.name
        key = f"check-{kind}-{path.stem}"
        out[key] = frontier("check-config", kind, str(path), cwd=REPO)
        if kind == "verl":
            out[key] += frontier("check-config", kind, str(path), "data.train_files=x", cwd=REPO)
    mistakes = test_module("test_check_config_mistakes")
    work = tmp / "newcomer"
    (work / "data").mkdir(parents=True)
    rows = [{"prompt": f"{i} + 1 =", "answer": str(i + 1)} for i in range(12)]
    for name, part in (("train", rows[:8]), ("heldout", rows[8:])):
        text = "".join(json.dumps(r) + "\n" for r in part)
        (work / "data" / f"{name}.jsonl").write_text(text)
    (work / "data" / "train.json").write_text(json.dumps(rows[:8]))
    (work / "data" / "no_answer.jsonl").write_text(json.dumps({"prompt": "1 + 1 ="}) + "\n")
    images = [{**r, "image": f"img/{i}.png"} for i, r in enumerate(rows[:8])]
    (work / "data" / "images.jsonl").write_text("".join(json.dumps(r) + "\n" for r in images))
    (work / "my_rewards.py").write_text(mistakes.REWARDS_PY)
    (work / "models").mkdir()
    auto_cases = [
        {"selector": "skip", "use_vllm": False},
        {"selector": "skip", "use_vllm": False, "max_steps": -1, "num_train_epochs": 2},
        {"selector": "skip", "use_vllm": False, "max_steps": -1, "num_train_epochs": 3},
        {"selector": "skip", "max_steps": -1, "num_train_epochs": 2, "vllm_mode": "server"},
        {"selector": "skip", "use_vllm": False, "loss_type": "bnpo"},
        {"selector": "uniform"},
        {"use_vllm": False},
        {"selector": "skip", "use_vllm": False, "dynamic_sampling": "adaptive"},
        {"rollouts": "full"},
        {"rollouts": "kept", "selector": "skip"},
        {"screen": 4, "selector": "greso"},
        {"dynamic_sampling": "fixed", "selector": "greso", "rollouts": "full"},
        {"shadows": ["greso", "screen4"], "selector": "uniform"},
        {"selector": ["skip"]},
    ]
    cases = [(m, c) for m, c, _ in mistakes.TRL_MISTAKES + mistakes.NEEDS_TRL]
    cases += [(f"auto {json.dumps(c)}", c) for c in auto_cases]
    for i, (mistake, change) in enumerate(cases):
        values = {k: v for k, v in {**mistakes.VALID, **change}.items() if v is not None}
        path = work / f"case{i}.yaml"
        path.write_text(yaml.safe_dump(values, sort_keys=False))
        out[f"check-trl-hostile-{i:02d}"] = (
            mistake + "\n" + frontier("check-config", "trl", str(path), cwd=work)
        )
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        out["check-verl-hostile"] = "pyarrow missing: verl hostile configs not checked\n"
    else:
        pq.write_table(
            pa.Table.from_pylist(mistakes.verl_rows("gsm8k", 8)), work / "data/gsm8k.parquet"
        )
        pq.write_table(
            pa.Table.from_pylist(mistakes.verl_rows("math", 6)), work / "data/math.parquet"
        )
        no_index = [{**r, "extra_info": {"split": "train"}} for r in mistakes.verl_rows("x", 4)]
        pq.write_table(pa.Table.from_pylist(no_index), work / "data" / "no_index.parquet")
        base = [str(REPO / "examples/verl/greso.yaml"), "data.train_files=data/gsm8k.parquet"]
        kw = "trainer.v1.sampler.sampler_kwargs"
        extra = [
            [f"{kw}.rollouts=kept"],
            [f"{kw}.selector=skip", f"{kw}.rollouts=auto"],
            [f"++{kw}.shadows=[greso,screen4]"],
            [f"{kw}.dynamic_sampling=dapo"],
        ]
        for i, (mistake, overrides, _) in enumerate(
            [("valid", [], "")] + mistakes.VERL_MISTAKES + [("extra", e, "") for e in extra]
        ):
            out[f"check-verl-hostile-{i:02d}"] = (
                mistake + "\n" + frontier("check-config", "verl", *base, *overrides, cwd=work)
            )
    skyrl = [
        {"frontier": {"selector": "greso", "rollouts": "kept", "seed": -1,
                      "task_id_key": "problem_id", "category_keys": ["topic"],
                      "selector_config": {"p_int": 0.1}, "reward_kee": "acc"},
         "trainer": {"train_batch_size": 0,
                     "algorithm": {"dynamic_sampling": {"type": "flter"}}}},
        {"frontier": {"selector": "greso"}},
        {"frontier": {"shadows": ["greso", "screen4"]}, "generator": {"n_samples_per_prompt": 4},
         "trainer": {"algorithm": {"dynamic_sampling": {"type": "filter"}}}},
        {"frontier": {"selector": "greso", "rollouts": "kept"},
         "trainer": {"train_batch_size": 64, "policy_mini_batch_size": 16}},
        {"frontier": {"selector": "uniform", "rollouts": "kept", "shadows": ["greso"]}},
        {"frontier": {"selector": "dots", "rollouts": "kept"}},
        {"trainer": {"fully_async": {"enabled": True}}},
        {"trainer": {"fully_async": {"enabled": True}}, "frontier": {"rollouts": "kept"}},
        {"trainer": {"fully_async": {"enabled": "yes"}}},
        {"frontier": {"selector": "bots"}},
        {},
    ]  # fmt: skip
    for i, config in enumerate(skyrl):
        path = work / f"skyrl{i}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        out[f"check-skyrl-hostile-{i:02d}"] = frontier("check-config", "skyrl", str(path), cwd=work)
    return {k: clean(v, tmp) for k, v in out.items()}


def benches(tmp: Path) -> dict[str, str]:
    """A toy bench-rl of the sampler entries; --report-only of committed ledger reports."""
    out: dict[str, str] = {}
    entries = "uniform,dapo,greso-alloc,screen4,skip-kept,pilot-commit"
    folder = tmp / "toy"
    argv = ["bench-rl", "--scale", "toy", "--seeds", "0", "--jobs", "1", "--no-effects"]
    argv += ["--selectors", entries, "--ledger", "", "--runs", str(folder / "runs")]
    argv += ["--out", str(folder / "out"), "--name", "toy", "--no-progress"]
    out["bench-toy"] = frontier(*argv, cwd=tmp) + json_file(folder / "out" / "toy_full.json", tmp)
    for stem in (
        "real_rl_pilot_commit_512",
        "real_rl_standard_cpu_dapo",
        "real_rl_skip_eager_512_2epoch",
    ):
        full = json.loads((REPO / "benchmarks/results" / f"{stem}_full.json").read_text())
        folder = tmp / stem
        flags = ["--report-only", "--out", str(folder), "--runs", str(tmp / "no-runs")]
        text = frontier(*shlex.split(full["command"])[1:], *flags, "--no-progress", cwd=REPO)
        page = (folder / f"{stem}.md").read_text(encoding="utf-8") if folder.is_dir() else ""
        page = "\n".join(ln for ln in page.splitlines() if not ln.startswith("Command:"))
        out[f"report-{stem}"] = text + page + "\n" + json_file(folder / f"{stem}_full.json", tmp)
    return {k: clean(v, tmp) for k, v in out.items()}


def main() -> int:
    if len(sys.argv) < 2:
        print(
            "usage: python scripts/behaviour_snapshot.py OUTDIR [checks|sim|bench ...]",
            file=sys.stderr,
        )
        return 2
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="snap-") as name:
        tmp = Path(name).resolve()
        parts = sys.argv[2:] or ["checks", "sim", "bench"]
        found: dict[str, str] = {}
        if "checks" in parts:
            found |= check_configs(tmp)
        if "sim" in parts:
            found |= {k: clean(v, tmp) for k, v in simulated(tmp).items()}
        if "bench" in parts:
            found |= benches(tmp)
        for key, text in found.items():
            (target / f"{key}.txt").write_text(text, encoding="utf-8")
    print(f"wrote {len(found)} files to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
