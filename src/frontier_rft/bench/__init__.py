"""Selector benchmarks: selectors compared against uniform on paired seeds, in families.

- `simulation`: every selector on a simulated learner (frontier_rft.simulation), and the
  simulator fitted to and checked against the committed real-RL results;
- `real_rl`: every selector trained by the reference GRPO trainer (frontier_rft.training)
  from one start model (`frontier bench-rl`): testbeds, runner, ledger, report, calibration,
  verdicts; a user's own A/B of two logged arms;
- `overhead`: every selector's step time and memory held to the floor its class declares;
- `service`: the sharded selector service's throughput and chaos benchmark on local Ray;
- `metrics`: the one TTB / BSF / bootstrap implementation all use, as do the scripts under
  benchmarks/ (whose shared flags and output files are `scripts`).

A script under benchmarks/ parses its flags, calls one of these and writes its results.

It stands above what it runs (simulation, training, reporting); docs/architecture.md.
"""
