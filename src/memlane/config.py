"""One place for settings: defaults, the TOML file, validation.

Files, later overriding earlier: ``$XDG_CONFIG_HOME/memlane/config.toml`` (user), then
``.memlane.toml`` at the repository root (project). ``$MEMLANE_CONFIG`` names one file
instead. Unknown keys and bad values are errors with the key's name, never ignored.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path

from .errors import ConfigError
from .modes import Depth, Fusion  # noqa: F401 - Depth: its home before modes.py, still importable here
from .records import dataclass, field, fields, is_dataclass


class ChunkStrategy(str, Enum):
    """What text of a note is embedded (``embed.long_notes``; see index/chunking.py)."""

    WHOLE = "whole"
    DESCRIPTION = "description"
    CHUNKS = "chunks"


def config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "memlane"


def data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "memlane"


def cache_home() -> Path:
    if os.environ.get("MEMLANE_CACHE_DIR"):
        return Path(os.environ["MEMLANE_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memlane"


REPO_FILE = ".memlane.toml"


@dataclass
class Mount:
    """A memory folder mounted from the configuration, with its scope."""

    path: str
    scope: str = "project"


@dataclass
class StoresConfig:
    """``[stores]``: which memory folders are in play."""

    mounts: list[Mount] = field(default_factory=list)
    claude_code: bool = True  # discover ~/.claude/projects/<encoded repo>/memory/
    user_store: str = ""  # default: $XDG_DATA_HOME/memlane/user


@dataclass
class IndexConfig:
    """``[index]``: where the derived index lives and what it takes in."""

    path: str = ""  # default: one file per store set in the cache dir
    max_file_bytes: int = 1_000_000
    busy_timeout_ms: int = 5000  # how long a writer waits for another process's lock
    hit_log: bool = True  # record every recall beside the index (L2)


@dataclass
class EmbedConfig:
    """``[embed]``: the embedder, and how a long note is embedded."""

    model: str = "default"  # a registered embedder name, "default", or "none" for keyword-only
    long_notes: str = ChunkStrategy.WHOLE.value


@dataclass
class RetrieveConfig:
    """``[retrieve]``: how the keyword and meaning legs are fused and thresholded."""

    fusion: str = Fusion.HYBRID.value
    vector_weight: float = 0.7  # chosen by measurement (docs/how-recall-works.md, "Choosing the weights")
    keyword_weight: float = 0.3
    min_score: float = 0.30  # fused score below which nothing is recalled (R3)
    min_cosine: float | None = None  # vector-leg threshold; None = the embedder's own
    rrf_k: int = 60
    candidates: int = 100
    k: int = 5
    fts_weights: dict[str, float] = field(
        default_factory=lambda: {"name": 4.0, "description": 3.0, "keywords": 4.0, "body": 1.0})


@dataclass
class AssociateConfig:
    """Spreading activation, constellations and divergent mode (A2, A3, A5); defaults chosen
    by measurement (docs/how-recall-works.md, "Associative recall")."""

    spread: bool = True  # one hop of spreading activation from the seeds (A2)
    decay: float = 0.7  # activation kept per hop
    fan: float = 1.0  # fan effect: a node with n links sends each 1/n**fan of its activation
    blend: float = 1.0  # final relevance = text relevance + blend * activation
    boost_seeds: bool = True  # seeds gain from each other's activation too (else only neighbours below the threshold)
    margin: float = 0.05  # an associate stays this far below the seed that activated it
    admit: float = 0.5  # keyword-only: a neighbour is plausible if its own score >= admit * min_score
    admit_vector: float = 0.25  # with vectors: ... if its calibrated cosine >= this
    constellations: bool = True  # recall a constellation atomically (A3)
    constellation_min: int = 3  # smallest set of mutually linked notes that counts
    constellation_max: int = 8  # larger cliques are dense clusters, not constellations
    divergent_damping: float = 0.85  # personalised PageRank (A5): chance to keep walking
    divergent_remote: int = 3  # remote associates a divergent recall adds
    divergent_min_score: float = 0.10  # the flatter relevance threshold of divergent mode


@dataclass
class ScoreConfig:
    """L1: final = relevance x importance x recency (Generative Agents)."""

    hub_weight: float = 0.1  # importance gained by the most central notes (A4)
    importance_weight: float = 0.05  # effect of a note's own ``importance:`` (0-1; 0.5 neutral)
    recency_weight: float = 0.1  # how far a long-unused note falls behind (ACT-R base level)
    superseded_factor: float = 0.1


@dataclass
class LifecycleConfig:
    """Darwinian decay (docs/design.md, "Lifecycle"), computed from the hit-log and file dates."""

    dormant_days: float = 30.0  # unreferenced this long (at base stability): dormant
    archive_days: float = 90.0  # ... and this long: archived (leaves default recall)
    spacing_gain: float = 0.5  # stability gained by one well-spaced reference
    spacing_days: float = 1.0  # references closer than this are "massed" and gain less
    base_decay: float = 0.5  # ACT-R d in B = ln(sum t_j^-d)


@dataclass
class DomainsConfig:
    """The recall fabric (D1, D2): other sources recalled beside the notes, each in its own
    bucket."""

    docs: list[str] = field(default_factory=list)  # markdown folders mounted as libraries (knowledge)
    transcripts: list[str] = field(default_factory=list)  # transcript folders; "auto": this repository's in Claude Code
    code: list[str] = field(default_factory=list)  # working trees; "auto": this repository
    ceiling: int = 12  # results of one recall_all, shared equally among the active domains
    in_hooks: bool = True  # layer 4 (deep) draws on every configured domain
    room_knowledge: float = 0.6  # a document section this relevant (0-1) may join layer 3


@dataclass
class PrivacyConfig:
    """G3: what never leaves its scope. ``private: true`` notes are the user's own (never
    handed to an agent); files matching ``exclude`` are never read into any index at all."""

    #: path globs matched against each file's path relative to its mounted folder, its
    #: absolute path and its file name (``*`` also crosses ``/``): "personal/*", "*.secret.md"
    exclude: list[str] = field(default_factory=list)


@dataclass
class TeamConfig:
    """P1: the team scope, between user and project, on PostgreSQL. ``dsn`` (or
    ``$MEMLANE_TEAM_DSN``) only in your own config file; a repository may name the team."""

    dsn: str = ""  # postgresql://role@host/db (the password in ~/.pgpass or $PGPASSWORD, or in the DSN)
    name: str = ""  # the team: a namespace of the database (several teams can share one)
    timeout_ms: int = 400  # the most a recall waits for the team store; then the local scopes answer alone
    retry_s: float = 30.0  # after the team store failed to answer, how long recall goes on without it

    def configured_dsn(self) -> str:
        return os.environ.get("MEMLANE_TEAM_DSN") or self.dsn


@dataclass
class JudgeConfig:
    """R4: an optional judge — a model that chooses which of layer 3's candidates apply
    (docs/judge.md). Off unless ``command`` or ``url`` is set, in your own config file only: a
    repository's file may turn it off, never on, and never name what runs or where notes go."""

    enabled: bool = True  # use the judge set here (none is set by default); a repository may turn it off
    command: list[str] = field(default_factory=list)  # argv, run without a shell: JSON in on stdin, out on stdout
    url: str = ""  # or an OpenAI-compatible endpoint: http://localhost:11434/v1 (Ollama), :8080/v1 (llama.cpp)
    model: str = ""  # the model the endpoint is asked for (required with url)
    api_key_env: str = ""  # the environment variable holding the endpoint's API key, if it needs one
    structured: bool = True  # ask the endpoint for JSON of the verdict's schema (response_format json_schema)
    timeout_s: float = 2.0  # past it the ranking stands (in the hooks never past the daemon's request deadline)
    candidates: int = 12  # what the judge sees: the recalled notes, then the ranking below the threshold, up to this

    @property
    def configured(self) -> bool:
        return self.enabled and bool(self.command or self.url)


class Bracket(str, Enum):
    """How much of the context window is free (J3), and so how deep memory is injected."""

    FRESH = "fresh"  # >= 70% free: full notes
    MODERATE = "moderate"  # 40-70%: the most relevant in full, the rest as index lines
    DEPLETED = "depleted"  # < 40%: index lines only


@dataclass
class InjectConfig:
    """Layers, brackets, dedup and caps for what the hooks inject (J1-J5)."""

    identity_tokens: int = 200  # layer 1: the user's own notes, at session start
    project_tokens: int = 500  # layer 2: critical project facts, at session start
    room_tokens: int = 2000  # layer 3: the prompt's notes
    deep_tokens: int = 4000  # layer 4: deep search, when asked or when layer 3 is thin
    deep: str = "auto"  # auto (when layer 3 finds nothing) | always | never
    max_chars: int = 10_000  # the host's cap per injection (Claude Code: 10,000 characters)
    fresh_free: float = 0.70  # at least this much of the window free: FRESH
    moderate_free: float = 0.40  # at least this much: MODERATE; below: DEPLETED
    default_bracket: str = Bracket.MODERATE.value  # when the fill is unknown
    moderate_full: int = 1  # MODERATE: how many of the most relevant notes come in full
    refresh_minutes: float = 120.0  # a note injected in a session comes again after this long
    context_turns: int = 1  # earlier user turns added to a short prompt's query (R2)
    statusline_max_age_s: float = 600.0  # an older statusline side file is not trusted
    menu_lines: int = 8  # after what a prompt injects: this many further candidates, one line each (0: none)
    menu_tokens: int = 250  # ... within this many tokens


@dataclass
class Config:
    """The whole configuration, one section per table of the TOML file."""

    stores: StoresConfig = field(default_factory=StoresConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    retrieve: RetrieveConfig = field(default_factory=RetrieveConfig)
    associate: AssociateConfig = field(default_factory=AssociateConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    inject: InjectConfig = field(default_factory=InjectConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    domains: DomainsConfig = field(default_factory=DomainsConfig)
    team: TeamConfig = field(default_factory=TeamConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    sources: list[str] = field(default_factory=list)  # files read, for doctor
    repository_file: str | None = None  # the repository's own .memlane.toml, when there is one
    refused: list[dict] = field(default_factory=list)  # what that file asked for and may not change
    #: ``team.name`` is the repository file's (none of the user's files names that team): such a
    #: team is read from, never written to unless the user names it (``TeamScope.write_problem``)
    team_named_by_repository: bool = False

    def validate(self) -> "Config":
        r = self.retrieve
        _choice("retrieve.fusion", r.fusion, Fusion)
        _choice("embed.long_notes", self.embed.long_notes, ChunkStrategy)
        for name in ("vector_weight", "keyword_weight", "min_score"):
            value = getattr(r, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ConfigError(f"retrieve.{name} must be a number in [0, 1], got {value!r}")
        if r.vector_weight + r.keyword_weight <= 0:
            raise ConfigError("retrieve.vector_weight + retrieve.keyword_weight must be > 0")
        for name in ("rrf_k", "candidates", "k"):
            if not isinstance(getattr(r, name), int) or getattr(r, name) < 1:
                raise ConfigError(f"retrieve.{name} must be a positive integer")
        unknown = set(r.fts_weights) - {"name", "description", "keywords", "body"}
        if unknown:
            raise ConfigError(f"retrieve.fts_weights: unknown field(s) {sorted(unknown)}")
        for name in ("max_file_bytes", "busy_timeout_ms"):
            if getattr(self.index, name) < (1 if name == "max_file_bytes" else 0):
                raise ConfigError(f"index.{name} must be a positive integer, got {getattr(self.index, name)!r}")
        a, sc, lc = self.associate, self.score, self.lifecycle
        for key, value in (("associate.decay", a.decay), ("associate.margin", a.margin), ("associate.divergent_damping", a.divergent_damping),
                           ("associate.divergent_min_score", a.divergent_min_score),
                           ("score.hub_weight", sc.hub_weight), ("score.importance_weight", sc.importance_weight),
                           ("score.recency_weight", sc.recency_weight),
                           ("score.superseded_factor", sc.superseded_factor)):
            if not 0 <= value <= 1:
                raise ConfigError(f"{key} must be a number in [0, 1], got {value!r}")
        for key, value in (("associate.fan", a.fan), ("associate.blend", a.blend),
                           ("lifecycle.spacing_gain", lc.spacing_gain), ("lifecycle.base_decay", lc.base_decay)):
            if value < 0:
                raise ConfigError(f"{key} must be >= 0, got {value!r}")
        for key, value in (("associate.constellation_min", a.constellation_min),
                           ("associate.constellation_max", a.constellation_max),
                           ("associate.divergent_remote", a.divergent_remote)):
            if value < (2 if "constellation" in key else 0):
                raise ConfigError(f"{key} is too small: {value!r}")
        if a.constellation_max < a.constellation_min:
            raise ConfigError("associate.constellation_max must be >= associate.constellation_min")
        if not 0 < lc.dormant_days <= lc.archive_days:
            raise ConfigError("lifecycle: need 0 < dormant_days <= archive_days")
        if lc.spacing_days <= 0:
            raise ConfigError("lifecycle.spacing_days must be > 0")
        ij = self.inject
        _choice("inject.default_bracket", ij.default_bracket, Bracket)
        if ij.deep not in ("auto", "always", "never"):
            raise ConfigError(f"inject.deep must be auto, always or never; got {ij.deep!r}")
        if not 0 <= ij.moderate_free <= ij.fresh_free <= 1:
            raise ConfigError("inject: need 0 <= moderate_free <= fresh_free <= 1")
        for key in ("identity_tokens", "project_tokens", "room_tokens", "deep_tokens", "max_chars",
                    "moderate_full", "context_turns"):
            if getattr(ij, key) < 0:
                raise ConfigError(f"inject.{key} must be >= 0")
        if self.domains.ceiling < 1:
            raise ConfigError("domains.ceiling must be a positive integer")
        if not 0 <= self.domains.room_knowledge <= 1:
            raise ConfigError("domains.room_knowledge must be a number in [0, 1]")
        tm = self.team
        if tm.name and (len(tm.name) > 63 or not all(c.isalnum() or c in "_-." for c in tm.name)):
            raise ConfigError(f"team.name must be letters, digits, '_', '-' or '.' (at most 63), got {tm.name!r}")
        if tm.timeout_ms < 0 or tm.retry_s < 0:
            raise ConfigError("team.timeout_ms and team.retry_s must be >= 0")
        _validate_judge(self.judge)
        for mount in self.stores.mounts:
            if mount.scope not in ("user", "project"):
                raise ConfigError(f"stores.mounts: scope must be 'user' or 'project', got {mount.scope!r}")
        return self

    def user_store_path(self) -> Path:
        return Path(self.stores.user_store).expanduser() if self.stores.user_store else data_home() / "user"


def _validate_judge(jc: JudgeConfig) -> None:
    if jc.command and jc.url:
        raise ConfigError("judge: set either command or url, not both")
    if jc.command and not jc.command[0].strip():
        raise ConfigError("judge.command: the first item must name the program")
    if jc.url and not jc.url.startswith(("http://", "https://")):
        raise ConfigError(f"judge.url must start with http:// or https://, got {jc.url!r}")
    if jc.url and not jc.model.strip():
        raise ConfigError("judge.model is required with judge.url (the model the endpoint serves)")
    if not 0 < jc.timeout_s <= 60:
        raise ConfigError(f"judge.timeout_s must be a number of seconds in (0, 60], got {jc.timeout_s!r}")
    if not 1 <= jc.candidates <= 30:
        raise ConfigError(f"judge.candidates must be from 1 to 30, got {jc.candidates!r}")


def _choice(key: str, value: str, enum: type[Enum]) -> None:
    allowed = [e.value for e in enum]
    if value not in allowed:
        raise ConfigError(f"{key} must be one of {', '.join(allowed)}; got {value!r}")


def _apply(target, data: dict, prefix: str) -> None:
    known = {f.name: f for f in fields(target)}
    for key, value in data.items():
        if key not in known or key in ("sources", "refused", "repository_file"):
            raise ConfigError(f"unknown setting {prefix}{key}")
        current = getattr(target, key)
        if key == "mounts":
            if not isinstance(value, list):
                raise ConfigError(f"{prefix}mounts must be an array of tables")
            try:
                current.extend(Mount(**m) for m in value)
            except TypeError as exc:
                raise ConfigError(f"{prefix}mounts: {exc}") from None
        elif is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(f"{prefix}{key} must be a table")
            _apply(current, value, f"{prefix}{key}.")
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{prefix}{key} must be a table")
            for k, v in value.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ConfigError(f"{prefix}{key}.{k} must be a number, got {v!r}")
                current[k] = float(v)
        else:
            _check_type(f"{prefix}{key}", current, value)
            setattr(target, key, value)


def _check_type(key: str, default, value) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, list):
        ok, kind = isinstance(value, list) and all(isinstance(v, str) for v in value), "an array of strings"
    elif isinstance(default, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, kind = number and isinstance(value, int), "an integer"
    elif isinstance(default, float) or default is None:
        ok, kind = number, "a number"
    else:
        ok, kind = isinstance(value, str), "a string"
    if not ok:
        raise ConfigError(f"{key} must be {kind}, got {value!r}")


def config_files(repo_root: Path | None) -> list[Path]:
    if os.environ.get("MEMLANE_CONFIG"):
        return [Path(os.environ["MEMLANE_CONFIG"]).expanduser()]
    files = [config_home() / "config.toml"]
    if repo_root is not None:
        files.append(repo_root / REPO_FILE)
    return files


#: a config file is a page of settings: a larger one (a cloned repository's, most likely) is not read
CONFIG_MAX_BYTES = 1_000_000


def _read_config(path: Path, *, within: Path | None = None) -> str:
    """``path``'s text, refused (``OSError``) past ``CONFIG_MAX_BYTES``: a repository that ships a
    1 GB ``.memlane.toml`` would otherwise make every hook read and parse it (~14 s). Opened without
    waiting and checked once open: a file swapped for a pipe after ``is_file`` said yes would hold
    the hook at ``open`` until something wrote to it. With ``within``, the file opened must be one
    that lies there, its links followed: judged after the open, on the file held open, so a link
    swapped in between a check and the open cannot lead the read outside."""
    import stat

    with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
        held = os.fstat(handle.fileno())
        if not stat.S_ISREG(held.st_mode):
            raise OSError("not a regular file")
        if within is not None and not _held_within(path, held, within):
            raise OSError("it is a link to a file outside the repository")
        data = handle.read(CONFIG_MAX_BYTES + 1)
    if len(data) > CONFIG_MAX_BYTES:
        raise OSError(f"larger than {CONFIG_MAX_BYTES:,} bytes: not read")
    return data.decode("utf-8")


def _held_within(path: Path, held: os.stat_result, root: Path) -> bool:
    """Whether the file held open (``held``, its ``fstat``) is the one ``path`` leads to now, and
    that one lies within ``root``."""
    resolved = os.path.realpath(path)  # once: the file judged is the file compared
    try:
        now = os.stat(resolved)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino) and lies_within(resolved, root)


def lies_within(path: str | Path, root: str | Path) -> bool:
    """Whether ``path``, its links followed, is ``root`` or lies under it (links followed too)."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except (OSError, ValueError):
        return False


def _parse_toml(text: str) -> dict:
    """``text`` as TOML; nesting past the recursion limit (``a = [[[[…]]]]``, a few hundred KB) is a
    ``TOMLDecodeError`` like any other unreadable file, not a ``RecursionError`` that turns memory off."""
    import tomllib

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("its values are nested too deeply to read") from None


def load_config(repo_root: Path | None = None, *, files: list[Path] | None = None) -> Config:
    """Defaults, overridden by each existing config file in turn. The repository's own file
    (``.memlane.toml``) may only narrow what the user's files say (``guards/trust.py``): what
    it may not change is left out and listed in ``config.refused``, never an error."""
    config = Config()
    repo_file = (repo_root / REPO_FILE) if repo_root is not None and files is None \
        and not os.environ.get("MEMLANE_CONFIG") else None
    for path in files if files is not None else config_files(repo_root):
        if not path.is_file():
            if path == repo_file and (path.is_symlink() or path.exists()):  # a folder, a device, a pipe: said
                config.refused.append({"key": "(the whole file)", "reason": "unreadable: not a regular file"})
                config.repository_file = str(path)
            continue
        import tomllib  # ~20 ms: only when there is a file to read

        try:
            # a link out of the repository: not its own
            data = _parse_toml(_read_config(path, within=repo_root if path == repo_file else None))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
            if path == repo_file:
                config.refused.append({"key": "(the whole file)", "reason": f"unreadable: {exc}"})
                config.repository_file = str(path)
                continue
            raise ConfigError(f"{path}: {exc}", path=path) from None
        if path == repo_file:
            before = config.team.name
            config = _apply_repository(config, data, repo_root)
            config.repository_file = str(path)
            config.team_named_by_repository = config.team.name != before
        else:
            try:
                _apply(config, data, "")
                _absolute_paths(config, path.parent)
            except ConfigError as exc:
                raise ConfigError(f"{path}: {exc}", path=path) from None
        config.sources.append(str(path))
    user_files = [s for s in config.sources if s != config.repository_file]
    try:
        return config.validate()
    except ConfigError as exc:
        if not user_files:
            raise
        raise ConfigError(f"{', '.join(user_files)}: {exc}", path=Path(user_files[-1])) from None


def _apply_repository(config: Config, data: dict, repo_root: Path) -> Config:
    """Apply what a repository's config may change, key by key: a key that does not validate is
    refused like one the policy forbids, and the others still apply."""
    import copy

    from .guards.trust import screen_repository_config

    kept, refused = screen_repository_config(data, config, repo_root)
    config.refused.extend(r.as_dict() for r in refused)
    for section, values in kept.items():
        for key, value in values.items():
            trial = copy.deepcopy(config)
            try:
                if key == "mounts":
                    trial.stores.mounts = []  # the screened list replaces nothing of the user's: re-add both
                    _apply(trial, {section: {key: value}}, "")
                    trial.stores.mounts = config.stores.mounts + trial.stores.mounts
                else:
                    _apply(trial, {section: {key: value}}, "")
                trial.validate()
            except ConfigError as exc:
                config.refused.append({"key": f"{section}.{key}", "reason": str(exc)})
                continue
            config = trial
    return config


def _absolute_paths(config: Config, base: Path) -> None:
    """``~`` expanded and relative paths made absolute (against the file's folder) wherever a
    user config file names a path."""
    def absolute(value: str) -> str:
        return value if not value or value == "auto" else str((base / Path(value).expanduser()).absolute())

    config.index.path = absolute(config.index.path)
    config.stores.user_store = absolute(config.stores.user_store)
    for mount in config.stores.mounts:
        mount.path = absolute(mount.path)
    d = config.domains
    d.docs, d.transcripts, d.code = ([absolute(v) for v in values] for values in (d.docs, d.transcripts, d.code))


DEFAULT_CONFIG_TOML = """\
# memlane configuration. Every key is optional; shown values are the defaults.

[stores]
claude_code = true        # read Claude Code's memory folder for the current git repository
# user_store = "~/.local/share/memlane/user"   # your cross-project notes (user scope)
# [[stores.mounts]]
# path = "~/work/team-notes"
# scope = "project"       # "user" or "project"; on a name conflict the narrower (project) wins

[embed]
model = "default"         # a registered embedder, "default", or "none" for keyword-only
long_notes = "whole"      # whole | description | chunks

[retrieve]
fusion = "hybrid"         # hybrid | rrf | keyword | vector
vector_weight = 0.7
keyword_weight = 0.3
min_score = 0.30
k = 5

[retrieve.fts_weights]
name = 4.0
description = 3.0
keywords = 4.0
body = 1.0

[associate]
spread = true             # linked notes that are plausibly relevant join the notes a prompt found
decay = 0.7
fan = 1.0                 # a note with n links sends 1/n of its activation to each
constellations = true     # a set of mutually linked notes is recalled together
constellation_min = 3
constellation_max = 8

[score]                   # final = relevance x importance x recency
hub_weight = 0.1
importance_weight = 0.05
recency_weight = 0.1
superseded_factor = 0.1

[lifecycle]               # Darwinian decay, from the hit-log and file dates
dormant_days = 30
archive_days = 90

[inject]                  # what the agent hooks inject
identity_tokens = 200     # layer 1 at session start: your user notes
project_tokens = 500      # layer 2 at session start: critical project facts
room_tokens = 2000        # layer 3 per prompt
deep_tokens = 4000        # layer 4 (deep search): "auto" = when layer 3 finds nothing
deep = "auto"
max_chars = 10000         # Claude Code's cap per injection
default_bracket = "moderate"   # when the context fill is unknown: fresh | moderate | depleted
refresh_minutes = 120     # a note already injected in this session comes again after this long
menu_lines = 8            # then, one line each, further notes the agent may open if they apply (0: none)
menu_tokens = 250         # ... within this many tokens

[domains]                 # other sources, each recalled in its own bucket (recall --domains, hook layer 4, MCP)
docs = []                 # markdown folders mounted as libraries: "~/work/adr"
transcripts = []          # Claude Code transcript folders; "auto": this repository's sessions
code = []                 # working trees whose symbols are recalled; "auto": this repository
ceiling = 12              # results per recall, shared equally among the active domains
in_hooks = true           # layer 4 (deep) draws on every domain configured here
room_knowledge = 0.6      # a document section at least this relevant may join layer 3

[privacy]                 # private: true notes never reach an agent; these files are never read
exclude = []              # globs on the path in its folder, the absolute path or the name: "personal/*"

# [team]                  # team memory on PostgreSQL (pip install 'memlane[team]'; docs/team.md)
# dsn = "postgresql://alice@db.example.com/memlane"   # or $MEMLANE_TEAM_DSN; never in a repository's file
# name = "backend"        # the team (a repository's .memlane.toml may name it)
# timeout_ms = 400        # the most a recall waits for the team store (then local scopes only)

# [judge]                 # a model chooses which recalled notes apply (docs/judge.md); off unless set here
# url = "http://localhost:11434/v1"   # an OpenAI-compatible server (Ollama, llama.cpp's llama-server, vLLM) ...
# model = "qwen2.5:1.5b-instruct"
# command = ["llm", "-m", "gpt-4o-mini"]   # ... or a command: the candidates as JSON on stdin, the chosen on stdout
# timeout_s = 2.0         # past it the ranking stands
"""
