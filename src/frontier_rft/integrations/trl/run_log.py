"""What a frontier-rft TRL run logs and records, as a mixin of its trainer
(`FrontierTrainerMixin`): the selector's and the adapter's metrics joined to TRL's logs
(`log`), the JSONL file of every key, the budget beside each evaluation, the lines said at the
run's end, and the run's reward functions for `frontier shadow replay`.
"""

from __future__ import annotations

import math
import os
from typing import Any

from frontier_rft.integrations.batch_settings import DEFAULT_LENGTH, plan_lines, plan_run
from frontier_rft.integrations.currency import no_curve, plan_curve
from frontier_rft.integrations.trl.fewer_config import trl_optimizer_step
from frontier_rft.integrations.trl.run_state import FrontierRun
from frontier_rft.integrations.trl.start_lines import trl_start_lines
from frontier_rft.metrics_log import JsonlLogger, curriculum_metrics
from frontier_rft.shadow.run_rewards import write_run_rewards
from frontier_rft.step_cost.planner import NoiseTerms

__all__ = ["FrontierRunLog"]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class FrontierRunLog:
    """The logging half of `FrontierTrainerMixin` (put after it in the bases)."""

    # What the trainer provides: TRL's attributes and the run's state.
    args: Any
    model: Any
    state: Any
    accelerator: Any
    reward_weights: Any
    frontier_run: FrontierRun

    def frontier_metrics(self) -> dict[str, float]:
        """The selector's metrics plus the adapter's own (`trl/...`, and `dapo/...` with
        dynamic sampling), unprefixed."""
        run = self.frontier_run
        dynamic = run.driver
        out = run.selector.metrics() if dynamic is None else dynamic.sampler.metrics()
        sampler, counters = run.sampler, run.counters
        out["trl/generations"] = float(counters["generations"])
        out["trl/rollouts_delivered"] = float(counters["rollouts"])
        out["trl/unscorable_dropped"] = float(counters["unscorable"])
        out["trl/chunks_selected"] = float(sampler.chunks_selected)
        out["trl/feedback_lag"] = float(sampler.feedback_lag)
        out["trl/self_embedding_refreshes"] = float(counters["embedding_refreshes"])
        if dynamic is not None:
            out.update(dynamic.metrics())
        out.update(run.shadows.metrics())
        return out

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        is_eval = any(key.startswith("eval_") for key in logs)
        run = self.frontier_run
        config = run.config
        if is_eval:
            # The A/B's x-axes beside the held-out scores, in every report_to backend.
            logs.update(self._frontier_budget())
        elif self.model.training:
            metrics = self.frontier_metrics()
            # TRL's loggers reject NaN (JSON); the JSONL file keeps every key, NaN as null.
            finite = {k: v for k, v in metrics.items() if math.isfinite(v)}
            logs.update(curriculum_metrics(finite, config.metrics_verbosity, config.metrics_prefix))
            if config.metrics_verbosity == "summary":  # the filter's own summary, when on
                own = () if run.driver is None else run.driver.kind.summary
                dapo = {k: v for k, v in finite.items() if k in own}
                logs.update(curriculum_metrics(dapo, "all", config.metrics_prefix))
                shadow = {k: v for k, v in finite.items() if k.startswith("shadow/")}
                logs.update(curriculum_metrics(shadow, "all", config.metrics_prefix))
            if self.accelerator.is_main_process:
                self._frontier_logger().log(
                    {
                        **curriculum_metrics(metrics, "all", config.metrics_prefix),
                        **self._frontier_trl_cost(),
                    },
                    step=int(self.state.global_step),
                )
        super().log(logs, start_time)  # type: ignore[misc]
        if is_eval and self.accelerator.is_main_process:
            # After TRL's log, which adds its eval_reward and eval_rewards/<func>/mean.
            held_out = {k: float(v) for k, v in logs.items() if _is_number(v)}
            self._frontier_logger().log(held_out, step=int(self.state.global_step))

    def _frontier_trl_cost(self) -> dict[str, float]:
        """TRL's own cost figures of the steps being logged (`num_tokens`: tokens seen so far,
        `step_time`: seconds a step) and the noise meter's `noise/...`, as TRL logs them, for
        frontier_metrics.jsonl (`frontier plan-batch` reads it); none that this TRL does not
        keep."""
        kept = getattr(self, "_metrics", {}).get("train", {})
        out = {}
        noise = [k for k in kept if k.startswith("noise/")]  # the meter's, for plan-batch
        for key in ("num_tokens", "step_time", *noise):
            values = kept.get(key) or []
            if values:
                out[key] = float(sum(values) / len(values))
        return out

    def _frontier_run_lines(self) -> list[str]:
        """What the run saved, said once at its end: the completions a kept step left out
        (rollouts: kept, screen), the steps a run ended by passes took (rollouts:
        fewer_steps), and the selector's own estimate of its loss (skip-audit)."""
        lines = []
        run = self.frontier_run
        driver = run.driver
        if driver is not None and driver.kind.end_line:  # what its steps generated
            generations = int(run.counters["generations"])
            whole = generations * int(self.args.generation_batch_size)
            spent = int(driver.values()["rollouts"])
            share = f", {spent / whole:.2f}x" if whole else ""
            lines.append(
                driver.kind.end_line.format(
                    spent=spent, generations=generations, share=share, whole=whole
                )
            )
        sampler = run.sampler
        if sampler.passes is not None:
            lines.append(
                f"rollouts: fewer_steps walked {sampler.passes_trained:.2f} passes over the "
                f"prompts in {int(self.state.global_step)} steps (TRL planned "
                f"{int(self.state.max_steps)} for num_train_epochs={sampler.passes:g})"
            )
        if summary := run.selector.run_summary():  # e.g. skip-audit's estimated loss
            lines.append(summary)
        return lines + self._frontier_batch_plan()

    def _frontier_step(self) -> tuple[int, int, int, int] | str:
        """(prompts, rollouts, processes, micro-batch) of an optimizer step
        (`trl_optimizer_step`), or why its rows are not whole groups."""
        processes = int(self.accelerator.num_processes)
        step = trl_optimizer_step(vars(self.args), processes)
        return step if isinstance(step, str) else (step[0], step[1], processes, step[2])

    def _frontier_start_plan(self) -> list[str]:
        """The least-regret start from the curve alone, in TRL's settings, said at start-up as
        `frontier check-config trl` says it (`trl_start_lines`): the prompts a step to start at
        before the meter has read anything, from this step's up to the pool, on the curve the
        run's currency was read from; none where no measured curve applies."""
        return trl_start_lines(
            vars(self.args),
            self.frontier_run.currency,
            processes=int(self.accelerator.num_processes),
            max_prompts=int(self.frontier_run.selector.pool.num_tasks),
        )

    def _frontier_batch_plan(self) -> list[str]:
        """The batch planner's plan from the noise meter's EMA, in TRL's settings, on the curve
        the run's currency was read from (`frontier plan-batch` says it alike from the log);
        none where the meter measured no step, or no measured curve applies."""
        noise = getattr(self, "frontier_noise", None)
        if noise is None or noise.ema.count == 0:
            return []
        curve = plan_curve(self.frontier_run.currency)
        if curve is None:
            return [no_curve(self.frontier_run.currency, "batch plan")]
        step = self._frontier_step()
        if isinstance(step, str):
            return [f"batch plan: none, {step}"]
        prompts, k, processes, per_device = step
        try:
            plan = plan_run(
                NoiseTerms.from_ema(noise.ema),
                curve,
                length=int(self.args.max_completion_length or DEFAULT_LENGTH),
                prompts=prompts,
                rollouts=k,
                max_prompts=int(self.frontier_run.selector.pool.num_tasks),
            )
        except ValueError as exc:  # the meter's terms define no noise scale yet
            return [f"batch plan: none ({exc})"]
        lr = float(self.args.learning_rate)
        return plan_lines(plan, "trl", lr=lr, processes=processes, per_device=per_device)

    def _frontier_budget(self) -> dict[str, float]:
        """What training has spent so far, under the metrics prefix: the rollouts sent to
        the selector, and the distinct prompts trained (groups with mixed rewards, as far
        as the selector has folded them in)."""
        run = self.frontier_run
        prefix = run.config.metrics_prefix
        out = {prefix + "trl/rollouts_delivered": float(run.counters["rollouts"])}
        trained = run.selector.metrics().get("tasks/distinct_trained", math.nan)
        if math.isfinite(trained):  # TRL's loggers reject NaN
            out[prefix + "tasks/distinct_trained"] = float(trained)
        return out

    def _frontier_logger(self) -> JsonlLogger:
        run = self.frontier_run
        if run.jsonl is None:
            path = run.config.jsonl_path or os.path.join(
                self.args.output_dir, "frontier_metrics.jsonl"
            )
            run.jsonl = JsonlLogger(path)
        return run.jsonl

    def _frontier_record_rewards(self) -> None:
        """Write the run's reward functions (TRL's names: its completions table's reward
        columns), their weights and the shadows' seed to the output dir, for `frontier shadow
        replay`."""
        names = getattr(self, "reward_func_names", None)  # TRL's, GRPO's and RLOO's alike
        if names is not None and self.accelerator.is_main_process:
            # TRL's float32 weights, each as the shortest decimal that is it (0.1, not 0.1000...1)
            weights = [float(str(w)) for w in self.reward_weights.detach().cpu().numpy()]
            config = self.frontier_run.config  # the live shadows' seed, as __init__ gave them
            seed = self.args.seed if config.selector_seed is None else config.selector_seed
            write_run_rewards(self.args.output_dir, names, weights, seed=int(seed))
