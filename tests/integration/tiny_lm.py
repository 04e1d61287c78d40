"""A tiny causal LM and a character-level tokenizer built locally: no hub access, CPU-fast.

Used by the trainer integration tests; the model is random (hidden 32, 2 layers), which is
all a test of the selection plumbing needs: completions vary, so rewards can too.
"""

from __future__ import annotations

import string
from typing import Any

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
CHARS = list(string.ascii_letters + string.digits + string.punctuation + " ")


def char_tokenizer() -> Any:
    """A PreTrainedTokenizerFast with one token per printable ASCII character."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + CHARS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
    )
    tok.padding_side = "left"
    return tok


def _tiny_config(tokenizer: Any, layers: int, **extra: Any) -> Any:
    """A Llama config with hidden size 32 over the tokenizer's vocabulary."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


def tiny_llama(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialised 2-layer Llama with hidden size 32 over the tokenizer's vocabulary."""
    import torch
    from transformers import LlamaForCausalLM

    config = _tiny_config(
        tokenizer,
        2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def tiny_reward_model(tokenizer: Any, seed: int = 1) -> Any:
    """A randomly initialised 1-layer Llama sequence classifier with one output (a reward)."""
    import torch
    from transformers import LlamaForSequenceClassification

    config = _tiny_config(tokenizer, 1, num_labels=1)
    torch.manual_seed(seed)
    return LlamaForSequenceClassification(config)


# ---------------------------------------------------------------- a tiny TRL run's pieces
def tiny_grpo_args(out: Any, *, prompts: int = 4, n: int = 4, cls: Any = None, **kw: Any) -> Any:
    """TRL's GRPOConfig (or `cls`, RLOOConfig say) for the tiny model on CPU: `prompts`
    prompts of `n` completions a generation batch, 8 tokens each, no saves, no logging
    backend; `kw` sets the run's length (max_steps, num_train_epochs) and any other field."""
    if cls is None:
        from trl import GRPOConfig

        cls = GRPOConfig
    values: dict[str, Any] = {
        "output_dir": str(out),
        "per_device_train_batch_size": prompts * n,
        "num_generations": n,
        "max_completion_length": 8,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "seed": 0,
        "learning_rate": 1e-3,
        "disable_tqdm": True,
        "beta": 0.0,
    }
    values.update(kw)
    return cls(**values)


def task_dataset(ids: Any) -> Any:
    """A dataset of one row a task id of `ids` (in that order): prompt "task {id}:", task_id."""
    from datasets import Dataset

    ids = [int(t) for t in ids]
    return Dataset.from_dict({"prompt": [f"task {t}:" for t in ids], "task_id": ids})


def planted_rewards(task_id: list[int]) -> list[float]:
    """The planted pool's rewards of one reward call: task t always solved (t % 3 == 0),
    never (t % 3 == 1), or mixed (1 on every other completion of t in the call, so its group,
    a screen's k = 2 and their continuation are mixed whatever the text)."""
    seen: dict[int, int] = {}
    out = []
    for t in task_id:
        i = seen.get(t, 0)
        seen[t] = i + 1
        out.append(1.0 if t % 3 == 0 else 0.0 if t % 3 == 1 else float(i % 2 == 0))
    return out
