"""The sharded selector service on a local Ray: `ray_sharded` (its settings, throughput grid
and chaos modes) and `ray_sharded_run` (the runs and their report)."""
