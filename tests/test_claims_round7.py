"""The pages quote the GPU facts of `fewer_steps`, read from the ledger's H200 records
(testbed 65008bd2b869, cuda, seeds 40-45), not the CPU regime's forecast."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUDA = ROOT / "benchmarks" / "ledger" / "65008bd2b869" / "cuda"
SEEDS = range(40, 46)


def _record(entry: str, seed: int) -> dict:
    (path,) = (CUDA / entry).glob(f"*/seed{seed}.json.gz")
    with gzip.open(path, "rt") as fh:
        return dict(json.load(fh))


def _final_pass1(rec: dict) -> float:
    return [v for v in rec["columns"]["eval/pass@1"] if v is not None][-1]


def _flat(rel: str) -> str:
    return " ".join((ROOT / rel).read_text(encoding="utf-8").split())


def test_the_gpu_fewer_steps_figures_are_the_ledgers_and_the_pages_quote_them() -> None:
    diffs = [
        _final_pass1(_record("skip-fewer-steps", s)) - _final_pass1(_record("uniform", s))
        for s in SEEDS
    ]
    steps = [_record("skip-fewer-steps", s)["steps"][-1] for s in SEEDS]
    assert f"{sum(diffs) / len(diffs):+.3f}" == "-0.030"
    assert round(sum(steps) / len(steps)) == 50
    for rel in ("README.md", "docs/results/fewer_steps.md", "docs/selectors/fewer_steps.md"):
        page = _flat(rel)
        assert "−0.030 [−0.055, −0.005]" in page, rel
        assert "50 of 64 steps" in page or "50 [49, 51]" in page, rel
        assert "H200" in page and "the informative groups it dropped" in page, rel


def test_the_imported_records_say_which_code_ran_them() -> None:
    codes = {
        _record(e, s)["code"]["commit"][:7] for e in ("uniform", "skip-fewer-steps") for s in SEEDS
    }
    assert codes == {"7030078"}
    ledger_readme = _flat("benchmarks/ledger/README.md")
    assert "`7030078`" in ledger_readme and "`ebc64f4`" in ledger_readme
    step_cost = json.loads((ROOT / "benchmarks/results/step_cost_h200.json").read_text())
    assert step_cost["device_name"] == "NVIDIA H200"
    cell = {(c["rows"], c["length"]): c for c in step_cost["cells"]}

    def step(rows: int) -> float:
        c = cell[(rows, 24)]
        return float(c["generate_s"]["median"] + c["update_s"]["median"])

    assert f"{step(1024) / step(16):.1f}x" == "1.6x"
    page = _flat("benchmarks/results/step_cost_h200.md")
    assert "64x the rows (16 → 1,024) cost 1.6x the seconds" in page


def test_no_page_calls_the_kept_rows_kl_uniforms_in_expectation() -> None:
    """The rows a kept step leaves out had more KL per token (kept_kl.md): the KL and entropy
    means over the kept rows are near uniform's, not equal to it in expectation."""
    for rel in ("docs/integrations/verl.md", "src/frontier_rft/integrations/verl/kept_step.py"):
        text = _flat(rel)
        assert "whose expectation is uniform's" not in text, rel
        assert "not a random sample" in text and "kept_kl.md" in text, rel
