"""What a replay found, and how it is told: `results` (the verdict on each exchange, file and
run, and the Listener a report implements), `terminal` (the terminal report and JUnit XML),
`recap` (the closing recap), `verbose` (-v: the replies' diff), `json_report`
(--json-report)."""
