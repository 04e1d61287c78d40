"""Cost of policy self-embeddings on the tiny Countdown policy, per 1,000 prompts.

    .venv/bin/python benchmarks/self_embedding_cost.py   # after `frontier bench-rl` built
                                                          # runs/bench-rl/model-sft

One torch thread; 1,000 chat-templated training prompts; CPU seconds are what a quiet core
would take, wall seconds depend on the machine's load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="runs/bench-rl/model-sft")
    p.add_argument("--prompts", type=int, default=1000)
    args = p.parse_args()
    import torch

    from frontier_rft.features.policy import policy_embeddings
    from frontier_rft.lm.model_io import load_lm
    from frontier_rft.lm.rollout import encode_prompts
    from frontier_rft.tasks.suite import load_task, train_split

    torch.set_num_threads(1)
    model, tok = load_lm(args.model)
    items = train_split(load_task("countdown"), args.prompts, 1, "2x20,3x20,4x20")
    texts = [tok.decode(ids) for ids in encode_prompts(tok, [it.prompt for it in items])]
    tokens = sum(len(tok(t)["input_ids"]) for t in texts) / len(texts)
    by_batch = {}
    for batch in (16, 64):
        w0, c0 = time.perf_counter(), time.process_time()
        emb = policy_embeddings(model, tok, texts, batch_size=batch, progress=False)
        scale = 1000 / len(texts)
        by_batch[batch] = {
            "wall_s_per_1000": scale * (time.perf_counter() - w0),
            "cpu_s_per_1000": scale * (time.process_time() - c0),
        }
    report = {
        "prompts": len(texts),
        "mean_tokens": tokens,
        "dim": int(emb.shape[1]),
        "load_average": os.getloadavg()[0],
        "by_batch": by_batch,
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
