"""Real RL fine-tuning on a CPU: a tiny Llama model built from scratch, a supervised warm
start, the reference GRPO/Dr.GRPO/RLOO trainer with a selector choosing every batch, and
METIS joint training (the policy judges its own curriculum).

Needs the `train` extra (torch, transformers, tokenizers; tensorboard optional). Nothing
here is imported by `frontier_rft` itself: import the submodules you use
(`frontier_rft.training.grpo`, `.sft`, `.tiny_model`, `.evaluate`). See docs/training.md.
"""
