"""METIS joint training: the policy is the judge, and its judgment tokens are trained.

`PolicyJudge` is the collaborator `make_selector("metis", pool, judge=...)` calls with the
rendered judge prompts of a candidate pool: it tokenises them (the tokenizer's chat template
renders `[system, user]` exactly as the flat prompt, so both give the same ids), generates a
short answer with the policy being trained, and remembers the sampled token ids.

After rollout the selector scores each selected judgment (R = 1 - (4 (v_hat - v))^2) and
returns its REINFORCE advantage R - b in `pop_judge_records()`. `judge_loss` turns those
records into `-(1/|S|) sum_x A(x) log pi(answer tokens | judge prompt)`; the trainer adds
`lam * judge_loss` to the policy loss (paper Eq. 9-10, lam = 0.01).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch

from frontier_rft.lm.answer_constraint import AnswerConstraint, answer_token_ids
from frontier_rft.lm.rollout import generate_shared_prefix, score_completions
from frontier_rft.lm.tokenizer import BOS, ROLE_TOKENS
from frontier_rft.selectors.metis import JudgeRecord
from frontier_rft.selectors.metis.judge import (
    ALLOWED_VALUES,
    judge_messages,
    system_message,
    user_message,
)
from frontier_rft.tasks.base import TaskItem

__all__ = [
    "PolicyJudge",
    "flat_judge_messages",
    "judge_format_examples",
    "judge_loss",
    "weighted_judge_loss",
]


class PolicyJudge:
    """Judge callable backed by the policy: rendered judge prompts -> one answer each.

    `temperature` 0 answers greedily; the paper samples (REINFORCE needs exploration), here
    over the nucleus `top_p` (1.0: the full vocabulary), as the trainer's rollouts sample.
    Sampled token ids are kept for the last `memory` calls so the judge loss trains exactly
    the tokens that were generated; records from older calls are re-tokenised from text.

    `constrained`: every answer is one of `\\boxed{v}` for the allowed values v (an
    AnswerConstraint masks every other token; sampling over the full vocabulary, as a
    nucleus cut could leave no allowed token), so every judgment parses. Not in the paper
    (its judge is free text); for a policy that does not follow the format by itself.
    """

    is_llm = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 10,
        temperature: float = 1.0,
        memory: int = 4,
        top_p: float = 1.0,
        constrained: bool = False,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.constrained = constrained
        self.top_p = 1.0 if constrained else top_p
        self.answers = [f"\\boxed{{{v:.2f}}}" for v in ALLOWED_VALUES] if constrained else []
        if constrained:  # checked now, not at the first judgment
            longest = max(len(ids) for ids in answer_token_ids(tokenizer, self.answers))
            if longest > max_new_tokens:
                raise ValueError(
                    f"the constrained judge's answers take up to {longest} tokens with this "
                    f"tokenizer; raise judge_max_new_tokens from {max_new_tokens} to {longest}"
                )
        self.memory = memory
        self.calls = 0
        self.prompts_judged = 0
        self.generated_tokens = 0
        self._sampled: OrderedDict[int, dict[str, list[int]]] = OrderedDict()
        self.last_prompts: list[str] = []
        self.last_responses: list[str] = []
        vocab = tokenizer.get_vocab()
        self._native = all(t in vocab for t in (BOS, *ROLE_TOKENS))
        """True for the tiny model's tokenizer, whose role markers are the flat prompt's."""

    def prompt_ids(self, rendered: str) -> list[int]:
        """Token ids of a flat judge prompt: BOS + the flat rendering for the tiny model's
        tokenizer (its chat template renders exactly that), else the (system, user)
        messages parsed back from it through the tokenizer's own chat template."""
        if self._native:
            ids = self.tokenizer(BOS + rendered, add_special_tokens=False)["input_ids"]
            return [int(i) for i in ids]
        messages = flat_judge_messages(rendered)
        ids = self.tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True
        )
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def __call__(self, prompts: list[str]) -> list[str]:
        ids = [self.prompt_ids(p) for p in prompts]
        constraint = [AnswerConstraint(self.tokenizer, self.answers)] if self.constrained else []
        answers = generate_shared_prefix(
            self.model, ids, self.max_new_tokens, self.temperature, self.top_p, constraint
        )
        self.calls += 1
        self.prompts_judged += len(prompts)
        self.generated_tokens += sum(len(a) for a in answers)
        self._sampled[self.calls] = dict(zip(prompts, answers, strict=True))
        self.last_prompts = list(prompts)
        while len(self._sampled) > self.memory:
            self._sampled.popitem(last=False)
        self.last_responses = [self.tokenizer.decode(a, skip_special_tokens=True) for a in answers]
        return list(self.last_responses)

    def answer_ids(self, record: JudgeRecord) -> list[int]:
        """The sampled answer tokens of a record (re-tokenised + EOS if no longer held)."""
        for sampled in reversed(self._sampled.values()):
            if record.prompt in sampled:
                return sampled[record.prompt]
        ids = self.tokenizer(record.response, add_special_tokens=False)["input_ids"]
        return [int(i) for i in ids] + [int(self.tokenizer.eos_token_id)]


def flat_judge_messages(rendered: str) -> list[dict[str, str]]:
    """(system, user) chat messages of a flat judge prompt (metis_judge.render_judge_prompt)."""
    head, sep, rest = rendered.partition("\n<|user|>\n")
    if not sep or not head.startswith("<|system|>\n"):
        raise ValueError("not a flat METIS judge prompt: expected <|system|> then <|user|>")
    user = rest.removesuffix("\n<|assistant|>\n")
    return judge_messages(head.removeprefix("<|system|>\n"), user)


def judge_loss(
    model: Any, judge: PolicyJudge, records: Sequence[JudgeRecord]
) -> tuple[torch.Tensor, dict[str, float]]:
    """REINFORCE loss on the judgment tokens: -(1/|S|) sum_x A(x) log pi(answer_x | prompt_x).

    The prompt is rebuilt from `record.messages` through the tokenizer's chat template.
    """
    tok = judge.tokenizer
    prompts = []
    for rec in records:
        ids = tok.apply_chat_template(rec.messages, tokenize=True, add_generation_prompt=True)
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        prompts.append([int(i) for i in ids])
    answers = [judge.answer_ids(rec) for rec in records]
    scores = score_completions(model, prompts, answers)
    seq_logp = scores.logprobs.sum(dim=1)
    adv = torch.tensor(
        [rec.advantage for rec in records], dtype=seq_logp.dtype, device=seq_logp.device
    )
    loss = -(adv * seq_logp).mean()
    stats = {
        "metis/judge_loss": float(loss.detach()),
        "metis/judge_advantage_mean": float(adv.mean()),
        "metis/judge_answer_tokens": float(scores.mask.sum() / max(len(records), 1)),
        "metis/judge_records": float(len(records)),
    }
    return loss, stats


def judge_format_examples(
    items: Sequence[TaskItem], tokenizer: Any, count: int, seed: int
) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer ids) of judge prompts answered with a uniformly random listed value.

    For the supervised warm start: it teaches the answer format (`\\boxed{0.xx}` then EOS),
    which a pretrained LLM already follows, and no calibration (the value is random). One
    example in five uses the K = 0 template so the no-ICL ablation starts from the same model.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        calibration = rng.random() >= 0.2
        k = rng.randint(0, 3) if calibration else 0
        exemplars = [(rng.choice(items).prompt, rng.choice(ALLOWED_VALUES)) for _ in range(k)]
        user = user_message(exemplars, rng.choice(items).prompt, calibration)
        messages = judge_messages(system_message(ALLOWED_VALUES, calibration), user)
        ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        answer = f"\\boxed{{{rng.choice(ALLOWED_VALUES):.2f}}}"
        answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
        out.append(([int(i) for i in ids], [int(i) for i in answer_ids] + [tokenizer.eos_token_id]))
    return out


def weighted_judge_loss(
    model: Any, judge: PolicyJudge | None, records: Sequence[JudgeRecord], lam: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """The judge loss of a step's records and its parts, named as the trainer logs them
    (loss/judge, loss/judge_weighted = lam x loss/judge); lam = 0 (the ablation) reports the
    loss and trains nothing on it."""
    assert judge is not None
    if lam == 0.0:
        with torch.no_grad():
            loss, parts = judge_loss(model, judge, records)
    else:
        loss, parts = judge_loss(model, judge, records)
    parts["loss/judge"] = parts.pop("metis/judge_loss")
    parts["loss/judge_weighted"] = lam * parts["loss/judge"]
    return loss, parts
