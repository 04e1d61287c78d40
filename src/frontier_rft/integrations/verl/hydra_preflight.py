"""The frontier-rft pre-flight inside verl: a Hydra callback that checks the composed config
before verl's `main` runs, so before Ray and the workers start.

Add it to the `hydra:` section of the YAML you launch verl with (the files in examples/verl
have it):

```yaml
hydra:
  callbacks:
    frontier_preflight:
      _target_: frontier_rft.integrations.verl.hydra_preflight.FrontierPreflight
```

or on the command line:
`+hydra.callbacks.frontier_preflight._target_=frontier_rft.integrations.verl.hydra_preflight.FrontierPreflight`.
A config with mistakes ends the run with one line per mistake on stderr and exit status 2; a
valid one goes on, with one line on stderr saying what `rollouts: auto` will be.
Needs Hydra and OmegaConf, which verl brings.
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from frontier_rft.integrations.verl.preflight import check_verl_config

__all__ = ["FrontierPreflight"]


def _plain(config: Any) -> dict[str, Any]:
    """The composed config as plain Python, interpolations resolved where they resolve."""
    try:
        out = OmegaConf.to_container(config, resolve=True)
    except Exception:  # an interpolation that fails here fails in verl too, with its own message
        out = OmegaConf.to_container(config, resolve=False)
    return dict(out) if isinstance(out, dict) else {}


class FrontierPreflight(Callback):  # type: ignore[misc]
    """On job start: check the frontier-rft part of verl's config; exit 2 with every mistake,
    else say what `rollouts: auto` will be, the shadows an unset `shadows` follows, the
    currency the run pays in and the least-regret start (`verl.currency`)."""

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        plain = _plain(config)
        plain.pop("hydra", None)
        report = check_verl_config(plain)
        if report.problems:
            sys.stderr.write(report.render("frontier-rft pre-flight") + "\n")
            raise SystemExit(2)  # not an exception: Hydra would print its traceback
        for choice in report.choices + report.shadows:
            sys.stderr.write(f"frontier-rft pre-flight: {choice}\n")
        for line in report.currency:  # as check-config says it
            sys.stderr.write(f"frontier-rft pre-flight: currency: {line}\n")
        for line in report.start:  # where to start, from the curve alone
            sys.stderr.write(f"frontier-rft pre-flight: {line}\n")
