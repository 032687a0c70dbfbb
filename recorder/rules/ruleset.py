"""Rules: what a replay treats as generated, ignored, unordered or secret. A value, not a global.

The A2A defaults are data: `recorder/default_rules.yaml` (read it for what each key means and why
each default is what it is). `load_rules(path)` reads a user file with `yaml.safe_load` and merges
it over the defaults, key by key:

- a list key takes a list (replaces the default) or `{add: [...], remove: [...]}` (edits it);
- a mapping key takes a mapping merged over the default; a `null` value removes an entry
  (`secret_headers` and `secret_fields` also take a list of names: placeholders are derived,
  `x-api-key` -> `X_API_KEY`);
- secrets: the default `secret_fields` (the A2A push config's `token` and `credentials`, and
  `api_key`, `apikey`, `access_token`, `refresh_token`, `client_secret`, `password`, `secret`)
  are secret in JSON bodies, query strings and form bodies, in any case. A rules file adds a
  name with `secret_fields: [session_key]` or `{session_key: SESSION_KEY}`, and makes a default
  one plain again with `null`: `secret_fields: {token: null}` (any case: `Token: null` too);
  `secret_headers: {cookie: null}` does the same for a header;
- a boolean key takes a boolean;
- `checks` (`recorder.checks.entries`) takes a list of places and the checks that hold there; a
  user file's are added to the defaults' (none).

Unknown keys, wrong types, bad JSONPaths and bad regular expressions raise `RulesError` naming the
file and the key.
"""

from __future__ import annotations

import difflib
import os
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

from recorder.bindings import jsonrpc
from recorder.checks.entries import CheckEntry, CheckRulesError, check_warnings, read_checks
from recorder.errors import RulesError
from recorder.jsonpath import JsonPathError, PathMatcher, parse_path
from recorder.rules.assembly import assembled_in, scope_of
from recorder.rules.kinds import VALUE_KINDS

__all__ = [
    "DEFAULT_RULES",
    "Rules",
    "load_rules",
    "placeholder_name",
    "rules_from_text",
    "rules_over",
    "rules_warnings",
]

_KIND = re.compile(r"^[a-z][a-z0-9_]*$")


def placeholder_name(name: str) -> str:
    """`"x-api-key"` -> `"X_API_KEY"`: the `{{NAME}}` a secret is written as."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()


def _frozen_map(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


def _status_path(path: str) -> str:
    """An error path of the JSON envelopes as it reads in a bare google.rpc.Status (a failed
    gRPC call's body): `$.error.message` -> `$.message`; one not under `$.error` as it is."""
    for prefix in ("$.error.", "$.error["):
        if path.startswith(prefix):
            return "$" + path[len("$.error") :]
    return path


@dataclass(frozen=True)
class Rules:
    """What a replay treats as generated, ignored, unordered or secret (see default_rules.yaml)."""

    generated_fields: Mapping[str, str] = field(default_factory=dict, hash=False)
    """member name -> alias kind (`contextId` -> `id`, `timestamp` -> `time`)."""
    generated_fields_beside: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    """member name -> sibling members that make it generated (`id` beside `contextId`)."""
    generated_paths: Mapping[str, str] = field(default_factory=dict, hash=False)
    """JSONPath -> alias kind."""
    generated_shapes: Mapping[str, str] = field(default_factory=dict, hash=False)
    """alias kind -> regular expression matched anywhere, inside strings too."""
    loose_kinds: frozenset[str] = frozenset()
    """Kinds whose recorded and live values need not map one-to-one (timestamps)."""
    ignored_paths: tuple[str, ...] = ()
    unordered_paths: tuple[str, ...] = ()
    compare_error_message: bool = False
    error_message_paths: tuple[str, ...] = ()
    """The free-text places of errors, left out unless `compare_error_message`."""
    ignored_headers: frozenset[str] = frozenset()
    """Lower-case names of response headers that are not compared."""
    compare_content_type_params: bool = False
    secret_headers: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Lower-case header name -> placeholder name (`authorization` -> `A2A_TOKEN`)."""
    secret_fields: Mapping[str, str] = field(default_factory=dict, hash=False)
    """JSON member name -> placeholder name."""
    checks: tuple[CheckEntry, ...] = field(default=(), hash=False)
    """Places checked instead of compared for equality (`recorder.checks.entries`)."""
    assembled: tuple[str, ...] = ()
    """Where replies compare as the client assembles them (`FILE#N`, `FILE`, a glob, `*`):
    text parts joined, a stream's frames as one task (`recorder.rules.assembly`)."""
    secret_url_fields: Mapping[str, str] = field(default_factory=dict, hash=False)
    """JSON member name -> placeholder name: a URL there has its secret-looking path segments
    replaced (a push config's `url` always is, `recorder.secrets.redact`)."""
    source: str | None = field(default=None, compare=False)
    """The file the rules were read from (None for the defaults)."""

    def __post_init__(self) -> None:
        for name in ("generated_fields", "generated_paths", "generated_shapes"):
            object.__setattr__(self, name, _frozen_map(getattr(self, name)))
        object.__setattr__(
            self,
            "generated_fields_beside",
            _frozen_map({k: tuple(v) for k, v in self.generated_fields_beside.items()}),
        )
        object.__setattr__(
            self,
            "secret_headers",
            _frozen_map({k.lower(): v for k, v in self.secret_headers.items()}),
        )
        object.__setattr__(self, "secret_fields", _frozen_map(self.secret_fields))
        object.__setattr__(self, "secret_url_fields", _frozen_map(self.secret_url_fields))
        object.__setattr__(self, "loose_kinds", frozenset(self.loose_kinds))
        object.__setattr__(
            self, "ignored_headers", frozenset(h.lower() for h in self.ignored_headers)
        )
        for name in ("ignored_paths", "unordered_paths", "error_message_paths", "checks"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "assembled", tuple(self.assembled))

    def assembles(self, file: str, exchange: int | None) -> bool:
        """Whether exchange `exchange` (1-based; None: any) of the transcript at `file` is
        compared assembled (the `assembled` key)."""
        return bool(self.assembled) and assembled_in(self.assembled, file, exchange)

    # --- compiled forms (computed once per Rules value) ---------------------------------------

    @cached_property
    def shape_pattern(self) -> re.Pattern[str] | None:
        """One regex for every shape; `match.lastgroup` is `k_<kind>`."""
        if not self.generated_shapes:
            return None
        parts = [f"(?P<k_{kind}>{regex})" for kind, regex in self.generated_shapes.items()]
        return re.compile("|".join(parts))

    @cached_property
    def token_pattern(self) -> re.Pattern[str] | None:
        """For the replay fast path: a member's whole string value that is generated.

        Matches `": "<value>"` (the layout of the model's pretty JSON and of the SDK's SSE data)
        where the member is a generated one (group `f_<kind>`, checked by a lookbehind for
        `"<name>": "`) or the value is a shape (group `s_<kind>`). The member name stays in
        the text around the match. Starting with the literal `": "` lets the regex engine skip
        straight from one string value to the next.
        """
        return self._token_pattern(": ")

    @cached_property
    def compact_token_pattern(self) -> re.Pattern[str] | None:
        """`token_pattern` for compact JSON (`"name":"value"`, as Starlette sends JSON)."""
        return self._token_pattern(":")

    def _token_pattern(self, colon: str) -> re.Pattern[str] | None:
        fields = []
        by_kind: dict[str, list[str]] = {}
        for name, kind in self.generated_fields.items():
            by_kind.setdefault(kind, []).append(name)
        for kind, names in by_kind.items():
            behind = "|".join(f'(?<="{re.escape(name)}"{colon}")' for name in names)
            # no raw control character: one cannot sit in a string of valid JSON, and a value
            # holding one must not pass as a generated value (the reply is not JSON)
            fields.append(f'(?:{behind})(?P<f_{kind}>[^"\\\\\\x00-\\x1f]*)')
        alternatives = []
        if fields:
            last = sorted({name[-1:] for name in self.generated_fields})
            one = "|".join(fields)
            if "" not in last:
                # one look at the character before `"<colon>"` rules out most members at once
                # (each name lookbehind is tried in turn otherwise): ~20% off a split of an
                # id-dense reply
                one = f'(?<=[{"".join(map(re.escape, last))}]"{colon}")(?:{one})'
            alternatives.append(one)
        alternatives.extend(
            f"(?P<s_{kind}>{regex})" for kind, regex in self.generated_shapes.items()
        )
        if not alternatives:
            return None
        return re.compile(f'"{colon}"(?:' + "|".join(alternatives) + ')"')

    @cached_property
    def ignored_matcher(self) -> PathMatcher:
        paths = self.ignored_paths
        if not self.compare_error_message:
            paths = paths + self.error_message_paths
        return PathMatcher(paths)

    @cached_property
    def status_ignored_matcher(self) -> PathMatcher:
        """`ignored_matcher` for the body of a failed gRPC call: a google.rpc.Status, which
        HTTP+JSON's error envelope holds under `error`, so an error path under `$.error`
        applies to it from its root (`$.error.message` -> `$.message`): errors of the three
        bindings compare alike (on code and reason; their free text is left out)."""
        paths = self.ignored_paths
        if not self.compare_error_message:
            paths = paths + tuple(_status_path(path) for path in self.error_message_paths)
        return PathMatcher(paths)

    @cached_property
    def unordered_matcher(self) -> PathMatcher:
        return PathMatcher(self.unordered_paths)

    @cached_property
    def generated_matcher(self) -> PathMatcher:
        return PathMatcher(list(self.generated_paths))

    def generated_path_kind(self, keys: tuple[str | int, ...]) -> str | None:
        """The kind of a `generated_paths` entry naming `keys`, if any."""
        for path, kind in self.generated_paths.items():
            if PathMatcher([path]).match(keys):
                return kind
        return None

    def placeholder_for_header(self, name: str) -> str | None:
        return self.secret_headers.get(name.lower())


# --- loading ---------------------------------------------------------------------------------

_LIST_KEYS = (
    "assembled",
    "ignored_paths",
    "unordered_paths",
    "error_message_paths",
    "ignored_headers",
    "loose_kinds",
)
_MAP_KEYS = (
    "generated_fields",
    "generated_fields_beside",
    "generated_paths",
    "generated_shapes",
    "secret_headers",
    "secret_fields",
    "secret_url_fields",
)
_SECRET_KEYS = ("secret_headers", "secret_fields", "secret_url_fields")
_BOOL_KEYS = ("compare_error_message", "compare_content_type_params")
_KNOWN_KEYS = frozenset(("version", "checks", *_LIST_KEYS, *_MAP_KEYS, *_BOOL_KEYS))


class _Loader:
    def __init__(self, source: str, lines: Mapping[str, int] | None = None) -> None:
        self.source = source
        self.lines = lines or {}

    def error(self, key: str, problem: str) -> RulesError:
        """`file:line: key: problem`, the line of `key` in the file (or of the top key it is
        under), when the rules came from a file."""
        parts = key.split(".")
        line = self.lines.get(key)
        while not line and len(parts) > 1:  # `checks[0].assert[1].length`: the nearest line
            parts.pop()
            line = self.lines.get(".".join(parts))
        line = line or self.lines.get(key.partition(".")[0]) or self.lines.get(key.split("[")[0])
        where = f"{self.source}:{line}" if line else self.source
        return RulesError(f"{where}: {key}: {problem}")

    def string_list(self, key: str, value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, f"expected a list of strings, got {_describe(value)}")
        return list(value)

    def edit_list(self, key: str, default: list[str], value: Any) -> list[str]:
        if isinstance(value, Mapping):
            unknown = set(value) - {"add", "remove"}
            if unknown:
                raise self.error(
                    key, f"expected only 'add' and 'remove', got {sorted(map(str, unknown))}"
                )
            add = self.string_list(f"{key}.add", value.get("add", []) or [])
            remove = self.string_list(f"{key}.remove", value.get("remove", []) or [])
            fold = key == "ignored_headers"
            removed = {r.lower() if fold else r for r in remove}
            out = [d for d in default if (d.lower() if fold else d) not in removed]
            out.extend(a for a in add if a not in out)
            return out
        return self.string_list(key, value)

    def edit_map(self, key: str, default: Mapping[str, Any], value: Any) -> dict[str, Any]:
        if key in _SECRET_KEYS and isinstance(value, list):
            names = self.string_list(key, value)
            merged = dict(default)
            merged.update({name: placeholder_name(name) for name in names})
            return merged
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected a mapping, got {_describe(value)}")
        merged = dict(default)
        fold = key in _SECRET_KEYS  # names matched in any case
        for name, item in value.items():
            if not isinstance(name, str):
                raise self.error(key, f"expected string names, got {name!r}")
            if item is None and fold:
                for known in [k for k in merged if k.lower() == name.lower()]:
                    del merged[known]
            elif item is None:
                merged.pop(name, None)
            else:
                merged[name] = item
        return merged

    def check(self, rules: Rules) -> None:
        for name, kind in rules.generated_fields.items():
            self.kind(f"generated_fields.{name}", kind)
        for name, siblings in rules.generated_fields_beside.items():
            if not isinstance(siblings, tuple) or not all(isinstance(s, str) for s in siblings):
                raise self.error(
                    f"generated_fields_beside.{name}", "expected a list of member names"
                )
        for path, kind in rules.generated_paths.items():
            self.kind(f"generated_paths.{path}", kind)
            self.path(f"generated_paths.{path}", path)
        for kind, regex in rules.generated_shapes.items():
            self.kind(f"generated_shapes.{kind}", kind, as_key=True)
            if not isinstance(regex, str):
                raise self.error(
                    f"generated_shapes.{kind}",
                    f"expected a regular expression, got {_describe(regex)}",
                )
            try:
                compiled = re.compile(regex)
            except (re.error, OverflowError, RecursionError) as exc:
                # (a repetition past 2**32 is an OverflowError, 10,000 nested groups recurse)
                raise self.error(
                    f"generated_shapes.{kind}", f"bad regular expression: {exc}"
                ) from None
            if compiled.match(""):
                raise self.error(
                    f"generated_shapes.{kind}", "the expression matches an empty string"
                )
        for kind in rules.loose_kinds:
            self.kind("loose_kinds", kind)
        for item in rules.assembled:
            if scope_of(item) is None:
                raise self.error(
                    "assembled",
                    f'expected "FILE#N", "FILE" (a glob) or "*", got {_SHORT.repr(item)}',
                )
        for key in ("ignored_paths", "unordered_paths", "error_message_paths"):
            for path in getattr(rules, key):
                self.path(key, path)
        for key in _SECRET_KEYS:
            for name, placeholder in getattr(rules, key).items():
                if not isinstance(placeholder, str) or not re.fullmatch(
                    r"[A-Z_][A-Z0-9_]*", placeholder
                ):
                    raise self.error(
                        f"{key}.{name}",
                        "expected a placeholder name like A2A_TOKEN (upper case, digits, _),"
                        f" got {placeholder!r}",
                    )
        try:
            _ = rules.shape_pattern, rules.token_pattern, rules.compact_token_pattern
        except (re.error, OverflowError, RecursionError) as exc:
            raise self.error("generated_shapes", f"the expressions do not combine: {exc}") from None

    def kind(self, key: str, kind: Any, *, as_key: bool = False) -> None:
        if not isinstance(kind, str) or not _KIND.match(kind):
            what = "a kind name" if as_key else "a kind such as id or time"
            raise self.error(key, f"expected {what} (lower case letters, digits, _), got {kind!r}")

    def path(self, key: str, path: Any) -> None:
        if not isinstance(path, str):
            raise self.error(key, f"expected a JSONPath string, got {_describe(path)}")
        try:
            parse_path(path)
        except JsonPathError as exc:
            raise self.error(key, f"bad path {_SHORT.repr(path)}: {exc}") from None


_SHORT = reprlib.Repr()  # (keyword arguments only from Python 3.12)
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 3, 60, 60, 40


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    # (reprlib: a YAML alias bomb or deep nesting makes a repr of any size)
    return f"{type(value).__name__} {_SHORT.repr(value)}"[:80]


def _rules_from_mapping(
    data: Mapping[str, Any], base: Rules | None, source: str, lines: Mapping[str, int] | None = None
) -> Rules:
    loader = _Loader(source, lines)
    unknown = sorted(str(k) for k in data if k not in _KNOWN_KEYS)
    if unknown:
        known = ", ".join(sorted(_KNOWN_KEYS))
        raise loader.error(unknown[0], f"unknown key (known keys: {known})")
    version = data.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise loader.error("version", f"this recorder reads rules version 1, got {version!r}")
    changes: dict[str, Any] = {}
    for key in _LIST_KEYS:
        if key in data:
            current = getattr(base, key) if base is not None else ()
            default = sorted(current) if isinstance(current, frozenset) else list(current)
            changes[key] = loader.edit_list(key, default, data[key])
    for key in _MAP_KEYS:
        if key in data:
            default_map = getattr(base, key) if base else {}
            value = data[key]
            if key == "generated_fields_beside" and isinstance(value, Mapping):
                for name, siblings in value.items():
                    if siblings is not None:
                        loader.string_list(f"{key}.{name}", siblings)
            changes[key] = loader.edit_map(key, default_map, value)
    for key in _BOOL_KEYS:
        if key in data:
            if not isinstance(data[key], bool):
                raise loader.error(key, f"expected true or false, got {_describe(data[key])}")
            changes[key] = data[key]
    if "checks" in data:
        try:
            mine = read_checks(data["checks"], source if base is not None else None, lines)
        except CheckRulesError as exc:
            raise loader.error(exc.key, exc.problem) from None
        changes["checks"] = (*(base.checks if base is not None else ()), *mine)
    changes["source"] = source if base is not None else None
    rules = replace(base, **changes) if base is not None else Rules(**changes)
    loader.check(rules)
    return rules


def _load_defaults() -> Rules:
    text = resources.files("recorder").joinpath("default_rules.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    return _rules_from_mapping(data, None, "recorder/default_rules.yaml")


DEFAULT_RULES: Rules = _load_defaults()
"""The A2A 1.0 defaults (recorder/default_rules.yaml)."""


_MAX_DEPTH = 64  # rules nest 3 deep; the composer recurses (10,000 levels: RecursionError)


class _UniqueKeyLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a key given twice in one mapping (YAML 1.2 §3.2.1.1):
    the safe loader would keep the last one without a word. It also refuses nesting deeper
    than `_MAX_DEPTH`, and turns a value its tag cannot read (`!!int abc`, an integer of
    5,000 digits, `!!timestamp 2020-13-45`) into a YAML error at the value's line, where
    the safe loader raises a bare ValueError."""

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"nested deeper than {_MAX_DEPTH} levels",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as exc:
            tag = str(node.tag).rpartition(":")[2]
            value = _SHORT.repr(node.value) if isinstance(node.value, str) else "value"
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read the {tag} {value}: {exc}", node.start_mark
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`: merged by the base class (its keys may be overridden)
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the base class reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_rules(path: str | os.PathLike[str] | None) -> Rules:
    """The defaults, or the rules file at `path` merged over them. Raises RulesError."""
    if path is None:
        return DEFAULT_RULES
    source = os.fspath(path)
    try:
        with open(source, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise RulesError(f"{source}: cannot read the rules file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise RulesError(f"{source}:{line}: the rules file is not UTF-8 text") from None
    return rules_from_text(text, source)


def rules_from_text(text: str, source: str) -> Rules:
    """The rules of a rules file's `text` merged over the defaults, as `load_rules` reads
    them; `source` names the file in errors. Raises RulesError."""
    node, data = _parse_yaml(text, source)
    if data is None:
        return replace(DEFAULT_RULES, source=source)
    if not isinstance(data, Mapping):
        line = node.start_mark.line + 1 if node is not None else 1
        raise RulesError(
            f"{source}:{line}: expected a mapping of rule keys at the top, got {_describe(data)}"
        )
    try:
        return _rules_from_mapping(data, DEFAULT_RULES, source, _key_lines(node))
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as exc:
        # (a check that missed a shape: still the file's fault, never a traceback)
        raise RulesError(f"{source}: cannot use the rules: {exc}") from None


def rules_over(base: Rules, data: Mapping[str, Any], source: str) -> Rules:
    """`data` (a rules file's mapping, as its YAML loads) merged over `base`; `source` names
    it in errors. Raises RulesError."""
    try:
        return _rules_from_mapping(data, base, source)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as exc:
        raise RulesError(f"{source}: cannot use the rules: {exc}") from None


def _parse_yaml(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """The document's node (for the lines of its keys) and its value; RulesError at the line
    of any problem."""
    try:
        loader = _UniqueKeyLoader(text)  # a SafeLoader; its reader checks the characters
    except yaml.reader.ReaderError as exc:  # one that YAML does not allow (a control character)
        line = text.count("\n", 0, exc.position) + 1
        raise RulesError(f"{source}:{line}: not valid YAML: {exc.reason}") from None
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = (mark or loader.get_mark()).line + 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise RulesError(f"{source}:{line}: not valid YAML: {problem}") from None
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as exc:
        line = loader.get_mark().line + 1
        raise RulesError(f"{source}:{line}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def _key_lines(node: yaml.Node | None) -> dict[str, int]:
    """`key` and `key.name` (a name in a mapping under a top key) -> the line it is on."""
    lines: dict[str, int] = {}
    if not isinstance(node, yaml.MappingNode):
        return lines
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        key = str(key_node.value)
        lines.setdefault(key, key_node.start_mark.line + 1)
        if isinstance(value_node, yaml.MappingNode):
            for name_node, _ in value_node.value:
                if isinstance(name_node, yaml.ScalarNode):
                    lines.setdefault(f"{key}.{name_node.value}", name_node.start_mark.line + 1)
        elif isinstance(value_node, yaml.SequenceNode):
            _item_lines(key, value_node, lines, 3)
    return lines


def _item_lines(key: str, node: yaml.SequenceNode, lines: dict[str, int], depth: int) -> None:
    """`key[N]`, `key[N].member` ... -> line, `depth` levels down (the items of `checks`)."""
    for n, item in enumerate(node.value):
        here = f"{key}[{n}]"
        lines.setdefault(here, item.start_mark.line + 1)
        if isinstance(item, yaml.MappingNode) and depth > 1:
            for name_node, value_node in item.value:
                if isinstance(name_node, yaml.ScalarNode):
                    member = f"{here}.{name_node.value}"
                    lines.setdefault(member, name_node.start_mark.line + 1)
                    if isinstance(value_node, yaml.SequenceNode):
                        _item_lines(member, value_node, lines, depth - 1)


# --- rules that can never apply ----------------------------------------------------------------

# JSON-RPC request members: what is under them is the client's (rule 2 of recorder.rules.pairing:
# a value the client sent is never generated), and no reply has them
_CLIENT_MEMBERS = frozenset(jsonrpc.CLIENT_MEMBERS)
_CLIENT_PATH = jsonrpc.client_member_path()


def rules_warnings(path: str | os.PathLike[str]) -> list[str]:
    """`file:line: key: why` for each rule of the rules file at `path` that can never apply:
    a `generated_fields` name or `generated_paths` path naming what only the client sends
    (`params`, `$.params.message.messageId`: client values are never generated), and a kind
    that is neither a known one (id, time, token) nor declared in the file (a key of
    `generated_shapes`, or in `loose_kinds`), most likely a typo (`tme`), and a check on a
    place only a request has (`recorder.checks.entries.check_warnings`). Raises RulesError
    when the file is not valid rules (as `load_rules`). Reads the file; prints nothing."""
    rules = load_rules(path)
    source = os.fspath(path)
    with open(source, encoding="utf-8") as handle:
        node, data = _parse_yaml(handle.read(), source)
    if not isinstance(data, Mapping):
        return []
    lines = _key_lines(node)
    known = {*DEFAULT_RULES.generated_fields.values(), *DEFAULT_RULES.generated_shapes}
    known |= {*DEFAULT_RULES.generated_paths.values(), *DEFAULT_RULES.loose_kinds}
    known |= {*rules.generated_shapes, *rules.loose_kinds, *VALUE_KINDS}
    warnings: list[str] = []

    def warn(key: str, why: str) -> None:
        line = lines.get(key) or lines.get(key.partition(".")[0])
        warnings.append(f"{source}:{line}: {key}: {why}" if line else f"{source}: {key}: {why}")

    def kind(key: str, value: str) -> None:
        if value not in known:
            close = difflib.get_close_matches(value, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            warn(
                key,
                f"unknown kind {value!r}{hint}: kinds are {', '.join(sorted(known))}; declare a "
                "new one under generated_shapes or loose_kinds",
            )

    for key in ("generated_fields", "generated_paths"):
        mine = data.get(key)
        if not isinstance(mine, Mapping):
            continue
        current = getattr(rules, key)
        for name in mine:
            if name not in current:
                continue  # (removed with null)
            entry = f"{key}.{name}"
            client = name in _CLIENT_MEMBERS if key == "generated_fields" else None
            if client is None:
                client = bool(_CLIENT_PATH.match(name))
            if client:
                warn(
                    entry,
                    "can never apply: it names what the client sends (a JSON-RPC request's "
                    "jsonrpc, method or params), and a value the client sent is never generated",
                )
            kind(entry, current[name])
    mine_checks = rules.checks[len(DEFAULT_RULES.checks) :]
    for line, why in check_warnings(mine_checks):
        warnings.append(f"{source}:{line}: {why}" if line else f"{source}: {why}")
    return warnings
