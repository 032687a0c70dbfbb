"""Checks of answers whose wording varies (LLM-backed agents): one room.

- `base`: what a check is made of (`Check`, `CheckContext`, `Outcome`, `CheckType`), which
  the registry and the checks it holds import (so none imports the other back);
- `vocabulary`: the checks (contains, regex, length, json, similar, language, judge …), one
  registry, each a pass/fail and a reason (pure);
- `entries`: a rules file's `checks` key read (which checks hold at which place);
- `judges`: the `judge` check (the user's callable or command);
- `language`: the `language` check (py3langid, optional);
- `facts`: what held in every wording of a varying answer, the checks `learn` proposes;
- the checks that ask the user's own model (an OpenAI-compatible endpoint): `model_judge`
  (`judge: {model: …}`), `embedding` (`similar: {method: embedding}`), over `openai_compat`
  (the API), `model_session` (what a run's model checks share), `model_rules` (the rules'
  model checks bound to it), `verdict_cache` (answers on disk), `model_usage` (their cost in
  the reports), `model_proposals` (what `learn` proposes with a model).
"""
