"""The ``memlane`` command: each subcommand parses its arguments, opens a ``Memory``,
makes one library call, and prints the result (text or ``--json``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from .. import __version__
from ..config import DEFAULT_CONFIG_TOML, ConfigError, Fusion, config_home, load_config
from ..memory import Depth, Memory, demo_store_path
from ..store import git_root
from .progress import ProgressBar

log = logging.getLogger("memlane")


class CliError(Exception):
    """An error to show the user as one line, exit code 2."""


# -- helpers -------------------------------------------------------------------------
def _memory(args) -> Memory:
    stores = list(args.store or [])
    if getattr(args, "demo", False):
        stores.append(str(demo_store_path()))
    for folder in stores:
        if not Path(folder).expanduser().is_dir():
            raise CliError(f"--store {folder}: not a folder")
    return Memory(stores or None, embedder=args.embedder, index_path=args.index)


def _emit(args, data, text: str) -> None:
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")


def _notice(memory: Memory) -> None:
    if memory.embedder_notice:
        sys.stderr.write(f"memlane: {memory.embedder_notice}\n")


# -- commands ------------------------------------------------------------------------
def cmd_init(args) -> int:
    config_file = config_home() / "config.toml"
    created = []
    if not config_file.exists():
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(DEFAULT_CONFIG_TOML, encoding="utf-8")
        created.append(str(config_file))
    memory = _memory(args)
    user_store = memory.config.user_store_path()
    if not user_store.exists():
        user_store.mkdir(parents=True)
        (user_store / "MEMORY.md").write_text("", encoding="utf-8")
        created.append(str(user_store))
    data = {"created": created, **memory.doctor()}
    lines = [f"created {c}" for c in created] or ["already initialised"]
    lines.append(f"stores: {', '.join(s['path'] for s in data['stores']) or '(none yet)'}")
    lines.append(f"claude code memory: {data['claude_code_memory']}")
    lines.append("next: memlane index")
    _emit(args, data, "\n".join(lines))
    return 0


def cmd_index(args) -> int:
    memory = _memory(args)
    bar = ProgressBar()
    try:
        report = memory.refresh(embed=not args.no_embed, progress=bar, force=True)
    finally:
        bar.close()
    _notice(memory)
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
    _emit(args, {**report, "index": memory.index_path, "domains": domains}, text)
    return 0


def _index_domains(args, memory: Memory) -> dict:
    """``memlane index`` also brings the other domains up to date: the mounted ones (--docs,
    --transcripts, --code) or the configured ones."""
    if not (args.docs or args.transcripts or args.code or memory.config.domains.docs
            or memory.config.domains.transcripts or memory.config.domains.code):
        return {}
    from ..domains.fabric import build_fabric

    fabric = build_fabric(memory, docs=args.docs, transcripts=args.transcripts, code=args.code,
                          domains=["knowledge", "transcripts", "code"], embed_docs=not args.no_embed)
    try:
        return fabric.refresh()
    finally:
        fabric.close()


def _format_results(results: list[dict], depth: Depth, explain: bool) -> str:
    if not results:
        return "(nothing relevant)"
    lines = []
    for r in results:
        tag = "" if r["reached"].startswith("seed") else f"  <- {r['reached']}"
        if depth is Depth.IDS:
            lines.append(f"{r['rank']}. {r['name']}  [{r['score']:.3f}]  {r['path']}{tag}")
        else:
            lines.append(f"{r['rank']}. {r['title']}  ({r['type'] or '-'}, {r['scope']})  [{r['score']:.3f}]{tag}")
            lines.append(f"   {r['preview']}")
            lines.append(f"   {r['path']}")
        if depth is Depth.FULL:
            lines.append("")
            lines.extend("   " + line for line in r["body"].splitlines())
            lines.append("")
        if explain and "explain" in r:
            e = r["explain"]
            cos = "-" if e["cosine"] is None else f"{e['cosine']:.3f}"
            bm25 = "-" if e["bm25"] is None else f"{e['bm25']:.3f}"
            fields = "; ".join(f"{f}: {', '.join(t)}" for f, t in e["matched_fields"].items()) or "none"
            lines.append(f"   why: bm25 {bm25} (norm {e['bm25_norm']:.3f}, rank {e['bm25_rank'] or '-'}), "
                         f"cosine {cos} (leg {e['vector']:.3f}, rank {e['vector_rank'] or '-'}), "
                         f"fused {e['fused']:.3f}")
            lines.append(f"   matched fields: {fields}")
            base = "-" if e["base_level"] is None else f"{e['base_level']:.2f}"
            lines.append(f"   score: relevance {e['relevance']:.3f} (text {e['relevance'] - e['activation']:.3f} + "
                         f"association {e['activation']:.3f}) x importance {e['importance']:.3f} x recency {e['recency']:.3f} "
                         f"(base level {base}); state {e['state']}")
            for step in e["path"] or ["seed"]:
                lines.append(f"   path: {step}")
            for note in e["notes"]:
                lines.append(f"   note: {note}")
            if e.get("risk"):
                lines.append(f"   quarantined from automatic injection: {e['risk']}")
    return "\n".join(lines)


def cmd_recall(args) -> int:
    if args.prompt_json:
        return _recall_hook_input(args)
    prompt = " ".join(args.prompt).strip()
    if prompt == "-":
        prompt = sys.stdin.read().strip()
    if not prompt:
        raise CliError("recall needs a prompt (or '-' to read it from stdin)")
    if args.domains or args.docs or args.transcripts or args.code:
        return _recall_domains(args, prompt)
    memory = _memory(args)
    if not memory.specs:
        raise CliError("no memory folders to recall from: pass --store DIR, mount folders in the config "
                       "(memlane init), or run inside a git repository that Claude Code keeps memory for")
    depth = Depth(args.depth)
    _refresh_with_progress(memory)
    results = memory.recall(prompt, k=args.k, depth=depth, explain=args.explain, fusion=args.fusion,
                            include_archived=args.deep, divergent=args.divergent, refresh=False,
                            session=args.session)
    _notice(memory)
    _emit(args, {"prompt": prompt, "results": results}, _format_results(results, depth, args.explain))
    return 0


def _recall_domains(args, prompt: str) -> int:
    """``recall --domains …``: one bucket per domain (D2), each result with its domain, source
    path, address and exact text."""
    from ..domains.fabric import DOMAINS, build_fabric

    if args.domains:
        wanted = [d.strip() for d in args.domains.split(",") if d.strip()]
    else:
        wanted = ["notes"] + [d for d, given in (("knowledge", args.docs), ("transcripts", args.transcripts),
                                                 ("code", args.code)) if given]
    unknown = [d for d in wanted if d not in DOMAINS]
    if unknown:
        raise CliError(f"--domains: unknown {', '.join(unknown)}; the domains are {', '.join(DOMAINS)}")
    for flag, folders in (("--docs", args.docs), ("--transcripts", args.transcripts), ("--code", args.code)):
        for folder in folders or []:
            if not Path(folder).expanduser().exists():
                raise CliError(f"{flag} {folder}: no such folder")
    memory = Memory(_store_args(args), embedder=args.embedder, index_path=args.index)
    fabric = build_fabric(memory, docs=args.docs, transcripts=args.transcripts, code=args.code, domains=wanted)
    missing = [d for d in wanted if d not in fabric.domains]
    if len(missing) == len(wanted):
        raise CliError(f"nothing to recall from: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no "
                       "folders (--store, --docs, --transcripts, --code, or [domains] in the config)")
    try:
        bar = ProgressBar()
        try:
            if "notes" in fabric.domains:
                memory.refresh(progress=bar)
        finally:
            bar.close()
        refreshed = fabric.refresh()
        filters = {"transcripts": {k: v for k, v in (("session", args.in_session), ("since", args.since),
                                                     ("until", args.until), ("project", args.project)) if v},
                   "knowledge": {"path": args.path} if args.path else {},
                   "code": {"path": args.path} if args.path else {}}
        out = fabric.recall_all(prompt, domains=[d for d in wanted if d in fabric.domains], ceiling=args.ceiling,
                                filters=filters)
    finally:
        fabric.close()
    out["missing_domains"] = missing
    # files privacy.exclude keeps out are counted, never listed: their names stay in their scope too
    out["skipped"] = {name: [s for s in report.get("skipped", []) if "privacy" not in s.get("reason", "")]
                      for name, report in refreshed.items()}
    out["skipped"] = {name: skipped for name, skipped in out["skipped"].items() if skipped}
    out["excluded_by_privacy"] = sum(1 for report in refreshed.values() for s in report.get("skipped", [])
                                     if "privacy" in s.get("reason", ""))
    _notice(memory)
    _emit(args, out, _format_buckets(out))
    return 0


def _format_buckets(out: dict) -> str:
    lines = []
    for bucket in out["buckets"]:
        head = f"## {bucket['domain']}"
        if bucket.get("error"):
            lines.append(f"{head}: failed ({bucket['error']})")
            continue
        lines.append(f"{head} (best activation {bucket['activation']:.2f}, {len(bucket['results'])} of at most "
                     f"{out['quota']})" if bucket["results"] else f"{head}: nothing relevant")
        for n, hit in enumerate(bucket["results"], start=1):
            lines.append(f"{n}. {hit['address']}  [{hit['activation']:.2f}]  {hit['path']}")
            if hit.get("why"):
                lines.append(f"   why: {hit['why']}")
            text = hit["text"].strip().splitlines()
            lines += [f"   | {line}" for line in text[:12]] + (["   | …"] if len(text) > 12 else [])
        lines.append("")
    if out.get("missing_domains"):
        lines.append(f"(no folders for: {', '.join(out['missing_domains'])})")
    return "\n".join(lines)


def _recall_hook_input(args) -> int:
    """``recall --prompt-json FILE``: the UserPromptSubmit hook's decision for that input, as a
    dry run, with the ranking's reasons — what would this prompt bring back, and why."""
    from ..inject.layers import user_prompt
    from .hook import parse_payload

    try:
        raw = sys.stdin.read() if args.prompt_json == "-" else Path(args.prompt_json).read_text(encoding="utf-8")
        payload = parse_payload(raw, args.agent)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"--prompt-json {args.prompt_json}: {exc}") from None
    if not str(payload.get("prompt") or "").strip():
        raise CliError(f"--prompt-json {args.prompt_json}: the hook input has no prompt")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and os.path.isdir(payload["cwd"]) else None
    stores = _store_args(args)
    memory = Memory(stores, embedder=args.embedder, index_path=args.index, cwd=cwd)
    if not memory.specs:
        raise CliError("no memory folders to recall from for this input's project: pass --store DIR")
    _refresh_with_progress(memory)
    fabric = _hook_fabric(args, memory)
    try:
        injection = user_prompt(memory, payload, dry_run=True, fabric=fabric)
    finally:
        if fabric is not None:
            fabric.close()
    report = injection.report
    ranking = memory.recall(report["query"], depth=Depth.IDS, explain=True, refresh=False, record=False,
                            include_private=False)
    _notice(memory)
    fill = (f"fill unknown ({report['fill_source']})" if report["fill"] is None else
            f"fill {report['fill']:.0%} of {report['window']:,} tokens, from the {report['fill_source']}")
    lines = [f"bracket: {report['bracket']} — {fill}; {report['bracket_reason']}",
             f"query: {report['query']}"]
    for layer, data in report["layers"].items():
        lines.append(f"layer {layer} recalled: {', '.join(data['recalled']) or 'nothing'}")
    lines += [f"quarantined: {q['name']} ({q['why']})" for q in report["quarantined"]]
    if report["deduplicated"]:
        lines.append(f"already injected in this session: {', '.join(report['deduplicated'])}")
    lines.append(f"would inject {report['chars']:,} characters:" if report["shown"] else "would inject nothing")
    lines += [f"  {s['depth']:5s} {s['name']}  <- {s['reached']}  {s['path']}" for s in report["shown"]]
    if report["omitted"]:
        lines.append(f"  (cut by the budget or the cap: {', '.join(report['omitted'])})")
    lines += ["", "why (the recall ranking for the query):", _format_results(ranking, Depth.IDS, True)]
    if injection.text:
        lines += ["", "--- the injected text ---", injection.text]
    _emit(args, {"report": report, "ranking": ranking, "text": injection.text}, "\n".join(lines))
    return 0


def _hook_fabric(args, memory: Memory):
    """The domains a hook would draw on: the mounted ones (--docs, --transcripts, --code), else
    the configured ones."""
    from .hook import other_domains

    if not (args.docs or args.transcripts or args.code):
        return other_domains(memory)
    from ..domains.fabric import build_fabric

    fabric = build_fabric(memory, docs=args.docs, transcripts=args.transcripts, code=args.code,
                          domains=["knowledge", "transcripts", "code"])
    fabric.refresh()
    return fabric


def _refresh_with_progress(memory: Memory) -> None:
    """On-demand indexing before a read; the first run on a new store embeds every note."""
    bar = ProgressBar()
    try:
        memory.refresh(progress=bar)
    finally:
        bar.close()


def cmd_status(args) -> int:
    memory = _memory(args)
    data = memory.status()
    states = data["states"]
    lines = [f"index: {data['index']}",
             f"notes: {data['notes']} — active {states['active']}, dormant {states['dormant']}, "
             f"archived {states['archived']}",
             f"hit-log: {data['hit_log'] or 'off'}; lifecycle last updated {data['lifecycle_updated'] or 'never'}"]
    if data["most_used"]:
        lines.append("most used:")
        lines += [f"  {u['name']}: {u['refs']} use{'' if u['refs'] == 1 else 's'}, last {u['last_used']}, "
                  f"stability {u['stability']}"
                  for u in data["most_used"]]
    lines.append(f"would change now: {data['pending_total']}" + (" (memlane decay applies it)" if data["pending_total"] else ""))
    lines += [f"  {c['name']}: {c['old']} -> {c['new']} ({c['reason']})" for c in data["pending_changes"]]
    _emit(args, data, "\n".join(lines))
    return 0


def cmd_decay(args) -> int:
    memory = _memory(args)
    data = memory.decay(dry_run=args.dry_run)
    verb = "would change" if args.dry_run else "changed"
    lines = [f"{verb}: {len(data['changes'])} note(s) (dormant after {data['settings']['dormant_days']:g} d, "
             f"archived after {data['settings']['archive_days']:g} d unreferenced, times stability)"]
    lines += [f"  {c['name']}: {c['old']} -> {c['new']} ({c['reason']}; {c['refs']} uses)" for c in data["changes"]]
    if not data["changes"]:
        lines.append("  nothing: every note is where it should be")
    _emit(args, data, "\n".join(lines))
    return 0


def cmd_hook(args) -> int:
    from .daemon import tune_threads
    from .hook import run_hook

    tune_threads()
    return run_hook(args.event, stores=_store_args(args), embedder=args.embedder, index=args.index,
                    explain=args.explain, agent=args.agent)


def cmd_statusline(args) -> int:
    from .hook import run_statusline

    return run_statusline()


def _store_args(args) -> list[str] | None:
    stores = list(args.store or [])
    if getattr(args, "demo", False):
        stores.append(str(demo_store_path()))
    return stores or None


def cmd_serve(args) -> int:
    from .daemon import serve, tune_threads

    tune_threads()
    from .hookclient import ask_daemon, daemon_key, project_root, socket_path, start_daemon

    root = project_root(None)
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    key = daemon_key(root, stores, args.embedder, args.index)
    path = socket_path(key)
    if args.stop:
        reply = ask_daemon(path, "stop")
        sys.stdout.write("stopped\n" if reply is not None else "no daemon running for this store set\n")
        return 0
    if not args.daemon:
        from .hook import _file_logging

        _file_logging()
        return serve(key, root, stores, args.embedder, args.index, idle_minutes=args.idle_minutes)
    if ask_daemon(path, "ping") is not None:
        sys.stdout.write(f"already running: {path}\n")
        return 0
    start_daemon(key, root, stores, args.embedder, args.index)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if ask_daemon(path, "ping") is not None:
            sys.stdout.write(f"started: {path}\n")
            return 0
        time.sleep(0.1)
    sys.stdout.write(f"starting (indexing may take a while; the hooks answer keyword-only meanwhile): {path}\n")
    return 0


def cmd_install(args, *, remove: bool = False) -> int:
    from .install import InstallError, apply, mcp_config_path, plan, plan_mcp, settings_path

    if getattr(args, "mcp", False):
        if args.agent != "claude":
            raise CliError("--mcp registers the MCP server with Claude Code; for other clients run `memlane mcp` "
                           "as a stdio server in their MCP settings")
        return _install_mcp(args, remove, mcp_config_path("user" if args.user else "project"), plan_mcp, apply,
                            InstallError)
    path = settings_path("user" if args.user else "project", agent=args.agent)
    try:
        change = plan(path, args.agent, remove=remove, statusline=getattr(args, "statusline", False))
    except InstallError as exc:
        raise CliError(str(exc)) from None
    verb = "remove memlane from" if remove else "install memlane into"
    if not change.changed:
        sys.stdout.write(f"{path}: nothing to change\n")
        return 0
    if args.dry_run:
        sys.stdout.write(f"would {verb} {path}:\n{change.diff()}")
        return 0
    apply(change)
    done = "removed from" if remove else "installed in"
    notes = {"claude": " (UserPromptSubmit and SessionStart; open /hooks in Claude Code to check)",
             "codex": " (UserPromptSubmit and SessionStart; Codex runs hooks only with [features] codex_hooks = true"
                      " in ~/.codex/config.toml)",
             "gemini": " (BeforeAgent and SessionStart)",
             "cursor": " (sessionStart only: Cursor's beforeSubmitPrompt cannot add context)"}
    sys.stdout.write(f"memlane hooks {done} {path}" + ("" if remove else notes[args.agent]) + "\n")
    return 0


def _install_mcp(args, remove, path, plan_mcp, apply, InstallError) -> int:  # noqa: N803
    try:
        change = plan_mcp(path, remove=remove)
    except InstallError as exc:
        raise CliError(str(exc)) from None
    if not change.changed:
        sys.stdout.write(f"{path}: nothing to change\n")
    elif args.dry_run:
        sys.stdout.write(f"would {'remove memlane from' if remove else 'register memlane in'} {path}:\n{change.diff()}")
    else:
        apply(change)
        sys.stdout.write(f"memlane MCP server {'removed from' if remove else 'registered in'} {path}"
                         + ("" if remove else " (the same as `claude mcp add memlane -- memlane mcp`; needs the "
                            "[mcp] extra: pip install 'memlane[mcp]')") + "\n")
    return 0


def cmd_mcp(args) -> int:
    from .mcp_server import serve

    return serve(_store_args(args), args.embedder, args.index, docs=args.docs, transcripts=args.transcripts,
                 code=args.code)


def cmd_uninstall(args) -> int:
    return cmd_install(args, remove=True)


def cmd_show(args) -> int:
    memory = _memory(args)
    found = memory.show(args.name)
    if not found:
        raise CliError(f"no note named {args.name!r} (try: memlane recall {args.name!r})")
    text = []
    for note in found:
        text.append(f"# {note['title']}  ({note['type'] or '-'}, {note['scope']})\n{note['path']}\n")
        if note["description"]:
            text.append(f"> {note['description']}\n")
        text.append(note["body"] + "\n")
    _emit(args, found, "\n".join(text))
    return 0


def cmd_stats(args) -> int:
    memory = _memory(args)
    data = memory.stats()
    lines = [f"index: {data['index']}",
             f"units: {data['counts']['units']} ({', '.join(f'{k} {v}' for k, v in sorted(data['by_type'].items()))})",
             f"scopes: {', '.join(f'{k} {v}' for k, v in sorted(data['by_scope'].items())) or '-'}",
             f"embedded: {', '.join(f'{k} {v}' for k, v in data['embedded_units'].items()) or 'none'}",
             f"skipped files: {data['skipped']}, shadowed by a narrower scope: {data['shadowed']}, "
             f"excluded by privacy.exclude: {data['excluded']}",
             f"hit-log: {data['hit_log']['records']} recalled units in {data['hit_log']['path']}"
             if data["hit_log"] else "hit-log: off",
             "hubs: " + (", ".join(f"{h['name']} ({h['in_degree']} in)" for h in data["hubs"]) or "none"),
             f"constellations: {len(data['constellations'])}"
             + "".join(f"\n  {' + '.join(g)}" for g in data["constellations"]),
             f"clusters of linked notes: {data['clusters']}",
             f"future-write markers (links to notes not written yet): {len(data['future_writes'])}"
             + "".join(f"\n  {w['from']} -> [[{w['target']}]]" for w in data["future_writes"][:10])]
    if data["supersedes_loops"]:
        lines.append(f"supersedes loops (neither note is demoted): {', '.join(data['supersedes_loops'])}")
    for store in data["stores"]:
        lines.append(f"store ({store['scope']}, {store['source']}): {store['path']}")
    _emit(args, data, "\n".join(lines))
    return 0


def cmd_doctor(args) -> int:
    memory = _memory(args)
    data = memory.doctor()
    lines = [f"config files: {', '.join(data['config_files'])}",
             f"repository: {data['repository'] or '(not in a git repository)'}",
             f"claude code memory: {data['claude_code_memory']}",
             f"user store: {data['user_store']}"]
    for s in data["stores"]:
        flag = "ok" if s["exists"] else "MISSING"
        lines.append(f"store [{flag}] ({s['scope']}, {s['source']}{', read-only' if s['read_only'] else ''}): "
                     f"{s['path']}{'' if s['has_MEMORY.md'] else '  (no MEMORY.md)'}")
    if not data["stores"]:
        lines.append("stores: none (use --store DIR, or mount folders in the config; see memlane init)")
    i = data["index"]
    lines.append(f"index: {i['path']} ({'exists' if i['exists'] else 'not built yet'}; integrity {i['integrity']}; "
                 f"{i['units']} units, {i['embeddings']} vectors)")
    e = data["embedder"]
    lines.append(f"embedder: {e['name'] or '-'} ({e['status']})")
    lines.append(f"retrieve: fusion {data['retrieve']['fusion']}, min_score {data['retrieve']['min_score']}, "
                 f"long notes {data['retrieve']['long_notes']}")
    d = data["domains"]
    lines.append("other domains: " + ("; ".join(f"{name} {', '.join(d[name])}" for name in ("docs", "transcripts", "code")
                                               if d[name]) or "none configured ([domains] docs, transcripts, code)"))
    if d["privacy_exclude"]:
        lines.append(f"privacy.exclude: {', '.join(d['privacy_exclude'])}")
    data["agents"] = _agent_status(args)
    for agent, where in data["agents"]["hooks"].items():
        lines.append(f"hooks for {agent}: " + (", ".join(f"{scope} ({path})" for scope, path in where.items())
                                               or "not installed (memlane install " + agent + ")"))
    daemon = data["agents"]["daemon"]
    lines.append(f"daemon: {'running' if daemon['running'] else 'not running'} ({daemon['socket']})")
    _emit(args, data, "\n".join(lines))
    return 0


def _agent_status(args) -> dict:
    """Which agents have memlane's hooks installed, and whether this store set's daemon answers."""
    from .hookclient import ask_daemon, daemon_key, project_root, socket_path
    from .install import AGENTS, installed, settings_path

    hooks = {}
    for agent in AGENTS:
        found = {}
        for scope in ("project", "user"):
            path = settings_path(scope, agent=agent)
            if installed(path):
                found[scope] = str(path)
        hooks[agent] = found
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    sock = socket_path(daemon_key(project_root(None), stores, args.embedder, args.index))
    return {"hooks": hooks, "daemon": {"socket": sock, "running": ask_daemon(sock, "ping") is not None}}


def cmd_eval(args) -> int:
    try:
        from ..eval import evaluate_path, format_report
    except ImportError as exc:  # pragma: no cover - the eval package is part of memlane
        raise CliError(f"eval is unavailable: {exc}") from None
    path = Path(args.path)
    if not path.exists():
        raise CliError(f"{path}: no such benchmark folder")
    options = {"modes": args.modes.split(","), "ks": [int(k) for k in args.ks.split(",")],
               "limit": args.limit, "embedder": args.embedder, "scope_field": args.scope_field,
               "include_types": _split(args.include_type), "exclude_types": _split(args.exclude_type),
               "config": load_config(git_root(Path.cwd()))}
    result = evaluate_path(path, **{k: v for k, v in options.items() if v is not None})
    _emit(args, result, format_report(result))
    return 0


def _split(value: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


# -- parser --------------------------------------------------------------------------
def _writing(call):
    """``call()``, with a write memlane refuses as a one-line CLI error."""
    from ..store.write import WriteError

    try:
        return call()
    except WriteError as exc:
        raise CliError(str(exc)) from None


def cmd_add(args) -> int:
    from ..store.write import Draft

    body = sys.stdin.read() if args.body == "-" else args.body
    draft = Draft(name=args.name, description=args.description, body=body, type=args.type, title=args.title,
                  recall=args.recall, paths=args.paths, importance=args.importance, kind=args.kind,
                  private=args.private)
    out = _writing(lambda: _memory(args).add(draft, apply=args.apply, to=args.to, dry_run=args.dry_run))
    lines = [f"{out['advice']}: {out['reason']}"]
    for c in out["candidates"]:
        cosine = "" if c["cosine"] is None else f", cosine {c['cosine']:.3f}"
        lines.append(f"  {c['name']}  closeness {c['closeness']:.2f} (word overlap {c['word_overlap']:.2f}{cosine})"
                     + (f"; disagrees: {c['disagreement']}" if c["disagreement"] else "") + f"  {c['path']}")
    if out["written"]:
        lines.append(f"written: {out['written']}")
    elif out["advice"] == "NOOP":
        lines.append("nothing written: the note would say nothing new")
    elif not args.dry_run:
        lines.append("nothing written: add --apply to follow the advice")
    _emit(args, out, "\n".join(lines))
    return 0


def cmd_link(args) -> int:
    out = _writing(lambda: _memory(args).suggest_links(args.suggest, apply=args.apply, k=args.k))
    lines = [f"links for {out['note']} ({out['path']}):"]
    lines += [f"  [[{s['name']}]]  {s['why']}" for s in out["suggestions"]] or ["  none: nothing related and unlinked"]
    if out["applied"]:
        lines.append("written: a 'Related:' line at the end of the note")
    elif out["suggestions"]:
        lines.append("add --apply to write them")
    _emit(args, out, "\n".join(lines))
    return 0


def cmd_set_state(args) -> int:
    memory = _memory(args)
    out = _writing(lambda: memory.archive(args.name) if args.state == "archived" else memory.restore(args.name))
    verb = "archived" if args.state == "archived" else "restored"
    _emit(args, out, f"{out['name']}: {verb}" if out["changed"] else f"{out['name']}: already {args.state}")
    return 0


def _memory_with_notes(args) -> Memory:
    memory = _memory(args)
    if not memory.specs:
        raise CliError("no memory folders: pass --store DIR, mount folders in the config, or run inside a git "
                       "repository that Claude Code keeps memory for")
    return memory


def cmd_lint(args) -> int:
    """``memlane lint``: the report (text or ``--json``); exit 1 at ``--fail-on`` or worse."""
    from ..lint import exit_code, format_text, lint

    memory = _memory_with_notes(args)
    try:
        report = lint(memory, checks=args.check)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    _notice(memory)
    _emit(args, report.to_dict(), format_text(report))
    return exit_code(report, args.fail_on)


def cmd_graph(args) -> int:
    """``memlane graph``: ``--html OUT`` writes the page, ``--dot`` / ``--mermaid`` print the
    graph; ``--json`` prints the data instead (with the DOT or Mermaid text, or the page's path)."""
    from ..picture import graph_data, to_dot, to_html, to_mermaid

    data = graph_data(_memory_with_notes(args), recent=args.recent)
    if args.html:
        out = Path(args.html).expanduser()
        if out.is_dir():
            raise CliError(f"--html {out}: is a folder; give a file name such as {out / 'memory.html'}")
        try:
            out.write_text(to_html(data), encoding="utf-8")
        except OSError as exc:
            raise CliError(f"--html {out}: cannot write it ({exc.strerror or exc})") from None
    if args.json:
        extra = ({"html": str(Path(args.html).expanduser().resolve())} if args.html
                 else {"dot": to_dot(data)} if args.dot else {"mermaid": to_mermaid(data)})
        _emit(args, data | extra, "")
    elif args.html:
        sys.stdout.write(f"wrote {args.html}: {len(data['nodes'])} notes, {len(data['edges'])} links, "
                         f"{len(data['constellations'])} constellations, {len(data['recent'])} recent recalls\n")
    else:
        sys.stdout.write(to_dot(data) if args.dot else to_mermaid(data))
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", action="append", metavar="DIR",
                        help="use this memory folder directly (repeatable); no config or init needed")
    common.add_argument("--demo", action="store_true", help="use the bundled demo store")
    common.add_argument("--docs", action="append", metavar="DIR",
                        help="mount a markdown folder as a knowledge library (repeatable; recall --domains)")
    common.add_argument("--transcripts", action="append", metavar="DIR",
                        help="mount a folder of Claude Code session transcripts (repeatable; recall --domains)")
    common.add_argument("--code", action="append", metavar="DIR",
                        help="mount a working tree's code symbols (repeatable; recall --domains)")
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    common.add_argument("--embedder", metavar="NAME",
                        help="embedder to use (a registered name, or 'none' for keyword-only)")
    common.add_argument("--index", metavar="FILE", help="index file (default: one per store set in the cache)")
    common.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")

    parser = argparse.ArgumentParser(prog="memlane", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"memlane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("init", parents=[common], help="write a config file and create the user store")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("index", parents=[common], help="build or refresh the index (incremental)")
    p.add_argument("--no-embed", action="store_true", help="update the full-text index only")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("recall", parents=[common], help="the notes worth showing for a prompt")
    p.add_argument("prompt", nargs="*", help="the prompt ('-' reads stdin)")
    p.add_argument("--prompt-json", metavar="FILE",
                   help="a hook's input JSON ('-' for stdin): show exactly what that prompt would inject, in which "
                        "bracket, and why each note ranks where it does (a dry run: nothing is recorded)")
    p.add_argument("--agent", choices=["claude", "codex", "gemini", "cursor"], default="claude",
                   help="with --prompt-json: whose hook input it is")
    p.add_argument("--k", type=int, default=None, help="at most this many results (default from config: 5)")
    p.add_argument("--depth", choices=[d.value for d in Depth], default=Depth.SUMMARY.value,
                   help="ids | summary | full")
    p.add_argument("--explain", action="store_true", help="show why each note came back")
    p.add_argument("--fusion", choices=[f.value for f in Fusion], help="override the fusion method")
    p.add_argument("--deep", "--archived", dest="deep", action="store_true",
                   help="deep mode: search archived notes too (a recalled archived note becomes active again)")
    p.add_argument("--divergent", action="store_true",
                   help="add remote associates from other clusters of the link graph (for ideation)")
    p.add_argument("--session", help="the agent session id, recorded in the hit-log")
    p.add_argument("--domains", metavar="LIST",
                   help="recall from these domains, one bucket each: notes,knowledge,transcripts,code (default with "
                        "--docs/--transcripts/--code: notes and the mounted ones)")
    p.add_argument("--ceiling", type=int, help="results across all domains, shared equally (default 12)")
    p.add_argument("--in-session", metavar="ID", help="transcripts: only this session (an id or its prefix)")
    p.add_argument("--since", metavar="DATE", help="transcripts: only turns at or after this ISO date/time")
    p.add_argument("--until", metavar="DATE", help="transcripts: only turns before this ISO date/time")
    p.add_argument("--project", metavar="TEXT", help="transcripts: only this project (part of its folder or cwd)")
    p.add_argument("--path", metavar="GLOB", help="knowledge and code: only files matching this glob")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("add", parents=[common], help="write a note, after comparing it with the nearest notes "
                       "(advice: ADD, UPDATE, SUPERSEDE or NOOP)")
    p.add_argument("--name", required=True, help="the note's name (its file: <type>_<name>.md)")
    p.add_argument("--description", required=True, help="when the note applies: 'when deciding …' (recall keys on it)")
    p.add_argument("--type", default="project", choices=["user", "feedback", "project", "reference"],
                   help="the note's type (default: project)")
    p.add_argument("--body", default="", help="the note's text ('-' reads stdin)")
    p.add_argument("--title", help="its MEMORY.md title (default: the name)")
    p.add_argument("--recall", action="append", default=[], metavar="KEYWORD", help="a recall keyword (repeatable)")
    p.add_argument("--paths", action="append", default=[], metavar="GLOB", help="a file trigger glob (repeatable)")
    p.add_argument("--importance", type=float, help="0-1")
    p.add_argument("--kind", help="principle | correction | decision | guideline | pitfall | process | model")
    p.add_argument("--private", action="store_true", help="yours only: never injected into an agent (G3)")
    p.add_argument("--to", metavar="DIR", help="the folder to write into (default: the first writable project store)")
    p.add_argument("--apply", action="store_true", help="follow the advice (UPDATE / SUPERSEDE); an ADD is written anyway")
    p.add_argument("--dry-run", action="store_true", help="only show the advice")
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("link", parents=[common], help="propose [[links]] from a note to related notes (A-MEM)")
    p.add_argument("--suggest", required=True, metavar="NAME", help="the note to propose links for")
    p.add_argument("--apply", action="store_true", help="append them to the note as a 'Related:' line")
    p.add_argument("--k", type=int, default=5, help="at most this many")
    p.set_defaults(func=cmd_link)

    for verb, what in (("archive", "archive a note by hand (out of default recall; its file stays)"),
                       ("restore", "bring an archived note back into recall")):
        p = sub.add_parser(verb, parents=[common], help=what)
        p.add_argument("name", help="the note (a name, a file name or a path)")
        p.set_defaults(func=cmd_set_state, state="archived" if verb == "archive" else "active")

    p = sub.add_parser("lint", parents=[common], help="check the notes: links, orphans, duplicates, contradictions, "
                       "descriptions, sizes, injection risk, the MEMORY.md index (W3)")
    p.add_argument("--fail-on", choices=["error", "warning", "never"], default="error",
                   help="exit 1 when a finding at this level (or worse) exists (default: error)")
    p.add_argument("--check", action="append", metavar="NAME", help="run only this check (repeatable)")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("graph", parents=[common], help="a picture of memory: notes, links, constellations, "
                       "hubs and the last recalls (X5)")
    form = p.add_mutually_exclusive_group(required=True)
    form.add_argument("--html", metavar="OUT", help="write one self-contained HTML file (no network)")
    form.add_argument("--dot", action="store_true", help="print the graph in Graphviz DOT")
    form.add_argument("--mermaid", action="store_true", help="print the graph as a Mermaid flowchart")
    p.add_argument("--recent", type=int, default=20, metavar="N", help="highlight the last N recalled notes")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("status", parents=[common], help="lifecycle: active / dormant / archived notes, most used")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("decay", parents=[common], help="move idle notes to dormant / archived (from the hit-log)")
    p.add_argument("--dry-run", action="store_true", help="show what would change and why, change nothing")
    p.set_defaults(func=cmd_decay)

    p = sub.add_parser("hook", parents=[common],
                       help="a Claude Code hook: reads the event JSON on stdin, prints what to inject")
    p.add_argument("event", choices=["session-start", "user-prompt-submit"],
                   help="session-start (layers 1-2) or user-prompt-submit (layers 3-4)")
    p.add_argument("--explain", action="store_true",
                   help="print what would be injected, in which bracket and why, instead of the hook JSON")
    p.add_argument("--agent", choices=["claude", "codex", "gemini", "cursor"], default="claude",
                   help="the agent whose input and output shape to use (Gemini: BeforeAgent; Cursor: additional_context)")
    p.set_defaults(func=cmd_hook)

    p = sub.add_parser("statusline", help="a statusline command: records the context fill for the hooks")
    p.set_defaults(func=cmd_statusline)

    p = sub.add_parser("serve", parents=[common], help="the resident recall daemon the hooks talk to")
    p.add_argument("--daemon", action="store_true", help="start it in the background and return")
    p.add_argument("--stop", action="store_true", help="stop the daemon serving this store set")
    p.add_argument("--idle-minutes", type=float, default=30.0, help="exit after this long without a request")
    p.add_argument("--wait", type=float, default=30.0, help="with --daemon: seconds to wait until it answers")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("install", help="register memlane's hooks with an agent (merges, idempotent)")
    p.add_argument("agent", choices=["claude", "codex", "gemini", "cursor"], help="the agent whose settings to change")
    p.add_argument("--user", action="store_true",
                   help="the agent's settings in your home directory (all projects) instead of this repository's")
    p.add_argument("--statusline", action="store_true",
                   help="also make memlane the statusline (it records the context fill for the hooks)")
    p.add_argument("--mcp", action="store_true", help="register the MCP server instead (.mcp.json, or "
                   "~/.claude.json with --user)")
    p.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")
    p.set_defaults(func=cmd_install)

    p = sub.add_parser("mcp", parents=[common], help="serve memory over MCP on stdio (recall, get, related, "
                       "remember, archive, restore; memory:// resources)")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("uninstall", help="remove memlane's hooks from an agent's settings")
    p.add_argument("agent", choices=["claude", "codex", "gemini", "cursor"], help="the agent whose settings to change")
    p.add_argument("--user", action="store_true", help="the settings in your home directory instead of the repository's")
    p.add_argument("--mcp", action="store_true", help="unregister the MCP server instead")
    p.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")
    p.set_defaults(func=cmd_uninstall)

    p = sub.add_parser("show", parents=[common], help="print a note in full")
    p.add_argument("name", help="note name, file name or path")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("stats", parents=[common], help="counts by type and scope, index size")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("doctor", parents=[common], help="what is configured, where the index lives, embedder status")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("eval", parents=[common], help="run a retrieval benchmark (corpus/queries/qrels or notes+prompts)")
    p.add_argument("path", help="benchmark folder")
    p.add_argument("--modes", default="keyword,vector,hybrid",
                   help="comma list of keyword, vector, hybrid, rrf, spread, scored, full, divergent, keyword-full")
    p.add_argument("--ks", default="1,3,5,10", help="cutoffs, comma list")
    p.add_argument("--limit", type=int, help="at most N queries, sampled evenly across the file")
    p.add_argument("--include-type", metavar="T,..", help="only queries of these types/kinds/categories")
    p.add_argument("--exclude-type", metavar="T,..", help="skip these (e.g. 5 for LoCoMo's adversarial)")
    p.add_argument("--scope-field", help="per-query scoping field (default: auto-detect)")
    p.set_defaults(func=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                        format="memlane: %(message)s", stream=sys.stderr)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except (CliError, ConfigError) as exc:
        sys.stderr.write(f"memlane: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `memlane recall ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
