"""How many hypothesis examples a property test draws, by tier.

Every `@settings(max_examples=examples(N))` names the CI count N. The profile in
HYPOTHESIS_PROFILE scales it: "ci" (the default, `make test`) and "dev" draw N, "check" (`make
check`, the edit loop) a tenth (at least 2), "deep" (`make test-deep`) ten times N."""

from __future__ import annotations

import os

SCALE = {"ci": 1.0, "dev": 1.0, "check": 0.1, "deep": 10.0}


def profile() -> str:
    """The hypothesis profile this run uses (HYPOTHESIS_PROFILE, default "ci")."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if name not in SCALE:
        raise ValueError(f"HYPOTHESIS_PROFILE {name!r}: must be one of {', '.join(SCALE)}")
    return name


def examples(n: int) -> int:
    """The example count for a test whose CI count is n, under this run's profile."""
    return max(2, round(n * SCALE[profile()])) if n >= 2 else n
