"""Rebuild every committed real-RL report that names the run ledger, from the ledger alone.

    .venv/bin/python scripts/rebuild_ledger_reports.py [NAME_full.json ...]

Runs each report's own `frontier bench-rl` command with `--report-only` (no runs directory,
no model) into a scratch folder and copies its JSON and markdown over the committed ones,
keeping the committed command (the command that made the report, not this rebuild's). The
figures are left as they are (a page's new section draws none). Use it after a change to
what a report shows; tests/test_bench_ledger_reports.py checks that every page rebuilds.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from frontier_rft.bench.real_rl.report import write_json
from frontier_rft.cli.main import main as frontier

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def rebuild(full_name: str) -> None:
    full_path = RESULTS / full_name
    full = json.loads(full_path.read_text(encoding="utf-8"))
    argv = shlex.split(full["command"])
    stem = full_name.removesuffix("_full.json")
    with tempfile.TemporaryDirectory() as tmp:
        out, runs = Path(tmp) / "out", Path(tmp) / "no-runs"
        flags = ["--report-only", "--out", str(out), "--runs", str(runs), "--no-progress"]
        if argv[0] == "python":  # a script that runs the CLI's report (its docstring says why)
            script = [sys.executable, *argv[1:], "--out", str(out)]
            failed = subprocess.run(script, cwd=REPO, check=False).returncode != 0
        else:
            failed = frontier([*argv[1:], *flags]) != 0
        if failed:
            raise SystemExit(f"{full_name}: its command failed to rebuild")
        again = json.loads((out / full_name).read_text(encoding="utf-8"))
        again["command"] = full["command"]
        write_json(full_path, again, compact=True)
        (RESULTS / f"{stem}.json").write_text((out / f"{stem}.json").read_text("utf-8"), "utf-8")
        committed = (RESULTS / f"{stem}.md").read_text(encoding="utf-8").splitlines()
        command = next((ln for ln in committed if ln.startswith("Command:")), None)
        page = (out / f"{stem}.md").read_text(encoding="utf-8").splitlines()
        if command is not None:
            page = [command if ln.startswith("Command:") else ln for ln in page]
        (RESULTS / f"{stem}.md").write_text("\n".join(page) + "\n", encoding="utf-8")


def main(names: list[str]) -> int:
    if not names:
        names = sorted(
            p.name
            for p in RESULTS.glob("*_full.json")
            if json.loads(p.read_text(encoding="utf-8")).get("ledger")
        )
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name}", flush=True)
        rebuild(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
