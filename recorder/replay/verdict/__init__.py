"""The verdict on one exchange, pure: no socket, no file, no thread (`tests/test_layout.py`).

`state.ReplayState` is its face (prepare, compare, bless); `carry` makes recorded ids live in
a request, `fastpath` decides most replies on their text, `walk` the rest on their trees,
`compare` holds status, headers, bodies and event streams, `checked` the places a rules
file's checks decide, `strings` the agent's address and strings with placeholders, `listings`
what other files' state adds to a listing, `bless` what --update writes back, `live` a reply
as it came, `diff` the Mismatch and its formatting."""
