"""Selector benchmarks: selectors compared against uniform on paired seeds.

- `simulated`: every selector on a simulated learner (frontier_rft.simulation), many seeds
  in parallel, the `results.json` of `frontier simulate / compare / demo`;
- `real_rl`, `testbed`: every selector trained by the reference GRPO trainer
  (frontier_rft.training) from one start model (`frontier bench-rl`), with its report and
  calibration (`real_rl_report`, `real_rl_calibration`);
- `metrics`: the one TTB / BSF / bootstrap implementation both use, as do the scripts under
  benchmarks/ (whose shared flags and output files are `scripts`);
- `real_rl_verdicts`: what real RL measured, that a simulated table is read against;
- `sim_vs_real`, `sim_fit`, `sim_compare`: the simulator fitted to the committed real-RL
  results, compared with them, and its predictions checked against later real runs;
- `overhead` (with `overhead_world`, `overhead_report`): every selector's step time and
  memory held to the floor its class declares;
- `judge_check`: METIS's judge measured on a policy; `countdown_demo`: the one-seed Countdown
  walk-through of `frontier demo-countdown`;
- `ray_sharded` (with `ray_sharded_run`): the sharded selector service's chaos benchmark;
- `bots_prompts_gap`, `bots_plugin_forms`: why prompts-only BOTS trails BOTS with references.

A script under benchmarks/ parses its flags, calls one of these and writes its results.

It stands above what it runs (simulation, training, reporting); docs/architecture.md.
"""
