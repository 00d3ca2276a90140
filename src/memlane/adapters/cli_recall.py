"""The reading subcommands: init, index, recall (one store, every domain, or a hook input), show,
status, decay, stats, doctor, eval."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..config import DEFAULT_CONFIG_TOML, config_home, load_config
from ..memory import Depth, Memory
from ..store import git_root
from .cli_agents import _agent_status
from .cli_common import CliError, _emit, _memory, _notice, _refresh_with_progress, _store_args
from .progress import ProgressBar



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
    _emit(args, {**report.as_dict(), "index": memory.index_path, "domains": domains}, text)
    return 0


def _index_domains(args, memory: Memory) -> dict:
    """``memlane index`` also brings the other domains up to date: the mounted ones (--docs,
    --transcripts, --code) or the configured ones."""
    from ..domains.fabric import other_domains

    fabric = other_domains(memory, docs=args.docs, transcripts=args.transcripts, code=args.code, refresh=False,
                           embed_docs=not args.no_embed)
    if fabric is None:
        return {}
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
        elif depth is Depth.INDEX:
            lines.append(f"- [{r['title']}]({r['path']}) — {r['hook']}  [{r['score']:.3f}]{tag}")
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
    _emit(args, {"prompt": prompt, "results": [r.as_dict() for r in results]},
          _format_results(results, depth, args.explain))
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
        out = fabric.as_data(fabric.recall_all(prompt, domains=[d for d in wanted if d in fabric.domains],
                                               ceiling=args.ceiling, filters=filters))
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
    from ..domains.fabric import other_domains
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
    fabric = other_domains(memory, docs=args.docs, transcripts=args.transcripts, code=args.code)
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
    _emit(args, {"report": report, "ranking": [r.as_dict() for r in ranking], "text": injection.text},
          "\n".join(lines))
    return 0


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
             f"skipped files: {data['skipped']} ({data['links_outside']} symlinks out of their folder), "
             f"shadowed by a narrower scope: {data['shadowed']}, "
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
    lines = [f"config files: {', '.join(data['config_files'])}"]
    repo_config = data["repository_config"]
    if repo_config["file"]:
        lines.append(f"this repository's config ({repo_config['file']}) may only narrow yours: "
                     + ("everything it asks for applies" if not repo_config["refused"] else
                        f"{len(repo_config['refused'])} setting(s) refused"))
        lines += [f"  refused {r['key']}: {r['reason']}" for r in repo_config["refused"]]
    lines += [
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
