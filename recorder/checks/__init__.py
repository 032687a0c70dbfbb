"""Checks of answers whose wording varies (LLM-backed agents): one room.

- `base`: what a check is made of (`Check`, `CheckContext`, `Outcome`, `CheckType`), which
  the registry and the checks it holds import (so none imports the other back);
- `vocabulary`: the checks (contains, regex, length, json, similar, language, judge …), one
  registry, each a pass/fail and a reason (pure);
- `entries`: a rules file's `checks` key read (which checks hold at which place);
- `judges`: the `judge` check (the user's callable or command);
- `language`: the `language` check (py3langid, optional);
- `facts`: what held in every wording of a varying answer, the checks `learn` proposes.
"""
