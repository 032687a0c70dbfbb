"""The transcript store: `transcript_store.TranscriptStore` writes `NN-slug.http` files, with
its helpers: `routing` (which file a request goes to), `filetext` (a file's text as held),
`numbering` (a new file's number claimed on disk), `sharing` (a file other recorders write
too), `scrubbing` (secrets learned while recording, scrubbed after the fact), `leftovers`
(what killed recorders left), `modes` (record modes new / replace / once)."""
