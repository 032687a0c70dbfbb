"""`python -m llm_stack model|tools [--port N] [--seed N] [--api-key KEY]`: one server of
the stack, until interrupted (with `tests/` on `PYTHONPATH`). Prints `URL` on its first line."""

from __future__ import annotations

import argparse
import contextlib
import threading

from llm_stack import start_model, start_tools


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m llm_stack")
    parser.add_argument("server", choices=["model", "tools"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", default=None)
    options = parser.parse_args()
    if options.server == "model":
        started = start_model(options.seed, api_key=options.api_key, port=options.port)
    else:
        started = start_tools(api_key=options.api_key, port=options.port)
    with started as running:
        suffix = "/v1" if options.server == "model" else "/mcp"
        print(running.url + suffix, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
