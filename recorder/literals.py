"""`{{NAME}}` placeholders and literal `{{` in a transcript's text (pure).

A transcript's `{{NAME}}` (`PLACEHOLDER`: a name in double braces, spaces inside allowed) is
a variable: the redactor writes one where a secret was, the player fills it from the
environment, the exports turn it into their own variables. Text a client or an agent sent
that reads as one (a template in a reviewed diff: `Hello {{user_name}}`) is written escaped
where it stands, so that it is never read as a variable:

- in JSON text (a JSON body, an event's JSON data, a gRPC message), its first brace as the
  JSON escape `\\u007b`: `"Hello \\u007b{user_name}}"`. Every JSON reader reads the same
  string (the agent the player sends it to, the player's comparison, the stand-in's matching),
  and no `.http` client (JetBrains HTTP Client, VS Code REST Client, httpyac) sees `{{`;
- anywhere else (a header value, the request target, a body or event data that is no JSON,
  an event's id), as httpyac escapes one: `Hello \\{\\{user_name\\}\\}` (`literal_text`
  reads it back before the text is sent, served or shown). A text that itself holds
  `\\{\\{NAME\\}\\}` outside JSON reads back as `{{NAME}}`: that spelling is the escape.

Only what would read as a placeholder is escaped (`{{ x y }}` or `{{1}}` is no placeholder,
and stays as it came). The recorder escapes (`recorder.redact.Redactor`) before it writes
its own placeholders, which stay placeholders: `keep` names them where a body is written
anew after its secrets were taken out. A literal spelled as one of those in the same body
(`{{TOKEN}}` beside a redacted `token` member) reads as that placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container

__all__ = [
    "PLACEHOLDER",
    "escape_json_text",
    "escape_text",
    "has_escaped",
    "literal_text",
    "rewrite",
]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""`{{NAME}}` (spaces inside the braces allowed), group 1 the name: what the redactor
writes, what the player fills from the environment and `recorder export` turns into a
variable of its dialect."""

# a literal `{{NAME}}` escaped outside JSON: `\{\{NAME\}\}` (group 1: what is inside)
_ESCAPED = re.compile(r"\\\{\\\{(\s*[A-Za-z_][A-Za-z0-9_]*\s*)\\\}\\\}")
_NOTHING: frozenset[str] = frozenset()


def escape_text(text: str, keep: Container[str] = _NOTHING) -> str:
    """`text` (no JSON) with each `{{NAME}}` whose NAME is not in `keep` written
    `\\{\\{NAME\\}\\}`."""
    if "{{" not in text:
        return text

    def escape(match: re.Match[str]) -> str:
        if match.group(1) in keep:
            return match.group()
        inside = match.group()[2:-2]
        return "\\{\\{" + inside + "\\}\\}"

    escaped = PLACEHOLDER.sub(escape, text)
    return text if escaped == text else escaped


def escape_json_text(text: str, keep: Container[str] = _NOTHING) -> str:
    """JSON text with the first brace of each `{{NAME}}` whose NAME is not in `keep` written
    `\\u007b` (in JSON text `{{` only stands inside a string, where the escape is the same
    character)."""
    if "{{" not in text:
        return text

    def escape(match: re.Match[str]) -> str:
        if match.group(1) in keep:
            return match.group()
        return "\\u007b" + match.group()[1:]

    escaped = PLACEHOLDER.sub(escape, text)
    return text if escaped == text else escaped


def has_escaped(text: str) -> bool:
    """Whether `text` (no JSON) holds an escaped literal (`\\{\\{NAME\\}\\}`)."""
    return "\\{\\{" in text and _ESCAPED.search(text) is not None


def literal_text(text: str) -> str:
    """`text` (no JSON) as it was sent: each `\\{\\{NAME\\}\\}` as `{{NAME}}`."""
    if "\\{\\{" not in text:
        return text
    return _ESCAPED.sub(lambda m: "{{" + m.group(1) + "}}", text)


def rewrite(text: str, literal: Callable[[str], str], variable: Callable[[str], str]) -> str:
    """`text` with each piece between placeholders written by `literal` (it still holds its
    escapes: `literal_text` gives what was sent) and each placeholder's NAME by `variable`:
    how an export writes transcript text in its dialect."""
    parts: list[str] = []
    position = 0
    for match in PLACEHOLDER.finditer(text):
        parts.append(literal(text[position : match.start()]))
        parts.append(variable(match.group(1)))
        position = match.end()
    parts.append(literal(text[position:]))
    return "".join(parts)
