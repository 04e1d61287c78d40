"""The vLLM engine stood in for at TRL's narrowest seams, answered by a tiny model's real
generation, so TRL's own vLLM code path runs on a CPU without vLLM installed.

What is stood in for, and nothing else (all in `trl.generation.vllm_generation`'s names):

- `is_vllm_available` answers True (vLLM is not installed here: its wheels need CUDA).
- colocate: `LLM` (vllm.LLM) is `TinyLLM`, whose `generate(prompts, sampling_params)` samples
  each request's `n` completions from its own copy of a tiny Llama, and whose
  `llm_engine.model_executor.driver_worker.model_runner.model.load_weights` (where TRL's
  `sync_weights` writes the policy's weights) loads them into that copy; `SamplingParams`
  and `StructuredOutputsParams` hold their keyword arguments.
- server: `VLLMClient` is `TinyClient`, whose `generate(prompts, n=...)` answers as the
  server's /v1/completions does (n completions a prompt, prompt-major); its network half
  (the HTTP session, `init_communicator`'s NCCL group, which needs CUDA, and
  `update_named_params`' NCCL broadcast) is replaced by loading the weights into its copy.

Everything around those calls is TRL's own: the weight sync (`sync_weights`), the gather of
every process's prompts, `[::num_generations]`, the broadcast and the `process_index` slice
(server), each rank generating its own rows (colocate), the logprobs' extraction, and the
importance-sampling correction on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from tiny_lm import char_tokenizer, tiny_llama


@dataclass
class Logprob:
    """vllm.sequence.Logprob: what `extract_logprobs` reads."""

    logprob: float
    rank: int = 1
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    """vllm.CompletionOutput: one completion's token ids and per-token logprobs."""

    token_ids: list[int]
    logprobs: list[dict[int, Logprob]] | None


@dataclass
class RequestOutput:
    """vllm.RequestOutput: one request's prompt and its n completions."""

    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]


class SamplingParams:
    """vllm.SamplingParams: its keyword arguments, read by TinyEngine."""

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)


StructuredOutputsParams = SamplingParams


@dataclass
class TinyEngine:
    """A tiny Llama that generates as vLLM does: its own weights (TRL's sync loads the
    policy's), n sampled completions a prompt, each up to max_tokens and ending at the first
    EOS (included), with the sampled tokens' processed logprobs. Records every call."""

    seed: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Per call: its prompts (token ids), n, and the completions returned (token ids)."""

    def __post_init__(self) -> None:
        self.tokenizer = char_tokenizer()
        self.model = tiny_llama(self.tokenizer, seed=1234)  # overwritten by the first sync
        self.model.eval()
        self.loaded: set[str] = set()

    def load_weights(self, weights: Any) -> None:
        """Copy (name, tensor) pairs into this engine's model, as vLLM's load_weights does."""
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, tensor in weights:
                params[name].copy_(tensor.detach().to(params[name].dtype))
                self.loaded.add(name)

    def generate(
        self, prompts: list[list[int]], n: int, max_tokens: int, temperature: float = 1.0
    ) -> list[tuple[list[int], list[float]]]:
        """`n` completions of each prompt, prompt-major: (token ids, sampled logprobs)."""
        if len(self.loaded) != len(dict(self.model.named_parameters())):
            raise RuntimeError("generate before TRL synced the policy's weights")
        tok = self.tokenizer
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + list(p) for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(self.seed * 100_003 + len(self.calls))
            out = self.model.generate(
                input_ids=ids, attention_mask=mask, do_sample=True, max_new_tokens=max_tokens,
                temperature=temperature, top_k=None, top_p=1.0, num_return_sequences=n,
                pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                output_scores=True, return_dict_in_generate=True,
            )  # fmt: skip
        result = []
        for row in range(out.sequences.shape[0]):
            tokens = out.sequences[row, width:].tolist()
            if tok.eos_token_id in tokens:
                tokens = tokens[: tokens.index(tok.eos_token_id) + 1]
            logps = [
                float(torch.log_softmax(out.scores[i][row].float(), dim=-1)[t])
                for i, t in enumerate(tokens)
            ]
            result.append((tokens, logps))
        self.calls.append({"prompts": [list(p) for p in prompts], "n": n,
                           "completions": [c for c, _ in result]})  # fmt: skip
        return result


ENGINES: list[TinyEngine] = []
"""Every engine built in this process (one per trainer), for the tests to read."""


class _Runner:
    def __init__(self, engine: TinyEngine) -> None:
        self.model = engine


class TinyLLM:
    """vllm.LLM in colocate mode, answered by a TinyEngine (see module)."""

    def __init__(self, model: str = "", seed: int = 0, **kwargs: Any) -> None:
        self.engine = TinyEngine(seed=seed)
        ENGINES.append(self.engine)
        worker = type("Worker", (), {"model_runner": _Runner(self.engine)})()
        executor = type("Executor", (), {"driver_worker": worker})()
        self.llm_engine = type("Engine", (), {"model_executor": executor})()

    def generate(
        self, prompts: list[dict[str, Any]], sampling_params: Any, use_tqdm: bool = False
    ) -> list[RequestOutput]:
        """vLLM's offline generate: one RequestOutput per prompt, `n` completions each."""
        ids = [p["prompt_token_ids"] for p in prompts]
        n = int(sampling_params.n)
        done = self.engine.generate(ids, n, int(sampling_params.max_tokens),
                                    float(sampling_params.temperature))  # fmt: skip
        return [
            RequestOutput(
                p,
                [
                    CompletionOutput(
                        t, [{tok: Logprob(lp)} for tok, lp in zip(t, lps, strict=True)]
                    )
                    for t, lps in done[i * n : (i + 1) * n]
                ],
            )
            for i, p in enumerate(ids)
        ]

    def reset_prefix_cache(self) -> None:
        """Nothing cached here."""


def _client_class() -> type:
    from trl.generation.vllm_client import VLLMClient

    class TinyClient(VLLMClient):  # type: ignore[misc]
        """trl's VLLMClient with the server answered in-process by a TinyEngine (see module)."""

        def __init__(self, base_url: str | None = None, **kwargs: Any) -> None:
            self.engine = TinyEngine(seed=0)
            ENGINES.append(self.engine)
            self.base_url = base_url or "http://stand-in"
            self.communicator = None

        def get_server_info(self) -> dict[str, Any]:
            return {"model_config": {"logprobs_mode": "processed_logprobs"},
                    "weight_transfer_config": {"backend": "stand-in"}}  # fmt: skip

        def init_communicator(self, device: Any = 0) -> None:
            """The weights reach the engine in update_named_params (NCCL needs CUDA)."""

        def update_named_params(self, metadata: Any, named_params: Any) -> None:
            self.engine.load_weights(named_params)

        def reset_prefix_cache(self) -> None:
            """Nothing cached here."""

        def close_communicator(self) -> None:
            """No group to close."""

        def generate(  # type: ignore[override]
            self, prompts: list[list[int]], features: Any = None, n: int = 1,
            max_tokens: int = 16, temperature: float = 1.0, **kwargs: Any,
        ) -> dict[str, Any]:  # fmt: skip
            """The server's /v1/completions answer: n completions a prompt, prompt-major."""
            done = self.engine.generate(prompts, n, max_tokens, temperature)
            return {
                "prompt_ids": [list(p) for p in prompts],
                "completion_ids": [t for t, _ in done],
                "logprobs": [[[lp] for lp in lps] for _, lps in done],
                "logprob_token_ids": [[[tok] for tok in t] for t, _ in done],
            }

    return TinyClient


def install(monkeypatch: Any = None) -> None:
    """Put the stand-ins in trl.generation.vllm_generation (through pytest's `monkeypatch`,
    which undoes them after the test, where given)."""
    import trl.generation.vllm_generation as vg

    names = {
        "is_vllm_available": lambda *a, **k: True,
        "LLM": TinyLLM,
        "SamplingParams": SamplingParams,
        "StructuredOutputsParams": StructuredOutputsParams,
        "VLLMClient": _client_class(),
    }
    for name, value in names.items():  # vLLM's own names are absent where it is not installed
        if monkeypatch is None:
            setattr(vg, name, value)
        else:
            monkeypatch.setattr(vg, name, value, raising=False)
