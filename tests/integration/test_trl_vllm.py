"""`rollouts: kept` and `screen: k` with TRL's vLLM generation (`use_vllm`, `vllm_mode`
colocate and server), on 1 and 2 processes: TRL's own vLLM code path, with only the engine
stood in (vllm_standin.py: `vllm.LLM.generate` for colocate, `VLLMClient.generate` and its
network half for server), answered by a tiny model's real generation.

The pool is test_trl_fewer's: task t is always solved (t % 3 == 0), never (t % 3 == 1) or
mixed (t % 3 == 2). Checked: the engine receives exactly the step's kept prompts (nothing of
a skipped one), every completion comes back to a row of its own prompt on the rank that
asked, rollouts count what the engine generated, and the policy's forward pass trains only
the trained groups' rows. (`rollouts: auto` would be kept with vLLM for a selector measured
level with kept: tests/test_check_config_round6.py.)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from forward_rows import TASK, ForwardRows
from tiny_lm import char_tokenizer, planted_rewards, task_dataset, tiny_grpo_args, tiny_llama
from two_ranks import leave_process_group

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer

N = 24
N_GEN = 4
PROMPTS = 4
STEPS = 2 * N // PROMPTS
SCREEN = {"selector": "greso", "screen": 2, "rollouts": "full"}
KEPT = {"selector": "skip", "rollouts": "kept"}
ARMS: dict[str, tuple[str, dict[str, Any] | None, int]] = {
    "colocate-kept": ("colocate", KEPT, N_GEN),
    "server-kept": ("server", KEPT, N_GEN),
    "colocate-screen": ("colocate", SCREEN, N_GEN),
    "server-screen": ("server", SCREEN, N_GEN),
    "server-odd": ("server", {"selector": "uniform", "screen": 2, "rollouts": "full"}, 3),
}
"""name: (vllm_mode, FrontierConfig values (None: FrontierConfig()), num_generations). With
3 completions a prompt screened by 2, the continuation of 1 or 2 mixed prompts is 1 or 2
rows and the trained groups 3 or 6 rows: an odd call does not split over 2 processes (the
adapter adds a filler group, dynamic.filler_groups) and an odd batch gives one rank a
filler row."""
ODD = ("server-odd",)
"""Arms run on 2 processes only (one process splits anything)."""


class Keyed:
    """Solved, unsolved or mixed by the prompt (the module's pool); records every
    (task, completion) it scores, to match against what the engine generated."""

    __name__ = "keyed"

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    def __call__(self, completions: list[Any], task_id: list[int], **kwargs: Any) -> list[float]:
        self.seen.extend((int(t), str(c)) for t, c in zip(task_id, completions, strict=True))
        return planted_rewards(task_id)


class VllmRecording(FrontierGRPOTrainer):
    """Records each step's samples and the rows reaching the policy's forward pass."""

    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.samples: list[Any] = []
        self.forward = ForwardRows(self.model, self.processing_class)
        wrapper = self.frontier_driver.sampler
        sample = wrapper.sample

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.samples.append(sample(*args, **kwargs))
            return self.samples[-1]

        wrapper.sample = spy  # type: ignore[method-assign]

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.forward.new_step()
        return out


def build(out: Path, mode: str, frontier: dict[str, Any] | None, n: int, processes: int = 1) -> Any:
    """A trainer generating through TRL's vLLM path (the stand-in must be installed)."""
    tok = char_tokenizer()
    args = tiny_grpo_args(
        out, prompts=PROMPTS // processes, n=n, num_train_epochs=2, use_vllm=True, vllm_mode=mode
    )
    return VllmRecording(
        model=tiny_llama(tok, seed=0),
        reward_funcs=[Keyed()],
        args=args,
        train_dataset=task_dataset(range(N)),
        processing_class=tok,
        frontier=FrontierConfig(**(frontier or {})),
    )


def _task(tok: Any, ids: list[int]) -> int:
    found = TASK.search(tok.decode(ids, skip_special_tokens=True))
    assert found is not None, ids
    return int(found.group(1))


def engine_record(engines: list[Any]) -> dict[str, Any]:
    """What the engines of this process generated: per call the task of each request and
    its n, and every (task, completion text)."""
    tok = char_tokenizer()
    calls, pairs = [], []
    for engine in engines:
        for call in engine.calls:
            tasks = [_task(tok, p) for p in call["prompts"]]
            calls.append({"tasks": tasks, "n": call["n"]})
            n = call["n"]
            for i, ids in enumerate(call["completions"]):
                pairs.append((tasks[i // n], tok.decode(ids, skip_special_tokens=True)))
    return {"calls": calls, "pairs": pairs}


def _round(r: Any) -> dict[str, Any]:
    """A round's prompts and its completions a prompt."""
    return {"tasks": r.task_ids.tolist(), "size": int(r.rewards.shape[0] // r.task_ids.shape[0])}


def run_record(t: Any, engines: list[Any]) -> dict[str, Any]:
    """One rank's record of a run, JSON-ready."""
    return {
        "rollouts_auto": t.frontier_config.rollouts,
        "global_step": int(t.state.global_step),
        "rounds": [[_round(r) for r in s.rounds] for s in t.samples],
        "trained": [s.train.task_ids.tolist() for s in t.samples],
        "forward": t.forward.steps,
        "scored": t.reward_funcs[0].__wrapped__.seen,
        "rollouts": t.frontier_metrics()["fewer_rollouts/rollouts"],
        "rollouts_filler": t.frontier_metrics()["fewer_rollouts/filler_rollouts"],
        **engine_record(engines),
    }


def check_run(ranks: list[dict[str, Any]], mode: str, arm: str, n: int) -> None:
    """The assertions of the module docstring, over every rank's record of one run."""
    from frontier_rft.integrations.trl.step_driver import filler_groups

    processes = len(ranks)
    first = ranks[0]
    assert all(r["global_step"] == STEPS for r in ranks), arm
    assert all(r["rounds"] == first["rounds"] for r in ranks), arm  # the same walk
    # The prompts each generation call sent vLLM: exactly the step's rounds, in order, and
    # the fewest copies of its first prompt that split its rows evenly over the processes.
    rounds = [rd for step in first["rounds"] for rd in step]
    asked = []
    for rd in rounds:
        extra = filler_groups(len(rd["tasks"]), rd["size"], processes)
        asked.append(rd["tasks"] + rd["tasks"][:1] * extra)
    if mode == "server":  # rank 0 sends every process's prompts, deduplicated, n each
        assert all(not r["calls"] for r in ranks[1:]), arm
        got = [(c["tasks"], c["n"]) for c in first["calls"]]
        assert got == [(a, rd["size"]) for a, rd in zip(asked, rounds, strict=True)], arm
    else:  # colocate: each rank generates its own rows, one completion each
        for q, r in enumerate(ranks):
            assert len(r["calls"]) == len(rounds), arm
            for call, a, rd in zip(r["calls"], asked, rounds, strict=True):
                rows = np.repeat(a, rd["size"])
                per = len(rows) // processes
                assert call["n"] == 1 and call["tasks"] == rows[q * per : (q + 1) * per].tolist()
    # Every completion came back to a row of its own prompt, and only those were scored.
    generated = Counter(tuple(p) for r in ranks for p in r["pairs"])
    scored = Counter(tuple(p) for r in ranks for p in r["scored"])
    assert generated == scored, arm
    assert sum(generated.values()) == first["rollouts"], arm
    assert first["rollouts"] < STEPS * PROMPTS * n, arm  # skipped prompts never generated
    # The policy's forward pass trained the trained groups' rows, and fillers only to give
    # every rank ceil(T / processes) rows (one masked row a rank when none is trained).
    for step, trained in enumerate(first["trained"]):
        seen = [t for r in ranks for t in r["forward"][step]]
        rows = len(trained) * n
        assert len(seen) == processes * max(1, -(-rows // processes)), (arm, step)
        extra = Counter(seen) - Counter(trained * n)
        assert sum(extra.values()) == len(seen) - rows, (arm, step)
        assert not trained or set(extra) <= set(trained), (arm, step)


@pytest.mark.parametrize("arm", [a for a in ARMS if a not in ODD])
def test_one_process_generates_only_kept_prompts_through_vllm(
    tmp_path: Path, vllm_standin: Any, arm: str
) -> None:
    mode, frontier, n = ARMS[arm]
    t = build(tmp_path, mode, frontier, n)
    t.train()
    check_run([run_record(t, vllm_standin.ENGINES)], mode, arm, n)
    assert "importance_sampling_ratio" in t._buffered_inputs[0]  # TRL's correction ran on it


# ---------------------------------------------------------------------- two processes
def _vllm_distributed_worker(out: Path) -> None:
    """One rank of a 2-process CPU (gloo) run per arm: writes its record."""
    import vllm_standin

    vllm_standin.install()
    for name, (mode, frontier, n) in ARMS.items():
        vllm_standin.ENGINES.clear()
        t = build(out / name, mode, frontier, n, processes=2)
        t.train()
        record = run_record(t, vllm_standin.ENGINES)
        record["num_processes"] = t.accelerator.num_processes
        (out / f"{name}-rank{t.accelerator.process_index}.json").write_text(json.dumps(record))
    leave_process_group()


def test_two_processes_generate_only_kept_prompts_through_vllm(tmp_path: Path) -> None:
    """`accelerate launch` with 2 CPU processes (gloo, DDP), both vLLM modes: TRL's gather,
    broadcast and process_index slice (server) and each rank's own generation (colocate)
    hand every rank its rows' completions; the run ends (no hang)."""
    from test_trl_fewer import _launch

    done, seconds = _launch(tmp_path, ["--multi_gpu"], script=__file__)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, (mode, _, n) in ARMS.items():
        ranks = [json.loads((tmp_path / f"{name}-rank{r}.json").read_text()) for r in (0, 1)]
        assert all(r["num_processes"] == 2 for r in ranks), name
        check_run(ranks, mode, name, n)
        if name in ODD:  # the case the filler groups are for did happen
            fillers = [r["rollouts_filler"] for r in ranks]
            assert fillers[0] == fillers[1] > 0, (name, fillers)
    print(f"2 processes through TRL's vLLM path: {seconds:.0f} s for {len(ARMS)} runs")


if __name__ == "__main__":  # a rank of the two-process test, started by accelerate launch
    _vllm_distributed_worker(Path(sys.argv[1]))
