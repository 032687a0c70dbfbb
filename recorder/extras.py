"""Whether the bundled kit can start here: the a2a-sdk it needs, read from what is installed.

The core installs beside whatever a2a-sdk a user's own agent pins (the official helloworld
sample pins 1.1.0); the kit (`recorder kit`, and `play`, `learn` and the pytest plugin without
an agent) is built on the a2a-sdk's 1.3 server API, the `[kit]` extra. An older SDK imports,
then fails deep inside the kit's set-up with a `TypeError`: so the entry points that start the
kit ask `kit_sdk_problem` first, from the installed distribution's metadata
(`importlib.metadata`), before anything of the kit or the SDK is imported.
"""

from __future__ import annotations

import importlib.metadata
import re

__all__ = ["KIT_EXTRA", "KIT_SDK", "kit_sdk_problem", "release"]

KIT_EXTRA = "pip install 'a2a-recorder[kit]'"
KIT_SDK = "a2a-sdk>=1.3,<2"
"""The kit extra's a2a-sdk range, as pyproject.toml's `kit` extra writes it (a test holds
the two alike)."""
_LOWEST = (1, 3)
_BELOW = (2,)
_RELEASE = re.compile(r"\d+(?:\.\d+)*")


def release(version: str) -> tuple[int, ...] | None:
    """The release numbers a version string starts with (`1.1.0` -> (1, 1, 0); `1.3.0rc1`
    -> (1, 3, 0)), or None when it starts with none."""
    found = _RELEASE.match(version.strip().removeprefix("v"))
    return tuple(int(part) for part in found.group().split(".")) if found else None


def kit_sdk_problem(installed: str | None = None) -> str | None:
    """Why the bundled kit cannot start with the installed a2a-sdk, in one line naming the
    version found, the range needed and the extra; None when it can. `installed`: the
    version to judge (default: the installed distribution's, from its metadata)."""
    if installed is None:
        try:
            installed = importlib.metadata.version("a2a-sdk")
        except importlib.metadata.PackageNotFoundError:
            return f"the bundled kit needs {KIT_SDK}, and no a2a-sdk is installed ({KIT_EXTRA})"
    numbers = release(installed)
    if numbers is not None and _LOWEST <= numbers < _BELOW:
        return None
    return (
        f"the bundled kit needs {KIT_SDK}, found a2a-sdk {installed} ({KIT_EXTRA}; in a venv "
        "of its own if your agent pins that SDK)"
    )
