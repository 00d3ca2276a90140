"""The one pass everything takes on its way out of memlane — a hook's injection, an MCP answer,
the CLI's text and JSON, the graph, a log line: secrets redacted and terminal or bidi control
characters stripped, in every string field."""

from __future__ import annotations

import os
from functools import lru_cache

from .sanitize import strip_controls
from .secrets import map_strings, redact


def clean(text: str) -> str:
    """``text`` as it may be printed or injected."""
    return strip_controls(redact(text)) if text else text


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
    (``memlane show``, the MCP server)."""
    meta = row.get("meta") or {}
    return unit_risk(row.get("name"), os.path.basename(row.get("path") or ""), row.get("title"),
                     meta.get("index_hook"), row.get("description"), row.get("body"), row.get("text"))


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
    if isinstance(path, str) and path and unit_risk(os.path.basename(path)):
        data["path"] = os.path.join(os.path.dirname(path), NAME_WITHHELD)
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
