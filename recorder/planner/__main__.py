"""`python -m recorder.planner`: regenerate `transcripts/` (what `make record` runs)."""

import os

# (as the `recorder` command: grpcio's INFO lines, a connection's end, are not the planner's)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from recorder.planner.run import main

raise SystemExit(main())
