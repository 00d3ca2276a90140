"""The one pass everything takes on its way out of memlane — a hook's injection, an MCP answer,
the CLI's text and JSON, the graph, a log line: secrets redacted, terminal or bidi control
characters stripped and bytes of another encoding made U+FFFD, in every string field."""

from __future__ import annotations

import os
from functools import lru_cache

from .sanitize import strip_controls, whole_characters
from .secrets import map_strings, redact


def clean(text: str) -> str:
    """``text`` as it may be printed or injected: controls out first, so that a secret they split
    or touch (a token between two colour codes, ``AKIA\x1b[0m…``) is one word when it is redacted;
    a path's bytes of another encoding (a file name from a Latin-1 system) as U+FFFD, so that a
    stream that writes only UTF-8 takes it."""
    return whole_characters(redact(strip_controls(text))) if text else text


def clean_data(obj: object) -> object:
    """A copy of any JSON-like structure with every string value (not dict keys) ``clean``."""
    return map_strings(obj, clean)


def unit_risk(*fields: str | None) -> str | None:
    """Why a unit reads as an attempt to steer the agent, screening every field of it that can
    reach the agent together — its name, file name, title, index hook, description, body — so
    an override split across fields (a title and its hook) is read as one text. A resident
    process screens the same notes prompt after prompt: the verdicts are remembered."""
    return _risk(unit_text(*fields))


def row_risk(row: dict) -> str | None:
    """``unit_risk`` of a stored note as the index or ``Memory.show`` gives it (or another domain's
    unit, its ``text``): what the hooks screen, for the faces that hand one note out on request
    (``memlane show``, the MCP server) — every field of it they print, its metadata whole (the
    MEMORY.md section, ``superseded_by``, what the parser said of a bad value)."""
    return unit_risk(row.get("name"), os.path.basename(row.get("path") or ""), row.get("title"),
                     row.get("description"), row.get("body"), row.get("text"), row.get("type"),
                     *_texts({k: v for k, v in (row.get("meta") or {}).items() if k not in _FOLDERS}))


#: metadata that names where a note lives, not what it says: the store's folder (``neutral_path``
#: keeps one that reads as an instruction out of what is printed) and the path within it
_FOLDERS = ("store", "rel")


def recalled_fields(item) -> tuple[str | None, ...]:
    """Every text of a recalled unit (``Recalled``) that a face may hand the agent, for
    ``unit_risk``: its name and file name, title, hook, description, body, type, recall keywords,
    ``paths:``, kind and status. (Its folder is the store's: ``neutral_path`` keeps a folder that
    reads as an instruction out of what is printed, without keeping the notes in it out.)"""
    return (item.name, os.path.basename(item.path), item.title, item.hook, item.description, item.body,
            item.type, *item.recall, *item.paths, item.kind, item.status)


def _texts(value) -> list[str]:
    """Every string a face may print of a value: the value, a list's items, a mapping's values."""
    if value is None or isinstance(value, (bool, int, float)):
        return []
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _texts(v)]
    return [str(value)]


def risk_kind(risk: str | None) -> str | None:
    """What the agent may be told of a withheld note's risk: the kind alone ("instruction
    override"), never the note's words that the reason quotes for the user (``memlane lint``)."""
    return risk.split(": ", 1)[0] if risk else None


#: what stands for a withheld note's name, or its file's, when that alone reads as an instruction
NAME_WITHHELD = "[a name that reads as an instruction to the agent]"
#: what every face (``show``, ``recall``, the MCP tools and resource) says instead of a note whose
#: text reads as an instruction to the agent: an agent may call each, so each gives what the hooks give
WITHHELD = ("withheld: this note's text reads as an instruction to the agent ({risk}), so it is not shown; "
            "the user can review it in the file itself or with `memlane lint`")


#: what a face leaves of a withheld note: not one of these, each of which may carry its text
WITHHELD_FIELDS = ("title", "hook", "preview", "summary", "description", "body", "text", "recall", "paths",
                   "type", "kind", "status", "meta", "reached", "stale")


def withhold(data: dict, risk: str | None) -> dict:
    """``data`` (a note as a face hands it out: ``show``, ``recall``, an MCP tool) when ``risk``
    says it reads as an instruction to the agent: none of its text (``WITHHELD_FIELDS``), its names
    neutral, the kind of risk and why it is withheld; without a risk, its names neutral alone (a
    folder that reads as an instruction is not named, whatever the note)."""
    if not risk:
        return _neutral_places(data)  # its names were screened with its text
    for field in WITHHELD_FIELDS:
        data.pop(field, None)
    kind = risk_kind(risk)
    return neutral_names(data) | {"risk": kind, "withheld": WITHHELD.format(risk=kind)}


def neutral_names(data: dict) -> dict:
    """``data`` (a note's, as a face hands it out) with its name — ``name``, ``id`` or, in another
    source's list, ``address`` — replaced when it reads as an instruction by itself, and its path
    made ``neutral_path``: what is left of a withheld note must not carry its payload either."""
    for key in ("name", "id", "address"):
        if isinstance(data.get(key), str) and unit_risk(data[key]):
            data[key] = NAME_WITHHELD
    path = data.get("path")
    if isinstance(path, str) and path and unit_risk(os.path.basename(path)):
        data["path"] = os.path.join(os.path.dirname(path), NAME_WITHHELD)
    return _neutral_places(data)


def _neutral_places(data: dict) -> dict:
    """``data`` with the places it names — its folder (its path's, its store's) and the notes it
    was reached through — neutral where one reads as an instruction to the agent."""
    if isinstance(data.get("path"), str) and data["path"]:
        data["path"] = neutral_path(data["path"])
    meta = data.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("store"), str) and _reads_as_instruction(meta["store"]):
        data["meta"] = {**meta, "store": FOLDER_WITHHELD}
    if isinstance(data.get("reached"), str):
        data["reached"] = neutral_links(data["reached"])
    return data


def neutral_path(path: str, risky: set[str] | None = None) -> str:
    """``path`` with its folder replaced when the folder reads as an instruction to the agent (a
    repository names the folders it mounts, and the hooks print them): the notes in it are read
    as any others, their folder is not printed. ``risky``: the folders the caller screened so."""
    folder = os.path.dirname(path)
    bad = folder in risky if risky is not None else bool(folder) and _reads_as_instruction(folder)
    return os.path.join(FOLDER_WITHHELD, os.path.basename(path)) if bad else path


#: what stands for such a folder
FOLDER_WITHHELD = "[a folder whose name reads as an instruction to the agent]"


#: a linked name in how a note was reached
_LINKED = r"\[\[([^\]\n]{1,300})\]\]"


def neutral_links(text: str, risky: set[str] | None = None) -> str:
    """``text`` (how a note was reached: "via [[name]] …") with each linked name that reads as an
    instruction replaced: a quarantined note is not named through the notes it links to either.
    ``risky``: the set of such names when the caller screened them (``linked_names``)."""
    if "[[" not in text:
        return text
    import re

    def neutral(m) -> str:
        bad = m.group(1) in risky if risky is not None else _reads_as_instruction(m.group(1))
        return f"[[{NAME_WITHHELD}]]" if bad else m.group(0)

    return re.sub(_LINKED, neutral, text)


def linked_names(text: str) -> list[str]:
    """The names ``text`` (how a note was reached) links, for ``neutral_links``."""
    if "[[" not in text:
        return []
    import re

    return re.findall(_LINKED, text)


@lru_cache(maxsize=256)
def _reads_as_instruction(text: str) -> bool:
    """A folder or a linked name, alone: a few of them per process, each screened once."""
    return _risk(text) is not None


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
