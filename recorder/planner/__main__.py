"""`python -m recorder.planner`: regenerate `transcripts/` (what `make record` runs)."""

from recorder.planner.run import main

raise SystemExit(main())
