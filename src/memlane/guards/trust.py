"""What a repository's own ``.memlane.toml`` may change: it may narrow, never widen.

Anyone can commit a ``.memlane.toml`` to a repository, and the person who clones it runs
memlane's hooks in it. So the repository file is read through a policy, key by key:

- **free**: ranking and injection choices that cannot reach past the repository (fusion and
  weights, thresholds, association, scoring, lifecycle timing, brackets);
- **lower**: budgets and limits — taken only when they are lower than the user's;
- **add**: ``privacy.exclude`` — the repository's globs are added to the user's, never replace them;
- **inside**: folders to mount (``stores.mounts``, ``domains.docs``, ``domains.code``) — only
  folders inside the repository (after ``~`` and symlinks are resolved), and as project scope;
  ``domains.transcripts`` only as ``"auto"`` (this repository's own sessions);
- **off**: switches that may only be turned off (``stores.claude_code``, ``index.hit_log``,
  ``judge.enabled``: the judge's command, endpoint and model are the user's alone);
- ``embed.model`` only when that embedder is registered here (else the user's applies);
- ``team.name`` (which team of the user's team database) is free for reading — nothing is written
  to a team only the repository names (``TeamScope.write_problem``); the team's DSN, credentials
  and timeouts are the user's alone;
- everything else is **refused**: the index path, the user store, commands, credentials, and
  keys memlane does not know. A refused key is reported (``memlane doctor`` lists them) and the
  rest of the file still applies: a hostile or broken repository file never stops memlane.

The user's own config file (``~/.config/memlane/config.toml`` or ``$MEMLANE_CONFIG``) is
trusted as written.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..records import dataclass

FREE = "free"
LOWER = "lower"
ADD = "add"
INSIDE = "inside"
OFF = "off"
EMBEDDER = "embedder"

#: section -> key -> rule; a section given as a rule applies to all its keys
POLICY: dict[str, str | dict[str, str]] = {
    "retrieve": FREE,
    "associate": FREE,
    "score": FREE,
    "lifecycle": FREE,
    "embed": {"long_notes": FREE, "model": EMBEDDER},
    "inject": {"deep": FREE, "default_bracket": FREE, "moderate_full": FREE, "fresh_free": FREE,
               "moderate_free": FREE, "refresh_minutes": FREE, "context_turns": LOWER, "statusline_max_age_s": LOWER,
               "identity_tokens": LOWER, "project_tokens": LOWER, "room_tokens": LOWER, "deep_tokens": LOWER,
               "max_chars": LOWER, "menu_lines": LOWER, "menu_tokens": LOWER},
    "index": {"max_file_bytes": LOWER, "busy_timeout_ms": LOWER, "hit_log": OFF},
    "stores": {"claude_code": OFF, "mounts": INSIDE},
    "domains": {"docs": INSIDE, "code": INSIDE, "transcripts": INSIDE, "ceiling": LOWER,
                "room_knowledge": FREE, "in_hooks": OFF},
    "privacy": {"exclude": ADD},
    "team": {"name": FREE},  # which team; never the DSN or any credential
    # the judge (R4) runs a command or sends notes to a server: a repository may only turn it off
    "judge": {"enabled": OFF},
}


@dataclass(frozen=True)
class Refusal:
    """A repository setting that was not applied, and why."""

    key: str
    reason: str

    def as_dict(self) -> dict:
        return {"key": self.key, "reason": self.reason}


def screen_repository_config(data: dict, current, repo_root: Path) -> tuple[dict, list[Refusal]]:
    """The part of a repository config file (``data``, parsed TOML) that may apply on top of
    ``current`` (the configuration so far: defaults and the user's files), and what was refused.
    Paths in the result are absolute and inside ``repo_root``."""
    root = Path(os.path.realpath(repo_root))
    kept: dict = {}
    refused: list[Refusal] = []
    for section, values in data.items():
        rules = POLICY.get(section)
        if rules is None or not isinstance(values, dict):
            refused.append(Refusal(section, "not a setting a repository may change" if rules is None
                                   else "must be a table"))
            continue
        for key, value in values.items():
            rule = rules if isinstance(rules, str) else rules.get(key)
            name = f"{section}.{key}"
            if rule is None:
                refused.append(Refusal(name, "only your own config file may set this (it touches paths, "
                                             "privacy or commands)"))
                continue
            ok, result, why = _screen(rule, name, value, getattr(getattr(current, section, None), key, None), root)
            if ok:
                kept.setdefault(section, {})[key] = result
            if why:
                refused.append(Refusal(name, why))
    return kept, refused


def _screen(rule: str, name: str, value, current, root: Path) -> tuple[bool, object, str | None]:
    """(apply?, the value to apply, why something was refused)."""
    if rule == FREE:
        return True, value, None
    if rule == LOWER:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True, value, None  # the type check that follows names the problem
        if isinstance(current, (int, float)) and value > current:
            return False, None, f"may only lower this ({value!r} is above your {current!r})"
        return True, value, None
    if rule == OFF:
        if value is False or value == current:
            return True, value, None
        return False, None, "a repository may turn this off, not on"
    if rule == ADD:
        if not isinstance(value, list):
            return True, value, None
        return True, list(dict.fromkeys([*(current or []), *value])), None
    if rule == INSIDE:
        return _inside(name, value, root)
    if rule == EMBEDDER:
        return _embedder(value)
    return False, None, "not a setting a repository may change"


def _embedder(value) -> tuple[bool, object, str | None]:
    """An embedder a repository names only when it is registered here: a plugin the person who
    cloned it has not installed (or a typo) would otherwise turn memory off, not choose a ranking."""
    if not isinstance(value, str) or value in ("default", "none"):
        return True, value, None  # the type check that follows names the problem
    from ..embed import available_embedders

    known = available_embedders()
    if value in known:
        return True, value, None
    return False, None, f"no embedder {value!r} is installed here (known: {', '.join(known)}); yours applies"


def _inside(name: str, value, root: Path) -> tuple[bool, object, str | None]:
    """Folders a repository may mount: inside itself only (``auto`` means this repository)."""
    if not isinstance(value, list):
        return True, value, None  # the type check that follows names the problem
    kept, outside = [], []
    for entry in value:
        if name == "stores.mounts":
            if not isinstance(entry, dict):
                kept.append(entry)
                continue
            if entry.get("scope", "project") != "project":
                outside.append(f"{entry.get('path')!r} as {entry.get('scope')!r} scope")
                continue
            path = _within(entry.get("path"), root)
            if path is None:
                outside.append(repr(entry.get("path")))
            else:
                kept.append({**entry, "path": path})
            continue
        if entry == "auto":
            kept.append(entry)
        elif name == "domains.transcripts":
            outside.append(repr(entry))  # sessions are the user's, not the repository's, to mount
        else:
            path = _within(entry, root)
            (kept.append(path) if path is not None else outside.append(repr(entry)))
    why = None
    if outside:
        what = "only \"auto\" (this repository's sessions)" if name == "domains.transcripts" else \
            "only folders inside the repository, as project scope"
        why = f"refused {', '.join(outside)}: a repository may mount {what}"
    return True, kept, why


def _within(path, root: Path) -> str | None:
    """``path`` (relative to ``root``, ``~`` expanded), resolved, if it lies inside ``root``."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return None
    full = Path(os.path.realpath(root / Path(path).expanduser()))
    return str(full) if full == root or full.is_relative_to(root) else None
