"""Cost of the prompts-only evidence: text features and policy self-embeddings.

- Text features (`frontier_rft.features.text_features`, default config): prompts per
  second and peak memory for N = 1e4, 1e5, 1e6 prompts, each measured in a fresh process
  (scikit-learn's import is not timed: it is paid once per process). Prompts are the
  simulator's generated prompt text (~110 characters, topic words, numbers, distractors).
- Derived categories (k-means on those features) for the same N.
- Policy self-embeddings (`policy_embeddings`) on the repository's tiny Llama (hidden 128,
  4 layers, built from its config, random weights), seconds per 1,000 prompts, on CPU
  with one torch thread (`--torch-threads`; two threads on a busy 2-core machine spin).

    python benchmarks/featurizers.py --json benchmarks/results/featurizers.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np

from frontier_rft.bench.scripts import command_line

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
n = int(sys.argv[1])
from frontier_rft.simulation.prompts import task_prompts
rng = np.random.default_rng(0)
base = task_prompts(rng.integers(0, 3, 20_000), rng.integers(0, 5, 20_000), 3, 5,
                    ("math", "logic", "code"), 1.0, rng)
prompts = [base[i % len(base)] + f" #{i}" for i in range(n)]  # distinct strings
import sklearn.decomposition, sklearn.feature_extraction.text, sklearn.cluster  # not timed
from frontier_rft.features import text_features
from frontier_rft.features.derive import cluster_count, cluster_features
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
f = text_features(prompts)
text_s, text_cpu_s = time.perf_counter() - t, time.process_time() - c
peak_text = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
cluster_features(f.astype(np.float64), cluster_count(n), 0)
kmeans_s = time.perf_counter() - t
print(json.dumps({"n": n, "dim": f.shape[1], "chars": float(np.mean([len(p) for p in prompts])),
                  "text_s": text_s, "text_cpu_s": text_cpu_s, "kmeans_s": kmeans_s,
                  "rss_before_mb": before / 1024, "rss_peak_mb": peak_text / 1024}))
"""


def text_rows(sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, check=True
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["prompts_per_s"] = n / row["text_s"]
        row["prompts_per_cpu_s"] = n / row["text_cpu_s"]  # robust to other jobs on the machine
        rows.append(row)
        print(
            f"text N={n:>8,}: {row['prompts_per_s']:>9,.0f} prompts/s wall, "
            f"{row['prompts_per_cpu_s']:>9,.0f} per CPU-s, "
            f"k-means {row['kmeans_s']:.2f} s, peak RSS {row['rss_peak_mb']:.0f} MB"
        )
    return rows


def self_embedding_row(prompts_n: int, threads: int) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)

    from frontier_rft.features import policy_embeddings
    from frontier_rft.tasks.suite import load_task
    from frontier_rft.training.config import ModelConfig
    from frontier_rft.training.tiny_model import build_tiny_lm

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, tok = build_tiny_lm(ModelConfig(), tmp)
        items = load_task("countdown").generate(prompts_n, 0, "3x20,4x20")
        prompts = [it.prompt for it in items]
        policy_embeddings(model, tok, prompts[:64], progress=False)  # warm-up
        t, c = time.perf_counter(), time.process_time()
        emb = policy_embeddings(model, tok, prompts, batch_size=32, progress=False)
        seconds, cpu_seconds = time.perf_counter() - t, time.process_time() - c
    row = {
        "n": prompts_n,
        "hidden": int(emb.shape[1]),
        "seconds": seconds,
        "seconds_per_1000": 1000 * seconds / prompts_n,
        "cpu_seconds_per_1000": 1000 * cpu_seconds / prompts_n,
        "mean_tokens": float(np.mean([len(tok(p)["input_ids"]) for p in prompts])),
        "torch_threads": torch.get_num_threads(),
    }
    print(
        f"self-embeddings: {row['seconds_per_1000']:.2f} s wall, "
        f"{row['cpu_seconds_per_1000']:.2f} CPU-s per 1,000 prompts "
        f"({row['mean_tokens']:.0f} tokens each, hidden {row['hidden']})"
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e4,1e5,1e6", help="text-feature pool sizes")
    parser.add_argument("--embed", type=int, default=2000, help="prompts to self-embed")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads to embed")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    result = {
        "command": command_line(),
        "machine": f"{platform.processor() or platform.machine()}, "
        f"{len(__import__('os').sched_getaffinity(0))} CPUs, Python {platform.python_version()}",
        "text": text_rows(sizes),
        "self_embeddings": self_embedding_row(args.embed, args.torch_threads),
        "load_average_after": list(__import__("os").getloadavg()),
        "rss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
