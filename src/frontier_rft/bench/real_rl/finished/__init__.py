"""The library code of finished real-RL experiments: each module serves one script under
benchmarks/ that answered one question once (benchmarks/README.md, "Finished") and its tests,
and stays runnable beside the result it produced. Nothing standing imports from here.

- `first_epoch_ceiling`: what a perfect skip could save in uniform's first epoch;
- `judge_check`: METIS's judge measured on a policy (benchmarks/metis_judge_check.py);
- `kept_kl`: a kept step's KL and entropy terms against uniform's.
"""
