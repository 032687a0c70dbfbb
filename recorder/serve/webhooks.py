"""What serve matches of a request that registers a push config (pure): not its url.

The url of a push config is the client's webhook, its own (another port, another path each
run): `without_urls` blanks it in a copy of the recorded and the live body before they are
matched; the live one is what `recorder.serve.deliveries` delivers to.
"""

from __future__ import annotations

import copy
from typing import Any

from recorder.bindings.push_configs import config_objects
from recorder.format.model import Request

__all__ = ["without_urls"]


def without_urls(value: Any, request: Request) -> Any:
    """`value` (a request body spelled as `request`'s) with its push configs' urls blank (a
    copy; pure): what serve matches of a request that registers one."""
    if not isinstance(value, dict):
        return value  # (a sentinel such as NOT_JSON must stay itself: no copy)
    copied = copy.deepcopy(value)
    for config in config_objects(request.method, request.target, copied):
        config["url"] = ""
    return copied
