"""Real RL fine-tuning on a CPU: a tiny Llama model built from scratch, a supervised warm
start, the reference GRPO/Dr.GRPO/RLOO trainer with a selector choosing every batch, and
METIS joint training (the policy judges its own curriculum).

Needs the `train` extra (torch, transformers, tokenizers; tensorboard optional). Nothing
here is imported by `frontier_rft` itself: import the submodules you use
(`frontier_rft.training.grpo`, `.sft`, `.tiny_model`, `.evaluate`). What it shares with
ZIP-RC-Lite inference lives below both: loading, sampling and scoring a model in
`frontier_rft.lm`, the task suites and their held-out splits in `frontier_rft.tasks.suite`.
See docs/training.md.
"""
