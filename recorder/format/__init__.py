"""The transcript and its `.http` format: the model (`model`: Request, Response, SseEvent,
Exchange, Transcript; `jsonbody`: a body's canonical JSON text), the SSE decoder (`sse`), and
the grammar's two halves (`httpread`: text to model; `httpfile`: model to text, and `splice`).
Pure values and text, no I/O."""
