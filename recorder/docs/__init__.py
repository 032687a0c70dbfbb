"""Docs: transcripts as documentation.

`render` (exchanges as Markdown blocks with elisions, in the seed guide's shape), `sync`
(`recorder docs sync|check`: blocks in Markdown pages kept in step with their transcripts),
`export` (curl scripts and httpyac/JetBrains `.http` files other clients run).
"""
