"""verl's kept step without verl: how far it pads, how its loss is scaled, what it refuses."""

from __future__ import annotations

import math

import pytest

from frontier_rft.integrations.verl.auto import auto_rollouts, kept_blockers
from frontier_rft.integrations.verl.config import VerlSamplerConfig
from frontier_rft.integrations.verl.kept_step import (
    KeptLayout,
    kept_layout,
    kept_loss,
    kept_loss_problems,
    pg_agg_mode,
    rows_quantum,
)
from frontier_rft.selectors.registry import SELECTORS

# auto's warnings need a selector auto would keep kept (planted: conftest's
# `skip_kept_to_two_epochs`, skip as measured up to 2 epochs on the CPU testbed alone).
pytestmark = pytest.mark.usefixtures("skip_kept_to_two_epochs")


def verls_padding(rows: int, dp: int, mini_rows: int) -> int:
    """verl 0.9.1's `_balance_batch` padding: to a multiple of lcm(dp, ppo_mini_batch_size x n)."""
    multiple = math.lcm(dp, mini_rows)
    return -rows % multiple


def test_a_kept_step_pads_to_its_workers_need_not_to_the_full_batch() -> None:
    # B = 8 prompts, n = 4, ppo_mini_batch_size = 8 (one update a step: M = 32 rows), 8 ranks.
    layout = kept_layout(3 * 4, (32,), quantum=8)
    assert layout == KeptLayout(rows=12, updates=(1,), padded=16)
    assert layout.padding == 4 and layout.mini_rows() == 16
    assert verls_padding(12, 8, 32) == 20  # verl alone pads back to uniform's 32 rows
    # Two updates a step (ppo_mini_batch_size 4: M = 16): 5 groups keep verl's 2 updates.
    layout = kept_layout(5 * 4, (16,), quantum=8)
    assert (layout.updates, layout.padded, layout.mini_rows()) == ((2,), 32, 16)
    layout = kept_layout(5 * 4, (16,), quantum=2)
    assert (layout.updates, layout.padded, layout.mini_rows()) == ((2,), 20, 10)
    # A full step is uniform's, unpadded; one group on 8 ranks pads to 8 rows.
    assert kept_layout(32, (32,), 8).padding == 0
    assert kept_layout(4, (32,), 8) == KeptLayout(rows=4, updates=(1,), padded=8)
    # With a critic of another mini-batch, both models' splits divide the padded rows.
    layout = kept_layout(36, (16, 32), 4)
    assert layout.updates == (3, 2) and layout.padded % (4 * 6) == 0
    assert layout.padded // 3 % 4 == 0 and layout.padded // 2 % 4 == 0


def test_a_layout_never_pads_beyond_verls_own() -> None:
    # 4 ranks x micro-batch 3 = 12 rows a quantum, M = 16 (3 does not divide 16 / 4):
    # 16 rows would pad to 24, verl's own multiple lcm(4, 16) keeps them at 16.
    assert kept_layout(16, (16,), 12, verl_multiple=16) == KeptLayout(16, (1,), 16)
    assert kept_layout(8, (16,), 12, verl_multiple=16) == KeptLayout(8, (1,), 12)


@pytest.mark.parametrize("rows", range(1, 65))
@pytest.mark.parametrize(("mini", "quantum"), [(32, 8), (16, 2), (8, 8), (24, 4), (12, 6)])
def test_every_layout_keeps_verls_updates_and_pads_under_one_quantum_each(
    rows: int, mini: int, quantum: int
) -> None:
    layout = kept_layout(rows, (mini,), quantum)
    k = layout.updates[0]
    assert k == math.ceil(rows / mini)  # verl's own number of updates a step
    assert layout.mini_rows() % quantum == 0 and layout.padded == k * layout.mini_rows()
    assert 0 <= layout.padding < k * quantum
    assert layout.padding <= verls_padding(rows, quantum, mini) or mini % quantum
    capped = kept_layout(rows, (mini,), quantum, verl_multiple=math.lcm(quantum, mini))
    assert capped.padding <= verls_padding(rows, quantum, mini)
    assert capped.padded % capped.updates[0] == 0


def test_rows_quantum_is_ranks_times_the_fixed_micro_batches() -> None:
    config = {
        "actor_rollout_ref": {
            "actor": {"ppo_micro_batch_size_per_gpu": 2, "use_dynamic_bsz": False},
            "rollout": {"log_prob_micro_batch_size_per_gpu": 3},
            "ref": {"log_prob_micro_batch_size_per_gpu": 3},
        }
    }
    assert rows_quantum(config, 4) == 4 * 6
    config["actor_rollout_ref"]["actor"]["use_dynamic_bsz"] = True  # token-budget micro-batches
    assert rows_quantum(config, 4) == 4 * 3
    assert rows_quantum({}, 2) == 2


def test_loss_factor_is_the_share_of_uniforms_rows_by_hand() -> None:
    # 3 of B = 8 groups, n = 4, one update a step: c = 12 / 32 = 3 / 8 = G / B.
    one = kept_layout(12, (32,), 8)
    assert kept_loss("batch", "token-mean", one, 32).advantage_factor == pytest.approx(3 / 8)
    assert kept_loss("kept", "token-mean", one, 32).advantage_factor == 1.0
    assert kept_loss("batch", "token-mean", one, 32).global_batch_size is None
    # seq-mean: verl divides by global_batch_size, here the 12 kept rows of the one update.
    seq = kept_loss("batch", "seq-mean-token-mean", one, 32)
    assert (seq.advantage_factor, seq.global_batch_size) == (pytest.approx(3 / 8), 12.0)
    assert kept_loss("kept", "seq-mean-token-sum-norm", one, 32).global_batch_size == 12.0
    # token-sum already counts the left-out groups as zero: batch is 1, kept is B / G.
    assert kept_loss("batch", "token-sum", one, 32).advantage_factor == 1.0
    assert kept_loss("kept", "token-sum", one, 32).advantage_factor == pytest.approx(8 / 3)
    # 5 of 8 groups, ppo_mini_batch_size 4 (M = 16): 2 updates of 16 nominal rows each,
    # 20 trained: c = 20 / 32 = G / B again, on each of the two updates.
    two = kept_layout(20, (16,), 2)
    assert kept_loss("batch", "token-mean", two, 16).advantage_factor == pytest.approx(5 / 8)
    assert kept_loss("batch", "seq-mean-token-sum", two, 16).global_batch_size == 10.0
    # 3 of 8 groups with ppo_mini_batch_size 4: one update of 12 rows where uniform's has 16.
    short = kept_loss("batch", "token-mean", kept_layout(12, (16,), 2), 16)
    assert short.advantage_factor == pytest.approx(3 / 4)


def actor(**fields: object) -> dict[str, object]:
    return {"actor_rollout_ref": {"actor": fields}}


def test_what_no_factor_fixes_is_refused_in_one_line() -> None:
    assert kept_loss_problems({}, "batch") == []  # verl's defaults: token-mean, vanilla
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
        config = actor(loss_agg_mode=mode, use_kl_loss=True, loss_scale_factor=1024)
        assert kept_loss_problems(config, "batch") == []
    (line,) = kept_loss_problems(actor(loss_agg_mode="token-sum", use_kl_loss=True), "batch")
    assert "token-sum and use_kl_loss" in line and "token-mean" in line and "\n" not in line
    (line,) = kept_loss_problems(actor(loss_agg_mode="token-sum", entropy_coeff=0.01), "kept")
    assert "entropy_coeff" in line
    (line,) = kept_loss_problems(actor(policy_loss={"loss_mode": "clip_cov"}), "batch")
    assert "not linear in the advantages" in line and "loss_scale: kept" in line
    # Without a factor (kept with token-mean, batch with token-sum) any policy loss trains.
    assert kept_loss_problems(actor(policy_loss={"loss_mode": "clip_cov"}), "kept") == []
    clip_sum = actor(policy_loss={"loss_mode": "kl_cov"}, loss_agg_mode="token-sum")
    assert kept_loss_problems(clip_sum, "batch") == []
    assert "use loss_scale: batch" in kept_loss_problems(clip_sum, "kept")[0]
    (line,) = kept_loss_problems(actor(loss_agg_mode="token-avg"), "batch")
    assert "not one of verl 0.9.1's" in line


def test_auto_is_full_where_the_loss_cannot_be_scaled_and_says_why() -> None:
    config = {
        "trainer": {"use_v1": True, "total_epochs": 2},
        **actor(policy_loss={"loss_mode": "dro"}),
    }
    mode, why, warn = auto_rollouts(config, selector=SELECTORS["skip"], shadows=None, legacy=False)
    assert (mode, warn) == ("full", True) and "loss_mode=dro" in why
    mode, _, _ = auto_rollouts(
        config, selector=SELECTORS["skip"], shadows=None, legacy=False, loss_scale="kept"
    )
    assert mode == "kept"
    assert kept_blockers(config, legacy=False, loss_scale="kept") == []


def test_loss_scale_defaults_to_the_measured_batch_and_is_checked() -> None:
    assert VerlSamplerConfig(batch_size=4).loss_scale == "batch"
    assert VerlSamplerConfig(batch_size=4, loss_scale="kept").loss_scale == "kept"
    with pytest.raises(ValueError, match="loss_scale must be batch"):
        VerlSamplerConfig(batch_size=4, loss_scale="mean")


def test_check_config_names_the_refusal_before_launch(tmp_path: object) -> None:
    from frontier_rft.integrations.verl.preflight import check_verl_config

    config = {
        "trainer": {
            "use_v1": True,
            "total_epochs": 2,
            "v1": {
                "trainer_mode": "sync",
                "sampler": {
                    "custom_sampler": {
                        "path": "pkg://frontier_rft.integrations.verl.v1",
                        "name": "FrontierReplayBuffer",
                    },
                    "sampler_kwargs": {"rollouts": "kept", "selector": "skip"},
                },
            },
        },
        "data": {"train_batch_size": 8},
        **actor(loss_agg_mode="token-sum", use_kl_loss=True),
    }
    report = check_verl_config(config)
    assert any("token-sum and use_kl_loss" in p for p in report.problems), report.problems


# ---------------------------------------------------------------------------- SkyRL


def test_skyrls_factor_is_each_mini_batchs_share_of_a_full_one_by_hand() -> None:
    from frontier_rft.integrations.skyrl.config import kept_advantage_factors

    # K = 3 kept of B = 4, policy_mini_batch_size 2: mini-batches of 2 and 1 prompts.
    assert kept_advantage_factors([2, 1], 2, "batch") == [1.0, 0.5]
    assert kept_advantage_factors([2, 1], 2, "kept") == [1.0, 1.0]
    # One mini-batch a step (policy_mini_batch_size = train_batch_size = 8): G / B.
    assert kept_advantage_factors([3], 8, "batch") == [3 / 8]


def test_skyrl_refuses_batch_with_a_loss_no_factor_scales() -> None:
    from frontier_rft.integrations.skyrl.config import kept_loss_problem, skyrl_auto_rollouts
    from frontier_rft.integrations.skyrl.preflight import check_skyrl_config

    assert kept_loss_problem(None, "batch") is None  # SkyRL's default: regular
    assert kept_loss_problem("clip_cov", "kept") is None
    line = kept_loss_problem("clip_cov", "batch")
    assert line is not None and "frontier.loss_scale=kept" in line and "\n" not in line
    mode, why, warn = skyrl_auto_rollouts(
        selector=SELECTORS["skip"],
        shadows=None,
        fully_async=False,
        dynamic_sampling=None,
        epochs=2,
        policy_loss_type="kl_cov",
    )
    assert (mode, warn) == ("full", True) and "kl_cov" in why
    config = {
        "frontier": {"rollouts": "kept"},
        "trainer": {"algorithm": {"policy_loss_type": "clip_cov"}},
    }
    assert any("not linear" in p for p in check_skyrl_config(config).problems)
    config["frontier"]["loss_scale"] = "kept"
    assert not any("not linear" in p for p in check_skyrl_config(config).problems)


@pytest.mark.parametrize("estimator", ["gae", "reinforce_plus_plus", "remax"])
def test_kept_needs_group_relative_advantages(estimator: str) -> None:
    """Under gae (verl's default) an all-equal group still trains: kept is refused, auto is
    full and says why; grpo and rloo are kept."""
    config = {"trainer": {"use_v1": True, "total_epochs": 2}, "algorithm": {}}
    config["algorithm"]["adv_estimator"] = estimator
    (line,) = kept_loss_problems(config, "batch")
    assert f"adv_estimator={estimator}" in line and "grpo" in line and "\n" not in line
    mode, why, warn = auto_rollouts(config, selector=SELECTORS["skip"], shadows=None, legacy=False)
    assert (mode, warn) == ("full", True) and estimator in why
    for group_relative in ("grpo", "rloo"):
        config["algorithm"]["adv_estimator"] = group_relative
        assert kept_loss_problems(config, "batch") == []
        assert (
            auto_rollouts(config, selector=SELECTORS["skip"], shadows=None, legacy=False)[0]
            == "kept"
        )


# The normalisations verl's policy losses really use (issue 72, item 1).


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_sapo_is_normalised_as_the_seq_mean_it_always_is(mode: str) -> None:
    # verl's sapo calls agg_loss with seq-mean-token-mean whatever loss_agg_mode says: its
    # global_batch_size must be the kept rows (not verl's nominal M, which would scale the
    # step by c twice under batch), and the factor is seq-mean's.
    layout = kept_layout(12, (32,), 4)
    assert pg_agg_mode(mode, "sapo") == "seq-mean-token-mean"
    batch = kept_loss("batch", mode, layout, 32, "sapo")
    assert batch.advantage_factor == pytest.approx(12 / 32) and batch.global_batch_size == 12.0
    kept = kept_loss("kept", mode, layout, 32, "sapo")
    assert kept.advantage_factor == 1.0 and kept.global_batch_size == 12.0


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "token-sum"])
def test_geo_mean_is_normalised_as_the_sum_it_is(mode: str) -> None:
    # verl's geo_mean takes torch.mean over each micro-batch, backpropagated one micro-batch
    # at a time: a sum over an update's rows, so batch needs no factor and kept 1/c, as token-sum.
    layout = kept_layout(12, (32,), 4)
    assert pg_agg_mode(mode, "geo_mean") == "token-sum"
    assert kept_loss("batch", mode, layout, 32, "geo_mean").advantage_factor == 1.0
    kept = kept_loss("kept", mode, layout, 32, "geo_mean")
    assert kept.advantage_factor == pytest.approx(32 / 12)
    # The KL and entropy terms of a seq-mean mode still divide by the kept rows.
    expected = 12.0 if mode.startswith("seq-mean") else None
    assert kept.global_batch_size == expected
    # vanilla is unchanged: the mode's own normalisation.
    assert kept_loss("batch", mode, layout, 32).advantage_factor == pytest.approx(
        1.0 if mode == "token-sum" else 12 / 32
    )


def test_geo_mean_with_dynamic_batches_and_norm_without_a_factor_are_refused() -> None:
    (line,) = kept_loss_problems(actor(loss_agg_mode="seq-mean-token-sum-norm"), "batch")
    assert "loss_scale_factor" in line and "\n" not in line
    assert kept_loss_problems(actor(loss_agg_mode="seq-mean-token-sum-norm"), "kept") == [line]
    fixed = actor(loss_agg_mode="seq-mean-token-sum-norm", loss_scale_factor=2048)
    assert kept_loss_problems(fixed, "batch") == []
    geo = actor(policy_loss={"loss_mode": "geo_mean"}, use_dynamic_bsz=True)
    (line,) = kept_loss_problems(geo, "batch")
    assert "geo_mean" in line and "use_dynamic_bsz" in line and "\n" not in line
    assert kept_loss_problems(actor(policy_loss={"loss_mode": "geo_mean"}), "batch") == []


def test_the_gpg_estimator_is_refused_its_alpha_is_batch_wide() -> None:
    config = {"trainer": {"use_v1": True, "total_epochs": 2}, "algorithm": {"adv_estimator": "gpg"}}
    (line,) = kept_loss_problems(config, "batch")
    assert "adv_estimator=gpg" in line and "alpha" in line and "\n" not in line
    assert kept_loss_problems(config, "kept") == [line]
    mode, why, warn = auto_rollouts(config, selector=SELECTORS["skip"], shadows=None, legacy=False)
    assert (mode, warn) == ("full", True) and "gpg" in why


@pytest.mark.parametrize("estimator", ["gae", "reinforce++"])
def test_skyrl_kept_needs_group_relative_advantages(estimator: str) -> None:
    from frontier_rft.integrations.skyrl.config import kept_loss_problem, skyrl_auto_rollouts
    from frontier_rft.integrations.skyrl.preflight import check_skyrl_config

    line = kept_loss_problem(None, "kept", estimator)
    assert line is not None and f"advantage_estimator={estimator}" in line and "\n" not in line
    for fine in (None, "grpo", "rloo", "maxrl"):
        assert kept_loss_problem(None, "batch", fine) is None
    mode, why, warn = skyrl_auto_rollouts(
        selector=SELECTORS["skip"],
        shadows=None,
        fully_async=False,
        dynamic_sampling=None,
        epochs=2,
        advantage_estimator=estimator,
    )
    assert (mode, warn) == ("full", True) and estimator in why
    config = {
        "frontier": {"rollouts": "kept"},
        "trainer": {"algorithm": {"advantage_estimator": estimator}},
    }
    assert any("not group-relative" in p for p in check_skyrl_config(config).problems)
    config["trainer"]["algorithm"]["advantage_estimator"] = "grpo"
    assert not any("group-relative" in p for p in check_skyrl_config(config).problems)
