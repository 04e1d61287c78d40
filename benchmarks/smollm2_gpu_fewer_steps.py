"""Rebuild the report of the H200 `skip-fewer-steps` runs (SmolLM2-135M, seeds 40-45) from the
run ledger (testbed 65008bd2b869, device class cuda).

Those runs came from a staging tree whose testbed set `checkpoint_every=100000` (no
checkpoints), which no `frontier bench-rl` flag sets; everything else is `--scale
gpu-smollm2`. This script applies that one field and then runs the CLI's own `--report-only`
path, so the report is the project's reader over the committed records:

    python benchmarks/smollm2_gpu_fewer_steps.py [--out DIR]

Writes DIR/smollm2_gpu_fewer_steps{.md,.json,_full.json,*.png} (default benchmarks/results),
each naming this script as its command: tests/test_bench_ledger_reports.py rebuilds it so, as it
rebuilds every report of the ledger by its own command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import frontier_rft.bench.real_rl.testbed as testbed_module
from frontier_rft.bench.real_rl.report import write_json
from frontier_rft.cli.main import main

_testbed = testbed_module.testbed


def _as_recorded(scale: str, *args: object, **kwargs: object) -> testbed_module.Testbed:
    tb = _testbed(scale, *args, **kwargs)
    return dataclasses.replace(tb, train=dataclasses.replace(tb.train, checkpoint_every=100000))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    out = parser.parse_args().out
    testbed_module.testbed = _as_recorded  # type: ignore[assignment]
    flags = (
        "bench-rl --scale gpu-smollm2 --device cuda --model "
        "/tmp/stage/SmolLM2-135M-Instruct.Q4_1.gguf --lr 1e-5 --selectors "
        "uniform,skip-fewer-steps --no-effects --seeds 40-45 --steps 64 --reward-log "
        "--name smollm2_gpu_fewer_steps --report-only --no-progress"
    )
    code = main([*flags.split(), "--out", out])
    command = "python benchmarks/smollm2_gpu_fewer_steps.py"  # what rebuilds it, not the CLI's
    full = Path(out) / "smollm2_gpu_fewer_steps_full.json"
    if code == 0 and full.is_file():
        data = json.loads(full.read_text(encoding="utf-8"))
        data["command"] = command
        write_json(full, data, compact=True)
        page = Path(out) / "smollm2_gpu_fewer_steps.md"
        lines = page.read_text(encoding="utf-8").splitlines()
        lines = [f"Command: `{command}`  " if ln.startswith("Command:") else ln for ln in lines]
        page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sys.exit(code)
