"""YAML frontmatter, read leniently.

Real agent notes are not always valid YAML: a description with an unquoted ``#47`` loses
its tail to YAML's comment rule, and a quoted word followed by more text is a parse error
(both occur in real agent notes). We parse with PyYAML, then repair plain
one-line scalars from the raw text, and fall back to a line parser when YAML refuses.
Nothing here raises: problems are returned as strings for the caller to log.
"""

from __future__ import annotations

import re

from ..records import dataclass, field


# libyaml's C loader when PyYAML was built with it (the wheels are): ~10x faster
_loader = None


def _yaml():
    """PyYAML and its fastest safe loader, imported on the first note parsed (a recall from a
    fresh index needs neither)."""
    global _loader
    import yaml

    if _loader is None:
        _loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml, _loader
_FENCE = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)
_OPENING = re.compile(r"\A---[ \t]*\r?\n")
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*$")


@dataclass
class Frontmatter:
    """A note's frontmatter fields, its body, and what was wrong with the frontmatter."""

    fields: dict
    body: str
    problems: list[str] = field(default_factory=list)


def split_frontmatter(text: str) -> Frontmatter:
    """Split ``text`` into its frontmatter mapping and body (body keeps its exact text)."""
    text = text.removeprefix("\ufeff")
    match = _FENCE.match(text)
    if not match:
        unclosed = ["frontmatter is not closed (no second '---' line): the whole file is read as the body, and "
                    "name, description and type come from the file name only"] if _OPENING.match(text) else []
        return Frontmatter({}, text, unclosed)
    raw, body = match.group(1) or "", text[match.end():]
    problems: list[str] = []
    try:
        yaml, loader = _yaml()
        if "*" in raw and _has_alias(yaml, loader, raw):
            problems.append("frontmatter uses YAML aliases (*name), which memlane does not expand; read leniently")
            parsed = None
        else:
            parsed = yaml.load(raw, Loader=loader)  # noqa: S506 - a safe loader
    except _yaml()[0].YAMLError as exc:
        problems.append(f"frontmatter is not valid YAML ({_first_line(exc)}); read leniently")
        parsed = None
    if parsed is None and not problems:
        parsed = {}
    if not isinstance(parsed, dict):
        if not problems:
            problems.append("frontmatter is not a mapping; read leniently")
        parsed = _line_parse(raw)
    else:
        _repair_plain_scalars(parsed, raw)
    return Frontmatter(parsed, body, problems)


def _has_alias(yaml, loader, raw: str) -> bool:
    """Whether ``raw`` refers to an anchor (``*name``): a few hundred bytes of nested aliases load
    as one list shared billions of times over, which every reader of the note (the index, the
    guards, JSON) would walk whole. No note needs one."""
    return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(raw, Loader=loader))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _raw_top_level(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in raw.splitlines():
        m = _TOP_KEY.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _repair_plain_scalars(parsed: dict, raw: str) -> None:
    """Undo YAML's comment truncation on unquoted one-line values (``fixed #47 today``)."""
    for key, value in _raw_top_level(raw).items():
        if not value or value[0] in "'\"[{|>&*!":
            continue
        current = parsed.get(key)
        if isinstance(current, str) and re.search(r"\s#\S", value) and len(value) > len(current):
            parsed[key] = value


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _line_parse(raw: str) -> dict:
    """A forgiving reader for ``key: value`` lines, one level of nesting and ``- item`` lists."""
    out: dict = {}
    current: str | None = None
    for line in raw.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            m = _TOP_KEY.match(line)
            if not m:
                current = None
                continue
            key, value = m.group(1), m.group(2)
            current = key
            if value.startswith("[") and value.endswith("]"):
                out[key] = [_unquote(v.strip()) for v in value[1:-1].split(",") if v.strip()]
            elif value:
                out[key] = _unquote(value)
            else:
                out[key] = None
            continue
        if current is None:
            continue
        stripped = line.strip()
        if stripped.startswith("- "):
            seq = out.get(current)
            out[current] = (seq if isinstance(seq, list) else []) + [_unquote(stripped[2:].strip())]
            continue
        m = _TOP_KEY.match(stripped)
        if m:
            sub = out.get(current)
            sub = sub if isinstance(sub, dict) else {}
            sub[m.group(1)] = _unquote(m.group(2))
            out[current] = sub
    return out
