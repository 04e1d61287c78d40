"""Counts the rows that reach a policy's forward pass while it trains, in the model's own
calls: a forward pre-hook on the model reads each call's `input_ids` (the prompt, then the
completion) and records the task of each row, from the prompt text `task <t>:`.

Only calls with gradients on are counted: the training step's forward. Generation and the
old/reference log-prob passes run under `torch.no_grad()` (TRL's own code), so they are not.
"""

from __future__ import annotations

import re
from typing import Any

TASK = re.compile(r"task (\d+):")


class ForwardRows:
    """Per generation step (`new_step`), the task of every row the policy's forward pass saw
    with gradients on."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.steps: list[list[int]] = []
        self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def new_step(self) -> None:
        """The next forward passes belong to a new generation step."""
        self.steps.append([])

    def _hook(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        import torch

        if not torch.is_grad_enabled() or not module.training:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None or not self.steps:
            return
        for text in self.tokenizer.batch_decode(ids, skip_special_tokens=True):
            found = TASK.search(text)
            self.steps[-1].append(int(found.group(1)) if found else -1)
