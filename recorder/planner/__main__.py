"""`python -m recorder.planner`: regenerate `transcripts/` (what `make record` runs)."""

import os
import sys

from recorder.extras import kit_sdk_problem

# (as the `recorder` command: grpcio's INFO lines, a connection's end, are not the planner's)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

# the planner starts the kit: an older a2a-sdk imports, then fails inside the kit's set-up
# with a TypeError traceback, so it is asked before anything of the kit or the SDK is imported
_problem = kit_sdk_problem()
if _problem is not None:
    print(f"planner: {_problem}", file=sys.stderr)
    raise SystemExit(2)

from recorder.planner.run import main  # noqa: E402

raise SystemExit(main())
