"""``memlane eval``: a retrieval benchmark, in the corpus/queries/qrels layout or as memory folders
with labelled prompts."""

from __future__ import annotations

from pathlib import Path

from ...errors import UsageError
from .common import command, emit


COMMAND_NAMES = ("eval",)  # the commands ``register`` adds


def register(sub) -> None:
    p = command(sub, "eval", func=cmd_eval, store=False, help="run a retrieval benchmark and print its figures",
                description="Measure recall on a benchmark folder: corpus.jsonl, queries.jsonl and qrels.tsv, or "
                            "memory folders with a prompts.jsonl of labelled prompts. First what recall delivers as "
                            "configured (the share of relevant notes it brings, how many it brings and how many of "
                            "them are relevant), then the full ranking as a diagnostic (Recall@k, Hit@k, NDCG@10, "
                            "MRR), latency, per mode and per group.",
                examples="examples:\n  memlane eval path/to/agent_notes_dev\n  memlane eval --session path/to/agent_notes_dev\n"
                         "  memlane eval path/to/longmemeval --limit 100 --modes keyword,hybrid --json")
    p.add_argument("path", help="the benchmark folder")
    p.add_argument("--modes", default=None,
                   help="comma list of keyword, vector, hybrid, rrf, spread, scored, full (what recall does: the "
                        "product), divergent, keyword-full (default: keyword,vector,hybrid,full)")
    p.add_argument("--ks", default="1,3,5,10", help="cutoffs, comma list")
    p.add_argument("--limit", type=int, help="at most N queries, sampled evenly across the file")
    p.add_argument("--include-type", metavar="T,..", help="only queries of these types, kinds or categories")
    p.add_argument("--exclude-type", metavar="T,..", help="skip these (e.g. 5 for LoCoMo's adversarial questions)")
    p.add_argument("--scope-field", help="the per-query scoping field (default: found in the corpus)")
    p.add_argument("--corpus-file", metavar="NAME", help="the corpus file in the folder (default corpus.jsonl; e.g. "
                                                          "corpus_sessions.jsonl for session granularity)")
    p.add_argument("--qrels-file", metavar="NAME", help="the relevance file in the folder (default qrels.tsv)")
    p.add_argument("--embedder", metavar="NAME", help="the embedding model ('none': keyword search only)")
    p.add_argument("--postgres", metavar="DSN", help="run on the PostgreSQL backend (the team store's), each scope in "
                                                    "a namespace of this database (its owner's DSN)")
    p.add_argument("--session", action="store_true",
                   help="memory as the agent receives it: each prompt in a fresh session through the hooks, in each "
                        "context bracket, against the whole store in full, Claude Code's MEMORY.md and keyword-only")
    p.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")


def cmd_eval(args) -> int:
    from ...config import load_config
    from ...eval import evaluate_path, format_report
    from ...store import git_root

    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{path}: no such benchmark folder")
    if args.session:
        from ...eval.session import evaluate_sessions, format_sessions
        from ..progress import ProgressBar

        bar = ProgressBar()
        try:
            result = evaluate_sessions(path, embedder=args.embedder, config=load_config(git_root(Path.cwd())),
                                       limit=args.limit, include_types=_split(args.include_type) or (),
                                       exclude_types=_split(args.exclude_type) or (), progress=bar)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        finally:
            bar.close()
        emit(args, result, format_sessions(result))
        return 0
    options = {"modes": args.modes.split(",") if args.modes else None, "ks": [int(k) for k in args.ks.split(",")],
               "limit": args.limit, "embedder": args.embedder, "scope_field": args.scope_field,
               "include_types": _split(args.include_type), "exclude_types": _split(args.exclude_type),
               "corpus_file": args.corpus_file, "qrels_file": args.qrels_file,
               "config": load_config(git_root(Path.cwd()))}
    if args.postgres:
        from ...team.evaluate import namespaces

        with namespaces(args.postgres, fts_weights=options["config"].retrieve.fts_weights) as storage:
            result = evaluate_path(path, storage=storage, **{k: v for k, v in options.items() if v is not None})
    else:
        result = evaluate_path(path, **{k: v for k, v in options.items() if v is not None})
    emit(args, result, format_report(result))
    return 0


def _split(value: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


# -- parser --------------------------------------------------------------------------
