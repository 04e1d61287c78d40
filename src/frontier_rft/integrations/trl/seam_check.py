"""Whether the installed TRL has the private seam the step driver wraps
(`_generate_and_score_completions(self, inputs)` called from `_prepare_inputs`) and, for
screening, reads `num_generations` at each call. Checked before the model loads, on the
trainer class (`check_wrappable`, `check_screenable`), and by `frontier check-config trl` on
TRL's own GRPOTrainer read from its source (`source_seam_problem`, without importing TRL);
each refusal is one line whose advice turns off the step sampler being checked."""

from __future__ import annotations

import ast
import inspect

from frontier_rft.integrations.source_scan import module_file, parsed
from frontier_rft.integrations.trl.driver_kinds import KINDS
from frontier_rft.integrations.trl.dynamic_config import TESTED_TRL
from frontier_rft.sampling.dynamic_sampling import DynamicSampling

__all__ = [
    "check_screenable",
    "check_wrappable",
    "installed_trl",
    "seam_problem",
    "source_seam_problem",
    "trl_version",
]


def installed_trl() -> str | None:
    """The installed TRL distribution's version, from its metadata without importing it (TRL
    imports torch: seconds); None where TRL is not installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return None


def trl_version() -> str:
    """The installed TRL's version ("unknown" when it has none)."""
    try:
        import trl

        return str(trl.__version__)
    except (ImportError, AttributeError):
        return "unknown"


def check_wrappable(trainer_cls: type, kind: str = DynamicSampling.kind) -> None:
    """ValueError (one line) when this TRL's GRPOTrainer does not have the private seam the
    step driver wraps: `_generate_and_score_completions(self, inputs)` called from
    `_prepare_inputs`; its advice turns off the step sampler `kind` (`KINDS`)."""
    version = trl_version()
    fix = _fix(kind)
    method = getattr(trainer_cls, "_generate_and_score_completions", None)
    prepare = getattr(trainer_cls, "_prepare_inputs", None)
    if not callable(method) or not callable(prepare):
        raise ValueError(
            f"TRL {version}'s GRPOTrainer has no _generate_and_score_completions / "
            f"_prepare_inputs to wrap; {fix}"
        )
    params = list(inspect.signature(method).parameters)
    if params != ["self", "inputs"]:
        raise ValueError(
            f"TRL {version}'s GRPOTrainer._generate_and_score_completions takes "
            f"({', '.join(params)}), not (self, inputs); {fix}"
        )
    try:
        source = inspect.getsource(prepare)
    except (OSError, TypeError):  # no source (a frozen install): the output check still runs
        return
    if "_generate_and_score_completions" not in source:
        raise ValueError(_no_call(version, kind))


def check_screenable(trainer_cls: type) -> None:
    """ValueError (one line) unless this TRL's GRPOTrainer reads its `num_generations` at
    each generation call (`_generate` and `_generate_and_score_completions`), which
    screening sets to k for its first call."""
    sources = []
    # _generate draws k completions a prompt; _generate_and_score_completions groups the
    # rewards by self.num_generations for the screen's k-group advantages: both must read it.
    for name in ("_generate", "_generate_and_score_completions"):
        # TRL's own method, not an override (ours, or a user's subclass) that calls it
        owner = next(
            (
                c
                for c in trainer_cls.__mro__
                if c.__module__.split(".")[0] == "trl" and name in vars(c)
            ),
            trainer_cls,
        )
        method = getattr(owner, name, None)
        try:
            sources.append(inspect.getsource(method) if callable(method) else "")
        except (OSError, TypeError):  # no source (a frozen install): trust the tested release
            return
    if not all("self.num_generations" in source for source in sources):
        raise ValueError(_no_screen(trl_version()))


def seam_problem(trainer_cls: type, kind: str, screen: int = 0) -> str | None:
    """Why `trainer_cls` lacks the seam the step sampler `kind` wraps (and, with a `screen`,
    the per-call number of generations), in one line; None: it has it."""
    try:
        check_wrappable(trainer_cls, kind)
        if screen:
            check_screenable(trainer_cls)
    except ValueError as exc:
        return str(exc)
    return None


def source_seam_problem(kind: str, screen: int = 0) -> str | None:
    """`seam_problem` of the trainer the adapter builds on the installed TRL, read from TRL's
    GRPOTrainer source without importing it: its `_prepare_inputs` calls
    `_generate_and_score_completions` (the adapter's own takes `(self, inputs)`) and, with a
    `screen`, its `_generate` and `_generate_and_score_completions` read
    `self.num_generations`. None: it has the seam, or its source cannot be followed (no TRL,
    a method inherited from elsewhere): the run checks it at start-up."""
    path = module_file("trl.trainer.grpo_trainer")
    try:
        tree = parsed(path) if path is not None else None
        text = path.read_text(encoding="utf-8").splitlines() if path is not None else []
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    cls = next(
        (n for n in (tree.body if tree else ()) if isinstance(n, ast.ClassDef)
         and n.name == "GRPOTrainer"),
        None,
    )  # fmt: skip
    if cls is None:
        return None
    own = {
        n.name: "\n".join(text[n.lineno - 1 : n.end_lineno])
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    names = ("_prepare_inputs", *(("_generate", "_generate_and_score_completions") * bool(screen)))
    if not all(name in own for name in names):
        return None  # inherited: not followed here
    version = installed_trl() or "unknown"
    if "_generate_and_score_completions" not in own["_prepare_inputs"]:
        return _no_call(version, kind)
    if screen and not all("self.num_generations" in own[name] for name in names[1:]):
        return _no_screen(version)
    return None


def _fix(kind: str) -> str:
    """The advice of a seam refusal: a tested TRL, or the step sampler `kind` turned off."""
    row = KINDS[kind]
    return (
        f"{row.label} is tested with TRL {', '.join(TESTED_TRL)}: install one "
        f"(pip install 'trl=={TESTED_TRL[-1]}') or {row.off}"
    )


def _no_call(version: str, kind: str) -> str:
    return (
        f"TRL {version}'s GRPOTrainer._prepare_inputs no longer calls "
        f"_generate_and_score_completions; {_fix(kind)}"
    )


def _no_screen(version: str) -> str:
    return (
        f"TRL {version}'s GRPOTrainer does not take the number of generations per "
        f"call from self.num_generations, which screening needs (tested with TRL "
        f"{', '.join(TESTED_TRL)}): install it, or set screen: 0"
    )
