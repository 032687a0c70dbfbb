"""Test-wide settings.

Hypothesis: on CI (`CI` set, as `.ci/run` runs) the examples are derived from each test's name
(`derandomize`), so a green main stays green for the same code; locally they are random, so
every developer run explores new inputs (and found real parser bugs that way).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
