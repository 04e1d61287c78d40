"""A `rollouts: kept` step on verl's v1 sync trainer does only the kept work.

verl's own `PPOTrainerSync._step_once` runs each step: its replay buffer over a real
TransferQueue (local Ray), `_balance_batch` and its padding, `_compute_old_log_prob`,
`_compute_ref_log_prob`, `_compute_advantage` (GRPO) and `_update_actor`. Two things are
stood in for, as they need GPUs and a model:

- the rollout worker group (verl's AgentLoopManager over vLLM/SGLang servers):
  `ScriptedRollouts.generate_sequences` receives the prompts the trainer submits (what
  vLLM would be sent) and writes each one's group of n in the agent loop's layout;
- the actor/reference worker group (FSDP engine workers): `StandInWorkers`, whose
  `compute_log_prob`, `compute_ref_log_prob` and `update_actor` read the rows verl
  dispatches from TransferQueue, as the workers do, record them, split each rank's share
  with verl's own `make_iterator` and `prepare_micro_batches` (the divisibility the real
  workers assert), and compute each update's policy-gradient loss with verl's
  `compute_policy_loss_vanilla` and `agg_loss` at the step's start (ratio 1).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from test_verl_fewer import ScriptedRollouts, compose
from test_verl_v1_replay_buffer import transfer_queue  # noqa: F401 - a fixture
from verl_data import build_tokenizer, write_parquet

pytestmark = [pytest.mark.integration, pytest.mark.slow]

B, N, ROWS, EPOCHS = 4, 4, 24, 2
MICRO = 2  # ppo / log-prob micro-batch size per GPU


class StandInWorkers:
    """Stands in for verl's actor and reference worker groups (see the module)."""

    def __init__(self, tq: Any, dp: int, loss_agg_mode: str) -> None:
        self.tq, self.dp, self.mode = tq, dp, loss_agg_mode
        self._dispatch_info = {"actor": list(range(dp))}
        self.log_prob_rows: list[list[str]] = []
        self.ref_rows: list[list[str]] = []
        self.updates: list[dict[str, Any]] = []

    def _shares(self, batch: Any) -> list[list[str]]:
        # verl's dispatch gives every rank an equal, contiguous share.
        assert len(batch) % self.dp == 0, "verl's dispatch needs equal shares per rank"
        size = len(batch) // self.dp
        return [batch.keys[r * size : (r + 1) * size] for r in range(self.dp)]

    def compute_log_prob(self, batch: Any) -> Any:
        self.log_prob_rows.append(list(batch.keys))
        return self._forward(batch)

    def compute_ref_log_prob(self, batch: Any) -> Any:
        self.ref_rows.append(list(batch.keys))
        return self._forward(batch)

    def _forward(self, batch: Any) -> Any:
        """A forward pass's data path: the ranks' micro-batches, log-probs of 0 written back."""
        from tensordict import TensorDict
        from verl.workers.engine.utils import prepare_micro_batches

        for share in self._shares(batch):
            local = TensorDict({"i": torch.arange(len(share))}, batch_size=[len(share)])
            local.set_non_tensor("use_dynamic_bsz", False)
            local.set_non_tensor("micro_batch_size_per_gpu", MICRO)
            prepare_micro_batches(local)  # asserts the share divides into micro-batches
        data = self.tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=["input_ids"]
        )
        zeros = torch.nested.as_nested_tensor(
            [torch.zeros(len(x)) for x in data["input_ids"].unbind()], layout=torch.jagged
        )
        out = TensorDict({"log_probs": zeros, "entropy": zeros.clone()}, batch_size=len(batch))
        self.tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=out)
        return batch

    def update_actor(self, batch: Any) -> Any:
        from tensordict import TensorDict
        from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla
        from verl.utils.tensordict_utils import make_iterator
        from verl.workers.engine.utils import prepare_micro_batches

        info = dict(batch.extra_info)
        mini = info["mini_batch_size"]
        assert mini % self.dp == 0  # engine_workers.train_mini_batch's assert
        data = self.tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["advantages", "response_mask"],
        )
        position = {key: i for i, key in enumerate(batch.keys)}
        losses = None
        for share in self._shares(batch):
            rows = torch.tensor([position[k] for k in share])
            local = TensorDict({"row": rows}, batch_size=[len(share)])
            minis = list(make_iterator(local, mini_batch_size=mini // self.dp, epochs=1))
            for mb in minis:
                mb.set_non_tensor("use_dynamic_bsz", False)
                mb.set_non_tensor("micro_batch_size_per_gpu", MICRO)
                prepare_micro_batches(mb)
            losses = losses or [0.0] * len(minis)
            assert len(losses) == len(minis)  # every rank makes the same number of updates
            for j, mb in enumerate(minis):
                # verl's loss at the step's start (ratio 1) over this rank's mini-batch,
                # normalised by the global mini-batch as the engine does, averaged over ranks.
                picked = [int(i) for i in mb["row"]]
                update = self._global_rows(batch, minis, j)
                adv = _padded([data["advantages"][i] for i in picked])
                mask = _padded([data["response_mask"][i] for i in picked]).bool()
                tokens = sum(int(data["response_mask"][i].sum()) for i in update)
                config = SimpleNamespace(
                    clip_ratio=0.2,
                    clip_ratio_low=None,
                    clip_ratio_high=None,
                    get=lambda key, default=None: default,
                    global_batch_info={
                        "dp_size": self.dp,
                        "batch_num_tokens": tokens,
                        "global_batch_size": info["global_batch_size"],
                    },
                )
                zero = torch.zeros_like(adv)
                loss, _ = compute_policy_loss_vanilla(zero, zero, adv, mask, self.mode, config)
                losses[j] += float(loss) / self.dp
        self.updates.append(
            {
                "keys": list(batch.keys),
                "padding": [bool(t.get("is_padding", False)) for t in batch.tags],
                "info": info,
                "advantages": [data["advantages"][i].clone() for i in range(len(batch))],
                "losses": losses,
            }
        )
        return {"metrics": {"mfu": 0.0}}

    def _global_rows(self, batch: Any, minis: list[Any], j: int) -> list[int]:
        # Update j is every rank's j-th mini-batch (verl does not shuffle: actor.shuffle false).
        size = len(batch) // self.dp
        per = len(minis[0])
        return [r * size + j * per + i for r in range(self.dp) for i in range(per)]


def _padded(rows: list[torch.Tensor]) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence([r.float() for r in rows], batch_first=True)


def build(
    tmp_path: Path, tq: Any, dp: int, *extra: str, kwargs: tuple[str, ...] = ()
) -> tuple[Any, ScriptedRollouts, StandInWorkers]:
    from verl.trainer.ppo.v1 import get_trainer_cls

    train = write_parquet(tmp_path / "train.parquet", ROWS, long_every=0)
    overrides = (
        f"actor_rollout_ref.actor.ppo_mini_batch_size={B}",  # one update a step
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={MICRO}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={MICRO}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={MICRO}",
        "actor_rollout_ref.actor.use_kl_loss=true",  # the reference log-probs run too
        "actor_rollout_ref.rollout.calculate_log_probs=false",  # the stand-in returns none
        *extra,
    )
    named = {kv.split("=")[0] for kv in kwargs}
    kw = (
        *(
            kv
            for kv in ("selector=greso", "seed=0", "rollouts=kept")
            if kv.split("=")[0] not in named
        ),
        *kwargs,
    )
    trainer = get_trainer_cls("sync")(config=compose(train, tmp_path, *overrides, kwargs=kw))
    trainer.tokenizer, trainer.processor = build_tokenizer(), None  # no hub model
    trainer._init_dataloader()
    rollouts = ScriptedRollouts(tq, trainer)
    workers = StandInWorkers(tq, dp, trainer.config.actor_rollout_ref.actor.loss_agg_mode)
    trainer.agent_loop_manager = rollouts
    trainer.actor_rollout_wg = trainer.ref_policy_wg = workers
    trainer.ref_in_actor = False
    # Rewards come with the rollouts (rm_scores), as from verl's streaming reward workers.
    trainer.reward_loop_manager = SimpleNamespace(reward_loop_worker_handles=[object()])
    trainer.checkpoint_manager = SimpleNamespace(sleep_replicas=lambda: None)
    trainer.curr_step_profile = False
    return trainer, rollouts, workers


def run_steps(trainer: Any, tq: Any) -> tuple[list[dict[str, float]], list[list[torch.Tensor]]]:
    """Every step of the run through verl's `step`: its metrics, and the advantages verl
    left in TransferQueue after it (verl's own, whatever the actor saw)."""
    metrics, advantages = [], []
    for step in range(1, trainer.total_training_steps + 1):
        trainer.global_steps = step
        logged: dict[str, float] = {}
        batch = trainer.step(logged, timing_raw={})
        after = tq.kv_batch_get(
            keys=batch.keys, partition_id="train", select_fields=["advantages"]
        )["advantages"]
        advantages.append([a.clone() for a in after.unbind()])
        tq.kv_clear(keys=batch.keys, partition_id="train")  # the trainer's end of step
        metrics.append(logged)
    return metrics, advantages


@pytest.mark.parametrize(("dp", "selector"), [(2, "greso"), (4, "skip")])
def test_only_the_kept_rows_reach_the_log_probs_and_the_actors_update(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
    dp: int,
    selector: str,
) -> None:
    start = time.monotonic()
    trainer, rollouts, workers = build(
        tmp_path, transfer_queue, dp, kwargs=(f"selector={selector}",)
    )
    metrics, _ = run_steps(trainer, transfer_queue)
    steps = trainer.total_training_steps
    assert len(rollouts.submitted) == len(workers.updates) == steps == EPOCHS * ROWS // B
    quantum = dp * MICRO
    verl_alone = 0
    for step, (submitted, update) in enumerate(
        zip(rollouts.submitted, workers.updates, strict=True)
    ):
        kept_rows = len(submitted) * N
        real = [k for k, pad in zip(update["keys"], update["padding"], strict=True) if not pad]
        # the rows of the kept groups, every one whole, and nothing else but padding
        groups = [k.split("_")[0] for k in real]
        assert len(set(groups)) == len(submitted) and all(groups.count(g) == N for g in groups)
        assert len(real) == kept_rows
        padding = len(update["keys"]) - kept_rows
        assert 0 <= padding < quantum  # one update a step: under one row quantum
        assert len(update["keys"]) == -(-kept_rows // quantum) * quantum
        assert workers.log_prob_rows[step] == update["keys"] == workers.ref_rows[step]
        assert update["info"]["mini_batch_size"] == len(update["keys"])  # one update
        assert len(update["losses"]) == 1
        verl_alone += -kept_rows % math.lcm(dp, B * N) + kept_rows
        for adv, pad in zip(update["advantages"], update["padding"], strict=True):
            if pad:
                assert float(adv.abs().sum()) == 0.0  # a no-op row: no loss term
        prefix = "curriculum/fewer_rollouts/"
        assert metrics[step][prefix + "trained_rows"] == kept_rows
        assert metrics[step][prefix + "padding_rows"] == padding
    trained = sum(len(u["keys"]) for u in workers.updates)
    generated = sum(len(ids) for ids in rollouts.submitted) * N
    assert generated < steps * B * N == 192
    if selector == "greso":
        assert generated == 160  # the scripted pool's saving, as in test_verl_fewer
    else:  # 4 ranks x micro-batch 2: a step of 1 or 3 groups (4 or 12 rows) pads 4 rows
        assert trained > generated and any(len(ids) % 2 for ids in rollouts.submitted)
    assert trained < verl_alone == steps * B * N  # verl alone pads every step to B x n
    print(
        f"\nverl kept, {selector}, dp={dp}: trained rows {trained} (kept {generated}), "
        f"verl's padding {verl_alone}, uniform {steps * B * N}"
    )
    assert time.monotonic() - start < 300


@pytest.mark.parametrize("loss_scale", ["batch", "kept"])
@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "token-sum"])
def test_the_actors_loss_is_scaled_by_the_share_of_uniforms_rows(
    tmp_path: Path,
    transfer_queue: Any,  # noqa: F811 - the fixture
    loss_scale: str,
    mode: str,
) -> None:
    extra = (f"actor_rollout_ref.actor.loss_agg_mode={mode}", "trainer.total_epochs=2")
    if mode == "token-sum":
        extra += ("actor_rollout_ref.actor.use_kl_loss=false",)  # refused with token-sum
    trainer, rollouts, workers = build(
        tmp_path, transfer_queue, 2, *extra, kwargs=(f"loss_scale={loss_scale}",)
    )
    _, verls = run_steps(trainer, transfer_queue)
    shrunk = 0
    steps = zip(rollouts.submitted, workers.updates, verls, strict=True)
    for submitted, update, verl_advantages in steps:
        kept = len(submitted)
        share = kept / B  # G / B: one update a step
        real = [not pad for pad in update["padding"]]
        adv = [a for a, r in zip(verl_advantages, real, strict=True) if r]
        seen = [a for a, r in zip(update["advantages"], real, strict=True) if r]
        # Hand-computed: verl's vanilla loss at ratio 1 is -mean(A) over the kept tokens
        # (token-mean), -mean over kept rows of each row's token mean (seq-mean-token-mean),
        # -sum(A) (token-sum); batch scales it by G / B (token-sum: already), kept does not.
        if mode == "token-mean":
            base = -float(torch.cat(adv).sum()) / sum(len(a) for a in adv)
        elif mode == "seq-mean-token-mean":
            base = -sum(float(a.mean()) for a in adv) / len(adv)
        else:
            base = -float(torch.cat(adv).sum())
        if mode == "token-sum":
            factor = 1.0 if loss_scale == "batch" else 1 / share
        else:
            factor = share if loss_scale == "batch" else 1.0
        assert update["losses"][0] == pytest.approx(factor * base, abs=1e-6)
        # The actor saw verl's advantages times the factor; verl's are back after the update.
        for a, s in zip(adv, seen, strict=True):
            assert torch.allclose(s, a * factor)
        shrunk += kept < B and any(float(a.abs().sum()) > 0 for a in adv)
    assert shrunk >= 2  # the second epoch skips: the factor is exercised on real signal


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_batch_is_uniforms_gradient_where_the_left_out_groups_are_all_equal(mode: str) -> None:
    # verl's own vanilla loss and agg_loss: 3 kept groups of B = 8 (n = 2, one update a
    # step), with KeptLoss applied, against uniform's step holding the 5 left-out groups as
    # all-equal (advantage 0) rows of the kept rows' mean length. Gradients on log_prob agree.
    from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla

    from frontier_rft.integrations.verl.kept_step import kept_layout, kept_loss

    g, b, n, width = 3, 8, 2, 6
    gen = torch.Generator().manual_seed(0)
    lengths = [2, 6, 4, 4, 3, 5]  # the kept rows' response lengths: mean 4
    kept_mask = torch.tensor([[1.0] * k + [0.0] * (width - k) for k in lengths])
    adv = torch.randn(g * n, 1, generator=gen).expand(-1, width) * kept_mask
    full_mask = torch.cat([kept_mask, torch.tensor([[1.0] * 4 + [0.0] * 2] * ((b - g) * n))])
    full_adv = torch.cat([adv, torch.zeros((b - g) * n, width)])
    old = -torch.rand(b * n, width, generator=gen)
    loss = kept_loss("batch", mode, kept_layout(g * n, (b * n,), 2), b * n)

    def grad(a: torch.Tensor, mask: torch.Tensor, rows: int, gbs: float, f: float) -> Any:
        logp = (old[:rows] + 0.05).clone().requires_grad_(True)
        info = {"dp_size": 1, "batch_num_tokens": None, "global_batch_size": gbs}
        config = SimpleNamespace(
            clip_ratio=0.2,
            clip_ratio_low=None,
            clip_ratio_high=None,
            get=lambda key, default=None: default,
            global_batch_info=info,
        )
        out, _ = compute_policy_loss_vanilla(old[:rows], logp, a * f, mask, mode, config)
        out.backward()
        return logp.grad[: g * n]

    kept = grad(adv, kept_mask, g * n, loss.global_batch_size or g * n, loss.advantage_factor)
    uniform = grad(full_adv, full_mask, b * n, b * n, 1.0)
    assert torch.allclose(kept, uniform, atol=1e-6)
    assert loss.advantage_factor == pytest.approx(g / b)


def test_a_critic_gets_its_own_mini_batch_of_the_same_padded_rows() -> None:
    # verl's critic (GAE) trains on the same padded rows in its own mini-batches: the layout
    # divides both, and _update_critic hands the critic's worker group its size.
    from omegaconf import OmegaConf

    from frontier_rft.integrations.verl.v1_kept import KeptStep

    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {"n": 4},
                "actor": {"ppo_mini_batch_size": 2, "loss_agg_mode": "token-mean"},
            },
            "critic": {"ppo_mini_batch_size": 4},
        }
    )
    sent: dict[str, Any] = {}

    class Trainer:
        use_critic = True

        def __init__(self) -> None:
            self.config = config
            self.critic_wg = SimpleNamespace(train_mini_batch=lambda b: sent.update(b.extra_info))

        def _balance_batch(self, batch: Any, metrics: dict[str, float]) -> Any:
            batch.padded = self._get_required_batch_multiple(2)  # verl asks with its dp size
            return batch

        def _get_required_batch_multiple(self, dp_size: int) -> int:
            raise AssertionError("the kept step answers this")

        def _update_actor(self, batch: Any, metrics: dict[str, float]) -> Any:
            return batch

        def _update_critic(self, batch: Any, metrics: dict[str, float]) -> Any:
            batch.extra_info.update({"mini_batch_size": 16})  # verl's: ppo_mini_batch_size x n
            self.critic_wg.train_mini_batch(batch)
            return batch

    trainer = Trainer()
    step = KeptStep(trainer, "batch", "curriculum/")
    batch = SimpleNamespace(tags=[{}] * 12, extra_info={})  # 3 kept groups of 4
    metrics: dict[str, float] = {}
    trainer._balance_batch(batch, metrics)
    layout = step.layout
    assert layout is not None and layout.updates == (2, 1)  # 12 rows: 8-row and 16-row M
    assert batch.padded == layout.padded == 12 and metrics["curriculum/fewer_rollouts/updates"] == 2
    trainer._update_critic(batch, {})
    assert sent["mini_batch_size"] == 12  # one critic update over the 12 rows, not 16
