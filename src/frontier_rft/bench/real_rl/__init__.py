"""The real-RL benchmark (`frontier bench-rl`): every entry trained by the reference GRPO
trainer from one start model, on paired seeds, against uniform.

- `testbed`: the frozen testbeds and the entries they compare; `runner`: training the runs;
  `ledger`: the committed record of every finished run; `report` and `page`: the paired
  metrics, effect checks and results page; `calibration`: a testbed calibrated on uniform;
  `verdicts`: what real RL measured, that a simulated table is read against;
- `ab`: a user's own A/B of two arms' logs (`frontier ab compare`); `countdown_demo`: the
  one-seed walk-through of `frontier demo-countdown`; `judge_check`: METIS's judge measured
  on a policy; `kept_kl`: a kept step's KL and entropy terms against uniform's;
  `first_epoch_ceiling`: what a perfect skip could save in uniform's first epoch (each run
  by its script under benchmarks/).
"""
