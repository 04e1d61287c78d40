"""Adapters for the trainers people already run: TRL, verl, SkyRL, Ray.

Each module needs its optional extra (`pip install frontier-rft[trl]`, `[ray]`, `[verl]`; SkyRL
is installed by name, docs/integrations/skyrl.md)
and is imported explicitly (`from frontier_rft.integrations import trl`); importing
this package imports none of them.
"""
