"""Selector benchmarks: selectors compared against uniform on paired seeds.

- `simulated`: every selector on a simulated learner (frontier_rft.simulation), many seeds
  in parallel, the `results.json` of `frontier simulate / compare / demo`;
- `real_rl`, `testbed`: every selector trained by the reference GRPO trainer
  (frontier_rft.training) from one start model (`frontier bench-rl`), with its report and
  calibration (`real_rl_report`, `real_rl_calibration`);
- `metrics`: the one TTB / BSF / bootstrap implementation both use, as do the scripts under
  benchmarks/ (whose shared flags and output files are `scripts`);
- `real_rl_verdicts`: what real RL measured, that a simulated table is read against.

It stands above what it runs (simulation, training, reporting); docs/architecture.md.
"""
