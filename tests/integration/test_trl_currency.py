"""Issue 89 item 2: the TRL trainer's start-up currency line is the one `frontier check-config
trl` prints for the same settings (TRL's parsed GRPOConfig against the file as written)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from tiny_lm import char_tokenizer, planted_rewards, task_dataset, tiny_grpo_args, tiny_llama

from frontier_rft.integrations.trl import FrontierConfig, FrontierGRPOTrainer
from frontier_rft.integrations.trl.config_check import check_trl_config


def test_the_start_up_line_is_check_configs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny run on CPU: 4 prompts x 4 completions = 16 rows a call of 8 tokens, on the
    shipped cpu curve read at 24 tokens, the nearest measured length (knee ~34 rows): steps."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no accelerate default config

    def keyed(completions: list[str], task_id: list[int], **kwargs: object) -> list[float]:
        return planted_rewards(task_id)

    tok = char_tokenizer()
    args = tiny_grpo_args(tmp_path, prompts=4, n=4, max_steps=1)
    with caplog.at_level("INFO", logger="frontier_rft.integrations.trl.trainer"):
        FrontierGRPOTrainer(
            model=tiny_llama(tok, seed=0), reward_funcs=[keyed], args=args,
            train_dataset=task_dataset(range(8)), processing_class=tok,
            frontier=FrontierConfig(selector="uniform"),
        )  # fmt: skip
    said = [r.getMessage() for r in caplog.records if "currency: " in r.getMessage()]
    assert len(said) == 1, said
    written = {"per_device_train_batch_size": 16, "num_generations": 4,
               "max_completion_length": 8, "use_cpu": True, "max_steps": 1}  # fmt: skip
    (checked,) = check_trl_config(written, 1).currency
    assert said[0] == f"frontier-rft: currency: {checked}"
    assert checked.startswith("steps: an engine decodes 16 rows a call")
    assert "~34 rows, the shipped cpu curve" in checked
    assert "(read at 24, the nearest measured length)" in checked
