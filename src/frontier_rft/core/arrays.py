"""The array types the library passes around, named once for its type hints."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["F64", "I64"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
