"""Setting up and checking: ``init`` (your config and your own notes' folder), ``index`` (build or
refresh the index now, with progress), ``doctor`` (what is configured, what works, what does not)."""

from __future__ import annotations

from pathlib import Path

from ..progress import ProgressBar
from .common import command, emit, notice, open_memory, skips_in_report

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ...memory import Memory


COMMAND_NAMES = ("init", "index", "doctor")  # the commands ``register`` adds


def register(sub) -> None:
    command(sub, "init", func=cmd_init, help="write your config file and create the folder for your own notes",
            description="Write ~/.config/memlane/config.toml (every setting with its default, commented) and create "
                        "your user store, the folder for notes that follow you across projects. Nothing else needs "
                        "it: memlane reads Claude Code's memory folder for the current repository without it.",
            examples="example:\n  memlane init")
    p = command(sub, "index", func=cmd_index, domains=True, help="build or refresh the index now (incremental), with "
                                                                  "progress",
                description="Bring the index in line with the notes (and the other sources configured or given): "
                            "only what changed is read again; new text is embedded.",
                examples="examples:\n  memlane index\n  memlane index --no-embed --store ~/notes")
    p.add_argument("--no-embed", action="store_true", help="update the keyword index only")
    command(sub, "doctor", func=cmd_doctor, help="what is configured, where the index lives, whether the hooks and "
                                                 "daemon work",
            description="Everything memlane would use here, and whether it works: config files (and what a "
                        "repository's config was refused), memory folders, the index, the embedding model, the "
                        "agents whose hooks are installed, the MCP server, the background daemon.",
            examples="example:\n  memlane doctor")


def cmd_init(args) -> int:
    from ...config import DEFAULT_CONFIG_TOML, config_home

    config_file = config_home() / "config.toml"
    created = []
    if not config_file.exists():
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(DEFAULT_CONFIG_TOML, encoding="utf-8")
        created.append(str(config_file))
    memory = open_memory(args)
    user_store = memory.config.user_store_path()
    if not user_store.exists():
        user_store.mkdir(parents=True)
        (user_store / "MEMORY.md").write_text("", encoding="utf-8")
        created.append(str(user_store))
        memory.close()
        memory = open_memory(args)  # opened before the user store was there: it would not list it
    data = {"created": created, **memory.doctor()}
    lines = [f"created {c}" for c in created] or ["already initialised"]
    lines.append(f"stores: {', '.join(s['path'] for s in data['stores']) or '(none yet)'}")
    lines.append(f"claude code memory: {data['claude_code_memory']}")
    lines.append("next: memlane add … writes a note; memlane recall \"…\" finds notes (the index builds itself); "
                 "memlane install claude gives them to Claude Code")
    emit(args, data, "\n".join(lines))
    return 0


def _interrupted(memory: "Memory", *, embed: bool) -> str:
    """What a Ctrl-C during ``memlane index`` leaves: the notes are files, untouched; the index
    keeps every batch of vectors stored so far (each batch is stored whole), and the next run
    embeds only what is still missing."""
    import sqlite3

    try:
        notes = memory.index.counts()["units"]
        name = memory.embedder_name() if embed else None
        pending = memory.index.pending_count(name) if name else 0
        embedded = memory.index.embedded_units().get(name, 0) if name else 0
    except (sqlite3.Error, OSError):
        return ("memlane: interrupted; your notes are untouched. Run `memlane index` again to carry on: "
                "what was embedded is kept and not embedded again.")
    kept = f"{notes} note(s) in the index" + (f", {embedded} of them embedded" if name else "")
    left = f" ({pending} note text(s) still to embed)" if pending else ""
    return (f"memlane: interrupted; your notes are untouched and the index keeps what it had: {kept}{left}. "
            "Run `memlane index` again to carry on: what was embedded is not embedded again.")


def cmd_index(args) -> int:
    memory = open_memory(args)
    bar = ProgressBar()
    with skips_in_report():  # its report lists each skipped file
        try:
            report = memory.refresh(embed=not args.no_embed, progress=bar, force=True)
            memory.settle_graph()  # hubs, clusters and constellations a large store's link edit left to settle
        except KeyboardInterrupt:
            bar.close()
            import sys

            sys.stderr.write(_interrupted(memory, embed=not args.no_embed) + "\n")
            return 130
        finally:
            bar.close()
    notice(memory)
    text = (f"{report['notes']} notes: {report['added']} added, {report['updated']} updated, "
            f"{report['removed']} removed, {report['unchanged']} unchanged; {report['embedded']} chunks embedded"
            f" ({report['embedder'] or 'keyword-only'}) in {report['seconds']}s\nindex: {memory.index_path}")
    for skip in report["skipped"]:
        text += f"\nskipped {skip['path']}: {skip['reason']}"
    if report.get("excluded"):
        text += f"\n{report['excluded']} file(s) left out by privacy.exclude"
    if report["healed"]:
        text += "\nthe index was corrupt: it was moved aside and rebuilt"
    domains = _index_domains(args, memory)
    for name, done in domains.items():
        counts = ", ".join(f"{k} {v}" for k, v in done.items() if isinstance(v, (int, float)) and k != "excluded")
        text += f"\n{name}: {done['error'] if 'error' in done else counts}"
        text += "".join(f"\n  skipped {s['path']}: {s['reason']}" for s in done.get("skipped", [])
                        if "privacy" not in s.get("reason", ""))
    emit(args, {**report.as_dict(), "index": memory.index_path, "domains": domains}, text)
    return 0


def _index_domains(args, memory: "Memory") -> dict:
    """``memlane index`` also brings the other domains up to date: the mounted ones (--docs,
    --transcripts, --code) or the configured ones."""
    from ...domains.fabric import other_domains

    fabric = other_domains(memory, docs=args.docs, transcripts=args.transcripts, code=args.code, refresh=False,
                           embed_docs=not args.no_embed)
    if fabric is None:
        return {}
    try:
        return fabric.refresh()
    finally:
        fabric.close()


def cmd_doctor(args) -> int:
    """Exit 0 when memory works here, 1 when something keeps it from working (each problem says
    what, where and how to fix it)."""
    from .. import doctor
    from .agents import agent_status

    memory, problems = doctor.open_memory_for_doctor(open_memory, args)
    problems += doctor.check_stores(memory)
    problems += doctor.check_shared_folder(memory)
    refreshed, index_problems = doctor.check_index(memory)
    problems += index_problems
    try:
        data = memory.doctor()
    except Exception as exc:  # noqa: BLE001 - the index could not even be described: that is the finding
        data = {"index": {"path": memory.index_path, "exists": Path(memory.index_path).exists(),
                          "integrity": f"{type(exc).__name__}: {exc}", "units": 0, "embeddings": 0}}
        problems.append(doctor.Problem(f"the index cannot be read: {exc}", memory.index_path,
                                       "move the file aside and run `memlane index`"))
        data = {**_fallback_doctor(memory), **data}
    else:
        problems += doctor.check_integrity(memory, data["index"]["integrity"])
    data["agents"] = agent_status(args)
    problems += doctor.check_team(data.get("team"))
    problems += doctor.check_judge(memory)
    problems += doctor.check_hooks(data["agents"]["hooks"])
    from ..install import mcp_config_path

    committed = doctor.check_committed_mcp(mcp_config_path("shared")[0])  # what a cloned .mcp.json runs
    problems += committed
    problems += doctor.check_mcp({scope: server for scope, server in data["agents"]["mcp"].items()
                                  if not (committed and scope == "shared")})  # said once, as what it runs
    problems += doctor.check_socket_folder()
    data["hook_failures"] = doctor.recent_hook_failures()
    data["problems"] = [p.as_dict() for p in problems]
    data["refresh"] = refreshed
    emit(args, data, "\n".join(_doctor_lines(data, problems)))
    return 1 if problems else 0


def _fallback_doctor(memory: "Memory") -> dict:
    return {"config_files": memory.config.sources or ["(none: defaults)"],
            "repository_config": {"file": memory.config.repository_file, "refused": memory.config.refused},
            "repository": str(memory.repo) if memory.repo else None, "claude_code_memory": "(not checked)",
            "user_store": str(memory.config.user_store_path()), "stores": [],
            "embedder": {"name": None, "status": "not checked"},
            "retrieve": {"fusion": memory.config.retrieve.fusion, "min_score": memory.config.retrieve.min_score,
                         "long_notes": memory.config.embed.long_notes},
            "domains": {"docs": [], "transcripts": [], "code": [], "privacy_exclude": []}}


def _doctor_lines(data: dict, problems) -> list[str]:
    lines = [f"config files: {', '.join(data['config_files'])}"]
    repo_config = data["repository_config"]
    if repo_config["file"]:
        lines.append(f"this repository's config ({repo_config['file']}) may only narrow yours: "
                     + ("everything it asks for applies" if not repo_config["refused"] else
                        f"{len(repo_config['refused'])} setting(s) refused"))
        lines += [f"  refused {r['key']}: {r['reason']}" for r in repo_config["refused"]]
    lines += [f"repository: {data['repository'] or '(not in a git repository)'}",
              f"claude code memory: {data['claude_code_memory']}",
              f"user store: {data['user_store']}"]
    for s in data["stores"]:
        flag = "ok" if s["exists"] else "MISSING"
        lines.append(f"store [{flag}] ({s['scope']}, {s['source']}{', read-only' if s['read_only'] else ''}): "
                     f"{s['path']}{'' if s['has_MEMORY.md'] else '  (no MEMORY.md)'}")
    if not data["stores"]:
        lines.append("stores: none yet (a first note creates this project's: memlane add …; memlane init creates "
                     "yours; --store DIR reads any folder)")
    i = data["index"]
    lines.append(f"index: {i['path']} ({'exists' if i['exists'] else 'not built yet'}; integrity {i['integrity']}; "
                 f"{i['units']} units, {i['embeddings']} vectors)")
    if i.get("not_embedded"):
        lines.append(f"  {i['not_embedded']} note text(s) not embedded yet: recall finds them by keyword only until "
                     "the daemon embeds them in the background (`memlane index` embeds them now, with progress)")
    e = data["embedder"]
    lines.append(f"embedder: {e['name'] or '-'} ({e['status']})")
    team = data.get("team")
    if team:
        lines.append(f"team store: {team['dsn']}, team {team['team']}: " + (
            f"answers as {team['role']}, {team['notes']} notes (schema {team['schema']})" if team["answers"]
            else f"does not answer ({team['problem']})"))
    lines.append(f"retrieve: fusion {data['retrieve']['fusion']}, min_score {data['retrieve']['min_score']}, "
                 f"long notes {data['retrieve']['long_notes']}")
    d = data["domains"]
    lines.append("other sources: " + ("; ".join(f"{name} {', '.join(d[name])}" for name in ("docs", "transcripts", "code")
                                               if d[name]) or "none configured ([domains] docs, transcripts, code)"))
    if d["privacy_exclude"]:
        lines.append(f"privacy.exclude: {', '.join(d['privacy_exclude'])}")
    for agent, where in data["agents"]["hooks"].items():
        lines.append(f"hooks for {agent}: " + (", ".join(f"{scope} ({path})" for scope, path in where.items())
                                               or "not installed (memlane install " + agent + ")"))
    mcp = data["agents"].get("mcp", {})
    lines.append("MCP server for claude: " + (", ".join(f"{scope} ({server['path']})" for scope, server in mcp.items())
                                              or "not registered (memlane install claude --mcp)"))
    daemon = data["agents"]["daemon"]
    lines.append(f"daemon: {'running' if daemon['running'] else 'not running'} ({daemon['socket']})")
    if data["hook_failures"]:
        lines.append("the hooks' last failures (hook.log, past day):")
        lines += [f"  {line}" for line in data["hook_failures"]]
    if problems:
        lines.append(f"\n{len(problems)} problem(s) keep memory from working here:")
        lines += [f"- {p}" for p in problems]
    elif not any(data["agents"]["hooks"].values()) and not mcp:  # it works, and nothing asks it anything
        lines.append("\nmemory works here. No agent uses it yet: `memlane install claude` (or codex, gemini, "
                     "cursor) gives an agent the hooks, `memlane install claude --mcp` the MCP server.")
    else:
        lines.append("\nmemory works here.")
    return lines
