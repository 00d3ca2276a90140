"""The one pass everything takes on its way out of memlane — a hook's injection, an MCP answer,
the CLI's text and JSON, the graph, a log line: secrets redacted and terminal or bidi control
characters stripped, in every string field."""

from __future__ import annotations

import os
from functools import lru_cache

from .sanitize import strip_controls
from .secrets import map_strings, redact


def clean(text: str) -> str:
    """``text`` as it may be printed or injected: controls out first, so that a secret they split
    or touch (a token between two colour codes, ``AKIA\x1b[0m…``) is one word when it is redacted."""
    return redact(strip_controls(text)) if text else text


def clean_data(obj: object) -> object:
    """A copy of any JSON-like structure with every string value (not dict keys) ``clean``."""
    return map_strings(obj, clean)


def unit_risk(*fields: str | None) -> str | None:
    """Why a unit reads as an attempt to steer the agent, screening every field of it that can
    reach the agent together — its name, path, title, index hook, description, body — so
    an override split across fields (a title and its hook) is read as one text. A resident
    process screens the same notes prompt after prompt: the verdicts are remembered."""
    return _risk(unit_text(*fields))


def row_risk(row: dict) -> str | None:
    """``unit_risk`` of a stored note as the index or ``Memory.show`` gives it (or another domain's
    unit, its ``text``): what the hooks screen, for the faces that hand one note out on request
    (``memlane show``, the MCP server) — every field of it they print."""
    meta = row.get("meta") or {}
    return unit_risk(row.get("name"), row.get("path"), row.get("title"),
                     meta.get("index_hook"), row.get("description"), row.get("body"), row.get("text"),
                     row.get("type"), *_texts(meta.get("recall")), *_texts(meta.get("paths")),
                     *_texts(meta.get("supersedes")), *_texts(meta.get("kind")), *_texts(meta.get("status")))


def recalled_fields(item) -> tuple[str | None, ...]:
    """Every text of a recalled unit (``Recalled``) that a face may hand the agent, for
    ``unit_risk``: its name and path (each folder of it: a repository names the folders it mounts,
    and the hooks print the folder), title, hook, description, body, type, recall keywords,
    ``paths:``, kind and status."""
    return (item.name, item.path, item.title, item.hook, item.description, item.body,
            item.type, *item.recall, *item.paths, item.kind, item.status)


def _texts(value) -> list[str]:
    """A frontmatter value as the strings a face prints of it (a list's items, or the value)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def risk_kind(risk: str) -> str:
    """What the agent may be told of a withheld note's risk: the kind alone ("instruction
    override"), never the note's words that the reason quotes for the user (``memlane lint``)."""
    return risk.split(": ", 1)[0]


#: what stands for a withheld note's name, or its file's, when that alone reads as an instruction
NAME_WITHHELD = "[a name that reads as an instruction to the agent]"
#: what every face (``show``, ``recall``, the MCP tools and resource) says instead of a note whose
#: text reads as an instruction to the agent: an agent may call each, so each gives what the hooks give
WITHHELD = ("withheld: this note's text reads as an instruction to the agent ({risk}), so it is not shown; "
            "the user can review it in the file itself or with `memlane lint`")


def neutral_names(data: dict) -> dict:
    """``data`` (a withheld note's, as a face hands it out) with its name — ``name``, ``id`` or, in
    another source's list, ``address`` — and its file's name replaced when one reads as an
    instruction by itself: what is left of a withheld note must not carry its payload either."""
    for key in ("name", "id", "address"):
        if isinstance(data.get(key), str) and unit_risk(data[key]):
            data[key] = NAME_WITHHELD
    path = data.get("path") or ""
    if isinstance(path, str) and path and unit_risk(path):
        folder = os.path.dirname(path)  # the file's name, or a folder of the path, carries it
        data["path"] = NAME_WITHHELD if unit_risk(folder) else os.path.join(folder, NAME_WITHHELD)
    return data


def unit_text(*fields: str | None) -> str:
    """The one text ``unit_risk`` screens for these fields."""
    return "\n".join(f for f in fields if f)


def unit_risks(units: list[tuple[str | None, ...]], verdicts=None) -> list[str | None]:
    """``unit_risk`` of each unit's fields, the verdicts kept between processes by ``verdicts``
    (``guards/verdicts.py``) when given."""
    texts = [unit_text(*fields) for fields in units]
    if verdicts is None:
        return [_risk(t) for t in texts]
    return verdicts.risks(texts, _risk)


@lru_cache(maxsize=2048)
def _risk(text: str) -> str | None:
    from .injection import injection_risk

    return injection_risk(text)
