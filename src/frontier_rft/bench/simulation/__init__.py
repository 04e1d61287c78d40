"""The simulated benchmark and the simulator checked against real RL.

- `benchmark`: every entry on every seed of a simulated learner, paired against uniform (the
  `results.json` of `frontier simulate / compare / demo`);
- `vs_real`, `fit`, `compare`: the simulator fitted to the committed real-RL results, compared
  with them, and its predictions checked against later real runs;
- `bots_prompts_gap`, `bots_plugin_forms`: why prompts-only BOTS trails BOTS with references.
"""
