"""Adapters for the trainers people already run: TRL, verl, SkyRL, Ray, tinker-cookbook.

Each module needs its optional extra (`pip install frontier-rft[trl]`, `[ray]`, `[verl]`; SkyRL
and tinker-cookbook are installed by name, docs/integrations/skyrl.md and tinker.md) and is
imported explicitly (`from frontier_rft.integrations import trl`); importing this package
imports none of them.
"""
