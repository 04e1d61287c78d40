"""Every YAML example in examples/verl (one per selector family) against the real verl.

Each composes with verl's own Hydra config (ppo_trainer); its sampler_kwargs build the
FrontierSampler the v1 trainer builds, over verl's RLHFDataset of a data file carrying
metadata columns (data_source, extra_info.level, extra_info.pass_weak/pass_strong), which
then draws a batch through verl's dataloader and folds in a step of rewards in verl's
DataProto layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from verl_batches import make_loader, verl_step_batch

from frontier_rft.integrations.verl import FrontierSampler, VerlSamplerConfig

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "verl"
B, N_ROLLOUTS = 4, 3

# example -> (selector, evidence keys its metrics report, what the pool must hold)
EXPECTED = {
    "uniform": ("uniform", set(), ()),
    "skip": ("skip", {"evidence/features/text", "evidence/plugin/regression"}, ()),
    "greso": ("greso", set(), ()),
    "prioritized": ("prioritized", set(), ()),
    "bots": ("bots", {"evidence/plugin/interpolation"}, ("reference_pass_rates",)),
    "sec": ("sec", {"evidence/categories/given"}, ("categories",)),
    "offline": ("offline", {"evidence/difficulty/given"}, ("difficulty",)),
    "frontier": ("frontier", {"evidence/features/text", "evidence/keys/prompts"}, ()),
    "pcl": ("pcl", {"evidence/features/text"}, ()),
    "metis": ("metis", set(), ()),
}


def compose(name: str, overrides: tuple[str, ...] = ()) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(EXAMPLES), version_base=None):
        return hydra_compose(name, overrides=list(overrides))


def test_there_is_an_example_per_selector_family() -> None:
    assert {p.stem for p in EXAMPLES.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_builds_its_selector_from_the_data_file_and_runs_a_step(
    name: str, make_dataset: Any
) -> None:
    cfg = compose(name)
    custom = cfg.trainer.v1.sampler.custom_sampler
    from verl.utils.import_utils import load_extern_object

    assert load_extern_object(custom.path, custom.name).__name__ == "FrontierReplayBuffer"
    from omegaconf import OmegaConf

    kwargs = OmegaConf.to_container(cfg.trainer.v1.sampler.sampler_kwargs, resolve=True)
    assert isinstance(kwargs, dict)
    ds = make_dataset(48)
    # What FrontierReplayBuffer does inside the v1 trainer's _init_dataloader (a kept step is
    # the buffer's to run, test_verl_fewer.py; here: the selector and what it reads):
    kwargs.pop("rollouts", None)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, **kwargs))
    selector, evidence, fields = EXPECTED[name]
    sel = sampler.selector
    assert sel.name == selector
    assert {k for k in sel.metrics() if k.startswith("evidence/")} == evidence
    for field in ("prompts", *fields):
        assert getattr(sel.pool, field) is not None, field
    frame = ds.dataframe
    if "categories" in fields:  # data_source strings -> labels in order of appearance
        sources = list(frame["data_source"])
        codes = {s: i for i, s in enumerate(dict.fromkeys(sources))}
        assert sel.pool.categories.tolist() == [codes[s] for s in sources]
    if "difficulty" in fields:
        assert sel.pool.difficulty.tolist() == [e["level"] for e in frame["extra_info"]]
    if "reference_pass_rates" in fields:
        weak = [e["pass_weak"] for e in frame["extra_info"]]
        np.testing.assert_allclose(sel.pool.reference_pass_rates[:, 0], weak)
    batch_dict = next(iter(make_loader(ds, sampler, B)))
    sampler.update(verl_step_batch(batch_dict, N_ROLLOUTS, 0))
    metrics = sampler.metrics()
    assert metrics["feedback/steps"] == 1.0  # folded in at the report, not one step late
    assert metrics["feedback/rollouts"] == B * N_ROLLOUTS
    logged = sampler.log_metrics()  # what the v1 trainer logs with its own metrics
    assert all(k.startswith("curriculum/") for k in logged)
    assert {"curriculum/feedback/effective_task_ratio", "curriculum/verl/max_feedback_lag"} <= set(
        logged
    )
    assert {"curriculum/" + k for k in evidence} <= set(logged)
    if name == "metis":
        assert metrics["metis/non_llm_judge"] == 1.0


def test_metadata_mistakes_are_named(make_dataset: Any) -> None:
    ds = make_dataset(16)
    with pytest.raises(ValueError, match="no column 'source'"):
        FrontierSampler(
            ds, config=VerlSamplerConfig(batch_size=B, selector="sec", category_keys=["source"])
        )
    with pytest.raises(ValueError, match="has no field 'lvl'"):
        FrontierSampler(
            ds,
            config=VerlSamplerConfig(
                batch_size=B, selector="offline", difficulty_key="extra_info.lvl"
            ),
        )
    with pytest.raises(ValueError, match="judge: heuristic"):
        FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector="metis"))
    with pytest.raises(ValueError, match="two columns"):
        VerlSamplerConfig(batch_size=B, pass_rate_keys=["extra_info.pass_weak"])


def test_legacy_path_writes_metrics_to_a_file_by_default(make_dataset: Any) -> None:
    ds = make_dataset(16)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, selector="prioritized"))
    sampler.update(verl_step_batch(next(iter(make_loader(ds, sampler, B))), N_ROLLOUTS, 0))
    lines = Path("frontier_metrics.jsonl").read_text().splitlines()  # the test's own folder
    assert len(lines) == 1 and '"curriculum/feedback/steps": 1.0' in lines[0]


def test_self_embeddings_from_a_local_model_directory(make_dataset: Any, tmp_path: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from verl_data import build_tokenizer

    from frontier_rft.features import policy_embeddings

    tok = build_tokenizer()
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            pad_token_id=tok.pad_token_id,
        )
    )  # fmt: skip
    model.save_pretrained(tmp_path / "actor")
    tok.save_pretrained(tmp_path / "actor")
    cfg = compose(
        "frontier",
        (f"++trainer.v1.sampler.sampler_kwargs.self_embeddings_model={tmp_path / 'actor'}",),
    )
    from omegaconf import OmegaConf

    kwargs = OmegaConf.to_container(cfg.trainer.v1.sampler.sampler_kwargs, resolve=True)
    assert isinstance(kwargs, dict)
    ds = make_dataset(24)
    sampler = FrontierSampler(ds, config=VerlSamplerConfig(batch_size=B, **kwargs))
    assert sampler.selector.evidence["features"] == "policy"
    rendered = [
        tok.apply_chat_template(list(p), add_generation_prompt=True, tokenize=False)
        for p in ds.dataframe["prompt"]
    ]
    expected = policy_embeddings(model, tok, rendered, progress=False)
    np.testing.assert_allclose(sampler.selector.pool.features, expected, atol=1e-5)
