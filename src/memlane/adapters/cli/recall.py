"""``memlane recall``: what a prompt brings back, and why — from the notes, from other sources
(``--docs``, ``--transcripts``, ``--code``, ``--domains``), or exactly as a hook input would inject it
(``--prompt-json``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ...modes import Depth, Fusion
from ...errors import UsageError
from ..agents import DEFAULT, NAMES
from ..progress import ProgressBar
from .common import (command, emit, kind_and_scope, notice, open_memory, positive_int, refresh_with_progress, rendered,
                     result_count, say_once, store_args, withhold)

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ...memory import Memory

EXAMPLES = """\
examples:
  memlane recall "why does the deploy keep failing?"
  memlane recall --store ~/notes --k 3 --explain "ready to merge the upload change?"
  memlane recall --depth full --json "how do we key CI caches?"
  memlane recall --docs docs/ --transcripts auto "have we done this migration before?"
  memlane recall --prompt-json hook-input.json      # what that prompt would inject, and why
"""


COMMAND_NAMES = ("recall",)  # the commands ``register`` adds


def register(sub) -> None:
    p = command(sub, "recall", func=cmd_recall, domains=True, help="the notes worth showing for a prompt, and why",
                description="Recall the notes that apply to a prompt — by what it means, not only its words — with "
                            "the notes they link to, best first.", examples=EXAMPLES)
    p.add_argument("prompt", nargs="*", help="the prompt ('-' reads it from stdin)")
    p.add_argument("--k", type=result_count, default=None, metavar="N",
                   help="at most this many notes (default from the config: 5)")
    p.add_argument("--depth", choices=[d.value for d in Depth], default=Depth.SUMMARY.value,
                   help="how much of each note: ids, index (its line), summary (a preview) or full")
    p.add_argument("--explain", action="store_true", help="show why each note came back: both searches, the "
                                                          "links that brought it, the score's factors")
    p.add_argument("--fusion", choices=[f.value for f in Fusion], help="how the keyword and meaning searches combine")
    p.add_argument("--deep", "--archived", dest="deep", action="store_true",
                   help="search archived notes too (a recalled archived note becomes active again)")
    p.add_argument("--divergent", action="store_true",
                   help="add remote associates from other parts of the link graph (for ideation)")
    p.add_argument("--session", help="the agent session id, recorded in the hit-log")
    p.add_argument("--unscreened", action="store_true",
                   help="show the text of a note that reads as an instruction to the agent too, for a person at a "
                        "terminal (by default it is withheld, as the hooks and the MCP server withhold it)")
    p.add_argument("--wait", action="store_true",
                   help="embed whatever is new first, with progress, however long it takes (by default a recall "
                        "never waits: it answers by keyword while new notes are embedded in the background)")
    p.add_argument("--prompt-json", metavar="FILE",
                   help="a hook's input JSON ('-' for stdin): show what that prompt would inject, how deep, and why "
                        "(a dry run: nothing is recorded)")
    p.add_argument("--agent", choices=NAMES, default=DEFAULT, help="with --prompt-json: whose hook input it is")
    group = p.add_argument_group("several sources at once")
    group.add_argument("--domains", metavar="LIST",
                       help="recall from these, one list each: notes,knowledge,transcripts,code (default with "
                            "--docs/--transcripts/--code: the notes and what those mount)")
    group.add_argument("--ceiling", type=positive_int, metavar="N", help="results across all sources, shared equally")
    group.add_argument("--in-session", metavar="ID", help="transcripts: only this session (an id or its prefix)")
    group.add_argument("--since", metavar="DATE", type=_iso_date,
                       help="transcripts: only turns at or after this date/time (ISO: 2026-05-01, 2026-05-01T09:30)")
    group.add_argument("--until", metavar="DATE", type=_iso_date,
                       help="transcripts: only turns before this date/time (a bare date: to its end)")
    group.add_argument("--project", metavar="TEXT", help="transcripts: only this project (part of its folder)")
    group.add_argument("--path", metavar="GLOB", help="docs and code: only files matching this glob")


def _iso_date(text: str) -> str:
    """``--since``/``--until``: an ISO date or datetime, refused at once when it is not one (it
    filters transcripts only, where a bad one failed that list alone and the command said nothing)."""
    import argparse

    from ...domains.transcripts import _epoch

    if _epoch(text) is None:
        raise argparse.ArgumentTypeError(f"{text[:100]!r} is not an ISO date or datetime (e.g. 2026-05-01, "
                                         "2026-05-01T09:30)")
    return text


#: the options that narrow another source's list: the source, and how to add it to a recall
FILTERS = {"in_session": "transcripts", "since": "transcripts", "until": "transcripts", "project": "transcripts",
           "path": "docs or code"}
ADD_SOURCE = {"transcripts": "--transcripts DIR (auto: Claude Code's)", "docs or code": "--docs DIR or --code DIR"}


def cmd_recall(args) -> int:
    if args.prompt_json:
        return _recall_hook_input(args)
    prompt = " ".join(args.prompt).strip()
    if prompt == "-":
        prompt = sys.stdin.read().strip()
    if not prompt:
        raise UsageError("recall needs a prompt (or '-' to read it from stdin)")
    if args.unscreened and not sys.stdin.isatty():  # an agent's shell has no terminal; a person has one
        raise UsageError("--unscreened is for a person at a terminal (this command's input is not one)")
    if args.domains or args.docs or args.transcripts or args.code:
        return _recall_domains(args, prompt)
    given = [name for name in FILTERS if getattr(args, name)]
    if given:  # notes alone take none of them: said, not ignored
        source = FILTERS[given[0]]
        raise UsageError(f"--{given[0].replace('_', '-')} narrows {source}, which this recall does not search: "
                         f"add {ADD_SOURCE[source]}, or --domains")
    request = {"prompt": prompt, "k": args.k, "depth": args.depth, "explain": args.explain, "fusion": args.fusion,
               "deep": args.deep, "divergent": args.divergent, "session": args.session, "json": args.json,
               "unscreened": args.unscreened}
    wait = args.wait or args.demo  # the demo is there to show recall by meaning: it embeds its 50 notes first
    if not wait and not args.unscreened and _through_daemon(args, request):
        return 0
    memory = open_memory(args)
    if not memory.specs:
        raise UsageError("no memory folders to recall from: pass --store DIR, run `memlane init` for your own notes, "
                         "or run inside a git repository that Claude Code keeps memory for")
    bar = ProgressBar()
    try:
        left = memory.prepare_for_recall(wait=wait, progress=bar)
    finally:
        bar.close()
    if left:
        _embed_in_background(args)
    out, err = recall_answer(memory, request)
    say_once(err)
    sys.stdout.write(out)
    return 0


def recall_answer(memory: "Memory", request: dict) -> tuple[str, str]:
    """(stdout, stderr) of ``memlane recall`` for ``request`` (the prompt and the options), from
    an open, prepared ``Memory``: the same text whether this process or the daemon answers."""
    depth = Depth(request["depth"])
    results = memory.recall(request["prompt"], k=request["k"], depth=depth, explain=request["explain"],
                            fusion=request["fusion"], include_archived=request["deep"],
                            divergent=request["divergent"], refresh=False, session=request["session"])
    err = f"memlane: {memory.embedder_notice}\n" if memory.embedder_notice else ""
    risks = {} if request.get("unscreened") else _risks(results)
    data = [withhold(r.as_dict(), risks.get(n)) for n, r in enumerate(results)]
    return rendered(request["json"], {"prompt": request["prompt"], "results": data},
                    format_results(results, depth, request["explain"], risks)), err


#: how much of the query ``recall --prompt-json`` prints on its line (--json has it whole)
QUERY_SHOWN = 500


def _query_line(query: str) -> str:
    """The query the hook searched, on one line: a pasted page (up to the hook's cap on a prompt,
    tens of thousands of characters, and its lines) is cut, and says how long it is."""
    from ...retrieve.recalled import shorten

    shown = shorten(query, QUERY_SHOWN)
    cut = len(shown) < len(" ".join(query.split()))
    return f"query: {shown}" + (f"  ({len(query):,} characters; --json has them all)" if cut else "")


#: the report's layer keys, in the words the docs use (docs/agents.md, "What the hooks inject")
LAYER_WORDS = {"L3": "layer 3 (the prompt's notes)", "L4": "layer 4 (deep search)"}


def _judge_lines(verdict: dict) -> list[str]:
    """The judge's verdict as ``recall --prompt-json`` prints it: who, the outcome, and each chosen
    note with its reason (the report holds the same, for ``--json``)."""
    said = f"judge ({verdict.get('by')}): {verdict.get('outcome')}"
    if verdict.get("ms") is not None:
        said += f" in {verdict['ms']:.0f} ms"
    if verdict.get("why"):
        said += f" — {verdict['why']}; the ranking stands"
    lines = [said]
    if verdict.get("outcome") in ("chosen", "cached"):
        lines += [f"  chose {c['name']}: {c['reason']}" if c.get("reason") else f"  chose {c['name']}"
                  for c in verdict.get("chosen", [])] or ["  chose none"]
    if verdict.get("ignored"):
        lines.append(f"  ignored (no candidate's): {', '.join(verdict['ignored'])}")
    return lines


def _risks(results) -> dict[int, str]:
    """By position, why a result reads as an instruction to the agent (what the hooks never inject)."""
    from ...guards.exits import recalled_fields, unit_risk

    found = {n: unit_risk(*recalled_fields(r)) for n, r in enumerate(results)}
    return {n: risk for n, risk in found.items() if risk}


def _daemon_for(args) -> tuple[str, str, list[str]]:
    """(socket path, daemon key, store folders) of the daemon serving what ``args`` recall from:
    the one the hooks start for this repository when no folder is named."""
    from ..hookclient import daemon_key, project_root, socket_path

    stores = [str(Path(s).expanduser().resolve()) for s in (store_args(args) or [])]
    key = daemon_key(project_root(None), stores, args.embedder, args.index)
    return socket_path(key), key, stores


def _through_daemon(args, request: dict) -> bool:
    """Answer through a warm daemon for this store set when one is up (no model to load, no
    index to open); False when none answers, and this process answers itself."""
    import json

    from ..hookclient import ask_daemon

    path, _, _ = _daemon_for(args)
    reply = ask_daemon(path, "recall", json.dumps(request))
    if not reply:
        return False
    try:
        answer = json.loads(reply)
        out, err = str(answer["stdout"]), str(answer["stderr"])
    except (ValueError, KeyError, TypeError):
        return False
    say_once(err)
    sys.stdout.write(out)
    return True


def _embed_in_background(args) -> None:
    """Start this store set's daemon: it embeds what is new, then answers the next recalls (and the
    hooks) warm."""
    from ..hookclient import project_root, start_daemon

    _, key, stores = _daemon_for(args)
    start_daemon(key, project_root(None), stores, args.embedder, args.index)


def format_results(results, depth: Depth, explain: bool, risks: dict[int, str] | None = None) -> str:
    if not results:
        return "(nothing relevant)"
    from ...guards.exits import neutral_names

    lines = []
    for n, r in enumerate(results):
        # a folder or a linked name that reads as an instruction is not printed (as in --json)
        r = r.with_(**neutral_names({"path": r.path, "reached": r.reached}))
        tag = "" if r.reached.startswith("seed") else f"  <- {r.reached}"
        mark = ", private" if r.private else ""  # the user's own: this command shows it, no hook injects it
        if risk := (risks or {}).get(n):
            shown = withhold({"name": r.name, "path": r.path}, risk)
            lines += [f"{r.rank}. {shown['name']}  ({r.scope}{mark})  [{r.score:.3f}]",  # a type is its text too
                      f"   ({shown['withheld']})", f"   {shown['path']}"]
            if explain and r.explain is not None:
                lines += _explain_lines(r.explain)
            continue
        if depth is Depth.IDS:
            lines.append(f"{r.rank}. {r.name}  [{r.score:.3f}]  {r.path}{'  (private)' if r.private else ''}{tag}")
        elif depth is Depth.INDEX:
            lines.append(f"- [{r.title}]({r.path}) — {r.as_dict()['hook']}  [{r.score:.3f}]"
                         f"{'  (private)' if r.private else ''}{tag}")
        else:
            lines.append(f"{r.rank}. {r.title}  ({kind_and_scope(r.type, r.scope)}{mark})  [{r.score:.3f}]{tag}")
            lines.append(f"   {r.preview}")
            lines.append(f"   {r.path}")
        if depth is Depth.FULL:
            lines += ["", *("   " + line for line in r.body.splitlines()), ""]
        if explain and r.explain is not None:
            lines += _explain_lines(r.explain)
    return "\n".join(lines)


def _explain_lines(e) -> list[str]:
    cos = "-" if e.cosine is None else f"{e.cosine:.3f}"
    bm25 = "-" if e.bm25 is None else f"{e.bm25:.3f}"
    fields = "; ".join(f"{f}: {', '.join(t)}" for f, t in e.matched_fields.items()) or "none"
    base = "-" if e.base_level is None else f"{e.base_level:.2f}"
    lines = [f"   why: keyword bm25 {bm25} (normalised {e.bm25_norm:.3f}, rank {e.bm25_rank or '-'}), "
             f"meaning cosine {cos} (leg {e.vector:.3f}, rank {e.vector_rank or '-'}), fused {e.fused:.3f}",
             f"   matched fields: {fields}",
             f"   score: relevance {e.relevance:.3f} (text {e.relevance - e.activation:.3f} + links "
             f"{e.activation:.3f}) x importance {e.importance:.3f} x recency {e.recency:.3f} (base level {base}); "
             f"state {e.state}"]
    lines += [f"   path: {step}" for step in e.path or ["seed"]]
    lines += [f"   note: {note}" for note in e.notes]
    if e.risk:
        lines.append(f"   never injected automatically: {e.risk}")
    return lines


def _recall_domains(args, prompt: str) -> int:
    """One list per source, each ranked on its own scale; every result with its source path,
    address and exact text."""
    from ...domains.fabric import DOMAINS, build_fabric
    from ..progress import ProgressBar

    if args.domains:
        wanted = [d.strip() for d in args.domains.split(",") if d.strip()]
    else:
        wanted = ["notes"] + [d for d, given in (("knowledge", args.docs), ("transcripts", args.transcripts),
                                                 ("code", args.code)) if given]
    unknown = [d for d in wanted if d not in DOMAINS]
    if unknown:
        raise UsageError(f"--domains: unknown {', '.join(unknown)}; the sources are {', '.join(DOMAINS)}")
    for flag, folders in (("--docs", args.docs), ("--transcripts", args.transcripts), ("--code", args.code)):
        for folder in folders or []:
            if folder != "auto" and not Path(folder).expanduser().exists():
                raise UsageError(f"{flag} {folder}: no such folder")
    from ...memory import Memory

    memory = Memory(store_args(args), embedder=args.embedder, index_path=args.index)
    fabric = build_fabric(memory, docs=args.docs, transcripts=args.transcripts, code=args.code, domains=wanted)
    missing = [d for d in wanted if d not in fabric.domains]
    if len(missing) == len(wanted):
        raise UsageError(f"nothing to recall from: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no "
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
    if not args.unscreened:  # every source's units screened as the hooks screen them
        from ...guards.exits import row_risk

        for bucket in out["buckets"]:
            bucket["results"] = [withhold(hit, row_risk(hit)) for hit in bucket["results"]]
    out["missing_domains"] = missing
    # files privacy.exclude keeps out are counted, never listed: their names stay in their scope too
    skipped = {name: [s for s in report.get("skipped", []) if "privacy" not in s.get("reason", "")]
               for name, report in refreshed.items()}
    out["skipped"] = {name: found for name, found in skipped.items() if found}
    out["excluded_by_privacy"] = sum(1 for report in refreshed.values() for s in report.get("skipped", [])
                                     if "privacy" in s.get("reason", ""))
    notice(memory)
    emit(args, out, _format_buckets(out))
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
            if hit.get("withheld"):
                lines.append(f"   ({hit['withheld']})")
                continue
            text = hit["text"].strip().splitlines()
            lines += [f"   | {line}" for line in text[:12]] + (["   | …"] if len(text) > 12 else [])
        lines.append("")
    if out.get("missing_domains"):
        lines.append(f"(no folders for: {', '.join(out['missing_domains'])})")
    return "\n".join(lines)


def _recall_hook_input(args) -> int:
    """``recall --prompt-json FILE``: the prompt hook's decision for that input, as a dry run,
    with the ranking's reasons — what would this prompt bring back, and why."""
    from ...domains.fabric import other_domains
    from ...inject.layers import user_prompt
    from ..agents import load
    from ..hook import parse_payload

    try:
        raw = sys.stdin.read() if args.prompt_json == "-" else Path(args.prompt_json).read_text(encoding="utf-8")
        payload = parse_payload(raw, args.agent)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--prompt-json {args.prompt_json}: {exc}") from None
    if not str(payload.get("prompt") or "").strip():
        raise UsageError(f"--prompt-json {args.prompt_json}: the hook input has no prompt")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and os.path.isdir(payload["cwd"]) else None
    from ...memory import Memory

    memory = Memory(store_args(args), embedder=args.embedder, index_path=args.index, cwd=cwd)
    if not memory.specs:
        raise UsageError("no memory folders to recall from for this input's project: pass --store DIR")
    refresh_with_progress(memory)
    fabric = other_domains(memory, docs=args.docs, transcripts=args.transcripts, code=args.code)
    reader = load(args.agent).read_transcript
    try:
        injection = user_prompt(memory, payload, dry_run=True, fabric=fabric,
                                **({"transcript_reader": reader} if reader else {}))
    finally:
        if fabric is not None:
            fabric.close()
    report = injection.report
    ranking = memory.recall(report["query"], depth=Depth.IDS, explain=True, refresh=False, record=False,
                            include_private=False)
    notice(memory)
    fill = (f"fill unknown ({report['fill_source']})" if report["fill"] is None else
            f"fill {report['fill']:.0%} of {report['window']:,} tokens, from the {report['fill_source']}")
    lines = [f"bracket: {report['bracket']} — {fill}; {report['bracket_reason']}", _query_line(report["query"])]
    for layer, data in report["layers"].items():
        lines.append(f"{LAYER_WORDS.get(layer, layer)} recalled: {', '.join(data['recalled']) or 'nothing'}")
        if data.get("judge"):
            lines += _judge_lines(data["judge"])
    lines += [f"never injected automatically: {q['name']} ({q['why']})" for q in report["quarantined"]]
    if report["deduplicated"]:
        lines.append(f"already injected in this session: {', '.join(report['deduplicated'])}")
    # what the hook prints: the notes shown, and the menu of further candidates below them (which
    # may come alone, when every note the prompt recalled was already injected in the session)
    lines.append(f"would inject {report['chars']:,} characters:" if injection.text else "would inject nothing")
    lines += [f"  {s['depth']:5s} {s['name']}  <- {s['reached']}  {s['path']}" for s in report["shown"]]
    lines += [f"  menu  {path}  (listed as possibly relevant)" for path in report.get("menu", [])]
    if report["omitted"]:
        lines.append(f"  (cut by the budget or the cap: {', '.join(report['omitted'])})")
    risks = _risks(ranking)  # the ranking names what the hook withholds: as recall prints it
    lines += ["", "why (the recall ranking for the query):", format_results(ranking, Depth.IDS, True, risks)]
    if injection.text:
        lines += ["", "--- the injected text ---", injection.text]
    emit(args, {"report": report, "ranking": [withhold(r.as_dict(), risks.get(n))
                                              for n, r in enumerate(ranking)], "text": injection.text}, "\n".join(lines))
    return 0
