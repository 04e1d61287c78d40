"""ZIP-RC-Lite: reward and remaining-length prediction from reserved vocabulary logits.

`spec` (numpy only) fixes the reserved slice's layout and its readouts; `head` (torch) adds
the rows to a Hugging Face causal LM, unties and clones its output head and trains only the
reserved rows; `calibration` scores held-out rollouts; `decoder` runs the live adaptive
decoder. See docs/inference/ziprc.md.
"""

from frontier_rft.inference.spec import ZipRCSpec

__all__ = ["ZipRCSpec"]
