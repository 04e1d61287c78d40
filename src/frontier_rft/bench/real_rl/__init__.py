"""The real-RL benchmark (`frontier bench-rl`): every entry trained by the reference GRPO
trainer from one start model, on paired seeds, against uniform.

- `testbed`: the named testbeds (a table) and the entries they compare; `start_models`: the
  start model and each seed's start state; `runs`: one run's spec, its worker and the pool
  that runs many; `benchmark`: the driver (what the ledger lacks run, the paired seeds
  read back); `machine`: what the runs train on; `ledger`: the committed record of every
  finished run; `report` and `page`: the paired metrics, effect checks and results page;
  `calibration`: a testbed calibrated on uniform; `verdicts`: what real RL measured, that a
  simulated table is read against;
- `ab`: a user's own A/B of two arms' logs (`frontier ab compare`); `countdown_demo`: the
  one-seed walk-through of `frontier demo-countdown`;
- `finished/`: the library code of finished experiments, each run by its script under
  benchmarks/ (`first_epoch_ceiling`, `judge_check`, `kept_kl`).
"""
