"""The ledger's entry definitions and testbed digests are pinned: moving TrainConfig's step
sampler settings into one name and one config (issue 46) must not re-key any ledger entry."""

from __future__ import annotations

import pytest

from frontier_rft.bench.real_rl import entries, ledger
from frontier_rft.bench.real_rl import testbed as bed

# Computed on the code before the change (bffa362). An entry's definition does not depend on
# the scale, so one table serves every scale; UNFIT: the entries that do not fit a scale.
ENTRY_DIGESTS: dict[str, str] = {
    "uniform": "61328573",
    "prioritized": "fea6cf1e",
    "dots": "44e8d374",
    "bots": "ed0ac89a",
    "sec": "ae7fede7",
    "frontier": "dc235c28",
    "pcl": "6af0870d",
    "metis": "2ed1e71c",
    "greso": "ffd721f2",
    "skip": "75c35c03",
    "dapo": "e40d7cb3",
    "dapo-adaptive": "90519073",
    "greso-dapo": "2e115df3",
    "skip-dapo": "0d9b074d",
    "greso-alloc": "9b647176",
    "greso-alloc-lean": "90c8ccd4",
    "uniform-n4": "c0947663",
    "greso-alloc-lean-long": "b740b2fc",
    "uniform-n4-long": "e9e79e27",
    "greso-alloc-pilot": "29ba2d8b",
    "greso-kept": "a8e2889d",
    "greso-kept-mean": "0c3e8286",
    "skip-kept": "03ddc064",
    "skip-kept-unpadded": "875d60c4",  # new with pad_rows (issue 71 item 2)
    "skip-kept-backfill": "1ea27749",  # new with backfill (issue 62 item 4)
    "scalerl": "5ae3cb09",  # added after the change (entries new with the scalerl selector)
    "scalerl-kept": "ae410e85",
    "skip-eager-kept": "9ab010a6",  # new with the skip-eager selector (issue 62)
    "skip-eager-kept-f10": "f9348eab",
    "skip-predict-kept": "5552bed9",  # new with the skip-predict selector (issue 62)
    "skip-predict-kept-w50": "a32c8ca2",
    "skip-predict-kept-w50-backfill": "6b6bd73b",  # predictor with backfill (issue 62 item 6)
    "predict-only-kept-w50": "599f2e97",  # the predictor alone (issue 62 item 6)
    "skip-predict-kept-w50-rescue": "6ac7dad5",  # predictor with rescue (issue 62 item 3)
    "skip-audit-kept": "6288d6b1",  # new with the skip-audit selector (issue 70 item 3)
    "skip-predict-audit-kept-w50-backfill": "62824358",
    "skip-fewer-steps": "74f1f377",  # new with fewer_steps (issue 71 item 1)
    "skip-audit-fewer-steps": "626b533e",
    "screen4": "0e3b92c6",
    "greso-kept-screen4": "8fd51b15",
    "uniform-shadows": "a1cf821d",
    "pilot-commit": "6a1723fb",
    "cgrpo": "b44189a9",  # new with the cgrpo step sampler (issue 70 item 4): its spec
    "bots-epoch": "9a194b99",
    "prioritized-epoch": "6ea02ec4",
    "bots-rho0": "b2238cda",
    "metis-lam1": "de8a539d",
    "frontier-r0.05": "a4b3bd4c",
    "frontier-r0.15": "ab30639c",
    "uniform-b32": "841b0e04",  # steps of more rows (issue 81): the digests their records hold
    "uniform-b48": "0a8058e6",
    "uniform-b64": "da162b95",
    "uniform-b128": "16546ca5",
    "uniform-auto": "f49a02d5",  # the batch planner acting (issue 89 item 5): new
    "uniform-auto-lr1": "a7519769",  # the planner without its lr rule (issue 89 item 6): new
    "uniform-auto-start": "909b3442",  # the planner's least-regret start (issue 89 item 6): new
    "uniform-auto-start-lr1": "242b81e7",  # the start with the rate kept (issue 89 item 6): new
    "uniform-auto-cpu": "f0c34a12",  # the planner priced on the CPU, rate kept (issue 89): new
    "uniform-auto-cpu-adam": "1c899aac",  # its plans read the noise in Adam's geometry: new
    "uniform-k16": "42262a75",  # a step's size by K at uniform-b32's rows (issue 89 item 6): new
    "uniform-k32": "69255b31",
    "dapo-onecall": "861c7bf4",
    "dapo-onecall-backfill": "ba1a4ec9",  # the probe of issue 90 item 7: new
    "pcl-b64": "68f35038",
    "uniform-hard8": "32b6e83a",  # larger groups for prompts predicted hard (issue 82)
}

TESTBED_DIGESTS: dict[str, str] = {
    "standard": "95e789cb0d16",
    "gpu": "95e789cb0d16",
    "fast": "cebabb1e33c3",  # new (issue 70 item 1)
    "fast-nucleus": "bfb0aef89a53",  # new (issue 70 item 1): fast, top-p 0.9 at T 1.525
    "fast-format": "9ce0bba6df80",  # new (issue 70 item 1): a warm start 80% unformatted
    "fast-format-lr4": "a633e2cc481f",  # new (issue 70 item 1): fast-format at lr 4e-4
    "full": "3529b387de83",
    "toy": "d32ca8b7aea7",
    "gpu-smollm2": "9a3c8a5ed72f",
    "toy-smollm2": "a80291e1bcbf",
}

_LARGE = frozenset(
    {
        "uniform-b48",
        "uniform-b64",
        "uniform-b128",
        "pcl-b64",
        "uniform-auto",
        "uniform-auto-lr1",
        "uniform-auto-start",
        "uniform-auto-start-lr1",
        "uniform-auto-cpu",
        "uniform-auto-cpu-adam",
    }
)
"""Steps of more prompts than the toy pools hold."""
UNFIT: dict[str, frozenset[str]] = {
    "toy": _LARGE,
    "toy-smollm2": frozenset({"screen4", "greso-kept-screen4", "uniform-shadows", "uniform-b32"})
    | _LARGE,
}


def _pinned(scale: str) -> dict[str, str | None]:
    """What the old code gave on `scale`: its testbed digest, then each entry's definition
    digest (None where the entry does not fit the scale), in the entries' order."""
    out: dict[str, str | None] = {"testbed": TESTBED_DIGESTS[scale]}
    out.update({k: None if k in UNFIT.get(scale, ()) else v for k, v in ENTRY_DIGESTS.items()})
    return out


@pytest.mark.parametrize("scale", bed.SCALES)
def test_entry_definitions_and_testbed_digests_are_pinned(scale: str) -> None:
    tb = bed.testbed(scale)
    got: dict[str, str | None] = {"testbed": ledger.testbed_digest(tb)}
    for entry in entries.MAIN_ENTRIES + entries.EFFECT_ENTRIES:
        try:
            config = tb.run_config(entry, 0)
        except ValueError:
            got[entry.label] = None
            continue
        got[entry.label] = ledger.definition_digest(
            ledger.entry_definition(config, entry.own_train())
        )
    assert got == _pinned(scale)
