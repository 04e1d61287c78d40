"""Run under an older verl (<= 0.7, the AbstractCurriculumSampler interface); prints JSON.

Usage: PYTHONPATH=<verl 0.7 install>:<this folder> python old_verl_curriculum.py WORKDIR
Drives FrontierSampler exactly as verl 0.7's create_rl_sampler and RayPPOTrainer.fit do:
`data.sampler.class_path` builds it, the trainer checks isinstance(..., AbstractCurriculumSampler)
and calls `sampler.update(batch=batch)` after every step.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import numpy as np
import torch
import verl
from omegaconf import OmegaConf
from torchdata.stateful_dataloader import StatefulDataLoader
from verl import DataProto
from verl.experimental.dataset.sampler import AbstractCurriculumSampler
from verl.trainer.main_ppo import create_rl_sampler
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl_data import MAX_PROMPT_TOKENS, build_tokenizer, write_parquet

STEPS, N = 5, 3


def main(workdir: Path) -> None:
    data = OmegaConf.create(
        {
            "max_prompt_length": MAX_PROMPT_TOKENS,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "cache_dir": str(workdir / "verl_cache"),
            "prompt_key": "prompt",
            "truncation": "error",
            "shuffle": True,
            "seed": 11,
            "train_batch_size": 4,
            "gen_batch_size": None,
            "dataloader_num_workers": 0,
            "sampler": {
                "class_path": "pkg://frontier_rft.integrations.verl",
                "class_name": "FrontierSampler",
                "frontier": {"selector": "bots", "selector_config": {"lam": 0.2}},
            },
        }
    )
    path = write_parquet(workdir / "train.parquet", 40)
    dataset = RLHFDataset(data_files=str(path), tokenizer=build_tokenizer(), config=data)
    sampler = create_rl_sampler(data, dataset)
    loader = StatefulDataLoader(
        dataset=dataset,
        batch_size=4,
        num_workers=0,
        drop_last=True,
        collate_fn=collate_fn,
        sampler=sampler,
    )
    drawn = []
    for step, batch_dict in zip(range(STEPS), loader, strict=False):
        batch = DataProto.from_single_dict(batch_dict)
        batch.non_tensor_batch["uid"] = np.array(
            [str(uuid.uuid4()) for _ in range(len(batch.batch))], dtype=object
        )
        batch = batch.repeat(repeat_times=N, interleave=True)
        ids = batch.non_tensor_batch["index"].astype(np.int64)
        scores = torch.zeros(len(ids), 4)
        scores[:, -1] = torch.from_numpy(((ids + step) % 2).astype(np.float32))
        batch.batch["token_level_scores"] = scores
        drawn.append(batch_dict["index"].tolist())
        if isinstance(loader.sampler, AbstractCurriculumSampler):  # RayPPOTrainer.fit, verl 0.7
            loader.sampler.update(batch=batch)
    sampler.selector.flush()
    print(
        json.dumps(
            {
                "verl": verl.__version__,
                "curriculum": isinstance(sampler, AbstractCurriculumSampler),
                "selector": sampler.selector.name,
                "lam": sampler.selector.config.lam,
                "seed": sampler.config.seed,
                "rollouts": sampler.selector.metrics()["feedback/rollouts"],
                "drawn": drawn,
            }
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
