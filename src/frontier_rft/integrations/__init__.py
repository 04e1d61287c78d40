"""Adapters for the trainers people already run: TRL, verl, Ray, tinker-cookbook.

Each module needs its optional extra (`pip install frontier-rft[trl]`, `[ray]`, `[verl]`;
`tinker` needs tinker-cookbook installed) and is imported explicitly (`from
frontier_rft.integrations import trl`); importing this package imports none of them.
"""
