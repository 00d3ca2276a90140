"""The transcript domain on LoCoMo: the same conversations as Claude Code session logs.

    .venv/bin/python bench/locomo_transcripts.py                    # keyword only (about a minute)
    .venv/bin/python bench/locomo_transcripts.py --embedder default # + the hybrid legs (embeds ~5,900 turns)

Each LoCoMo conversation becomes one transcript file (``<tmp>/projects/-bench-locomo-<conv>/
<uuid>.jsonl``) in the exact JSON of Claude Code (its transcript format): a summary
line, then each session's turns as user lines (the conversation's first speaker) and assistant
lines (the other), timestamped from the session date, with a file-history-snapshot and a
compact_boundary between sessions. Every corpus unit id is mapped to the (file, session, turn)
it became. All ten files are indexed by one :class:`TranscriptDomain`; each query is scoped to
its conversation with the ``project`` filter (IDF is over all ten, unlike the notes runner).

Compared, on categories 1-4 (adversarial excluded, as bench/quality.py does):
- turn level, Recall@10 / Hit@10 / NDCG@10: the domain's ranking (threshold off, as memlane's
  runner ranks) vs memlane's normal path on ``corpus.jsonl`` (memlane.eval, keyword / hybrid);
- session level, Recall@5: the domain's turn ranking folded to LoCoMo sessions (first
  occurrence) vs memlane indexing ``corpus_sessions.jsonl`` (one unit per session);
- what the threshold does: share of queries answered at the default threshold for the own
  conversation, another conversation (an unrelated haystack) and adversarial questions;
- windowed Recall@10: evidence inside the ±2-turn windows of the first 10 hits (what an
  agent is shown; up to 50 turns, so not comparable with the ranking figures);
- indexing rate (turns/s, cold, file index) and warm recall latency p50/p95 (recall() with
  windows, threshold on).

Written to bench/out/locomo_transcripts.json. Skips cleanly when the bench folder is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.domains.transcripts import TranscriptDomain  # noqa: E402
from memlane.eval import evaluate_path  # noqa: E402
from memlane.eval import metrics as m  # noqa: E402
from memlane.eval.datasets import read_jsonl, read_qrels  # noqa: E402

OUT = REPO / "bench" / "out"
NAMESPACE = uuid.UUID("6f1c1d0e-4b5e-4c59-9a55-0c0ffee0b0b0")


def _bench_dir(arg: str | None) -> Path:
    return Path(arg or os.environ.get("MEMLANE_BENCH_DIR") or "/work/shared/bench")


# -- conversion ---------------------------------------------------------------------------------
def _line(kind: str, session: str, stamp: datetime, text: str, number: int, cwd: str) -> dict:
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.0", "gitBranch": "main", "uuid": str(uuid.uuid5(NAMESPACE, f"{session}:{number}")),
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.000Z")}
    if kind == "user":
        return base | {"type": "user", "message": {"role": "user", "content": text}}
    return base | {"type": "assistant", "requestId": f"req_{number}", "message": {
        "model": "claude-sonnet-4-5", "id": f"msg_{session[:8]}_{number}", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 20}}}


def convert(corpus: list[dict], folder: Path) -> dict[str, dict]:
    """Write one transcript per conversation; returns unit id -> {file, session, turn, conv,
    locomo_session}."""
    by_conv: dict[str, list[dict]] = defaultdict(list)
    for row in corpus:
        by_conv[row["conversation_id"]].append(row)
    mapping = {}
    for conv, rows in sorted(by_conv.items()):
        rows.sort(key=lambda r: (int(r["session"]), int(r["id"].rsplit(":", 1)[1])))
        session = str(uuid.uuid5(NAMESPACE, conv))
        cwd = f"/home/bench/locomo/{conv}"
        project = folder / f"-home-bench-locomo-{conv}"
        project.mkdir(parents=True, exist_ok=True)
        path = project / f"{session}.jsonl"
        first_speaker = rows[0]["text"].split(":", 1)[0]
        lines: list[dict] = [{"type": "summary", "summary": f"LoCoMo {conv}", "leafUuid": str(uuid.uuid4())}]
        turn, previous = 0, None
        for number, row in enumerate(rows):
            if row["session"] != previous:
                if previous is not None:
                    lines.append({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                                  "compactMetadata": {"trigger": "auto", "preTokens": 1000}, "sessionId": session,
                                  "timestamp": row["timestamp"] + ".000Z", "isSidechain": False})
                lines.append({"type": "file-history-snapshot", "messageId": str(uuid.uuid4()),
                              "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False})
                previous, offset = row["session"], 0
            offset += 1
            stamp = datetime.fromisoformat(row["timestamp"]) + timedelta(seconds=30 * offset)
            kind = "user" if row["text"].split(":", 1)[0] == first_speaker else "assistant"
            lines.append(_line(kind, session, stamp, row["text"], number, cwd))
            turn += 1
            mapping[row["id"]] = {"file": str(path), "session": session, "turn": turn, "conv": conv,
                                  "locomo_session": f"{conv}:S{row['session']}"}
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return mapping


# -- scoring ------------------------------------------------------------------------------------
def _sessions_in_order(unit_ids: list[str], mapping: dict) -> list[str]:
    return list(dict.fromkeys(mapping[u]["locomo_session"] for u in unit_ids))


def run_domain(domain: TranscriptDomain, queries: list[dict], qrels: dict, qrels_s: dict, mapping: dict,
               unit_of: dict[int, str]) -> dict:
    turns, sessions, windowed, latencies, answered = [], [], [], [], 0
    domain.recall(queries[0]["text"], k=10, filters={"project": f"locomo-{queries[0]['conversation_id']}"})  # warm
    for q in queries:
        filters = {"project": f"locomo-{q['conversation_id']}"}
        ranked = [unit_of[tid] for tid, _, _ in domain.rank(q["text"], filters=filters)]
        rel = qrels[q["id"]]
        turns.append({"recall@10": m.recall_at_k(ranked, rel, 10), "hit@10": m.hit_at_k(ranked, rel, 10),
                      "ndcg@10": m.ndcg_at_k(ranked, rel, 10), "recall@5": m.recall_at_k(ranked, rel, 5)})
        sessions.append(m.recall_at_k(_sessions_in_order(ranked, mapping), qrels_s.get(q["id"], {}), 5))
        started = time.perf_counter()
        hits = domain.recall(q["text"], k=10, filters=filters)
        latencies.append((time.perf_counter() - started) * 1000)
        answered += bool(hits)
        shown = {(h.path, t) for h in hits for t in range(h.meta["window"][0], h.meta["window"][1] + 1)}
        wanted = [(mapping[u]["file"], mapping[u]["turn"]) for u in rel if u in mapping]
        windowed.append(sum(w in shown for w in wanted) / len(wanted) if wanted else 0.0)
    out = {name: m.mean(t[name] for t in turns) for name in turns[0]}
    out |= {"session_recall@5": m.mean(sessions), "windowed_recall@10": m.mean(windowed),
            "answered_share": answered / len(queries), "latency_ms": m.latency_summary(latencies)}
    return out


def threshold_report(domain: TranscriptDomain, queries: list[dict], adversarial: list[dict]) -> dict:
    """Share of queries answered (>= 1 hit at the default threshold): own conversation, the
    next conversation (an unrelated haystack: other people, other lives), adversarial."""
    convs = sorted({q["conversation_id"] for q in queries})
    other = {c: convs[(i + 1) % len(convs)] for i, c in enumerate(convs)}

    def share(rows, conv_of):
        return m.mean(bool(domain.recall(q["text"], k=5, filters={"project": f"locomo-{conv_of(q)}"})) for q in rows)

    return {"own": share(queries, lambda q: q["conversation_id"]),
            "other_conversation": share(queries, lambda q: other[q["conversation_id"]]),
            "adversarial_own": share(adversarial, lambda q: q["conversation_id"]) if adversarial else None}


def run_notes(bench: Path, embedder: str) -> dict:
    modes = ["keyword"] if embedder == "none" else ["keyword", "hybrid"]
    cache = OUT / "embeddings.sqlite"
    turn = evaluate_path(bench, modes=modes, ks=(5, 10), embedder=embedder, cache_path=cache,
                         exclude_types=("5",), group_by=[])
    sess = evaluate_path(bench, modes=modes, ks=(5, 10), embedder=embedder, cache_path=cache, exclude_types=("5",),
                         group_by=[], corpus_file="corpus_sessions.jsonl", qrels_file="qrels_sessions.tsv")
    out = {}
    for mode in turn["modes"]:
        row = turn["overall"][mode]
        out[f"notes/{mode}"] = {"recall@10": row["recall@10"], "hit@10": row["hit@10"], "ndcg@10": row["ndcg@10"],
                                "recall@5": row["recall@5"], "session_recall@5": sess["overall"][mode]["recall@5"],
                                "latency_ms": turn["latency_ms"][mode], "n": row["n"]}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir")
    parser.add_argument("--embedder", default="none", help="none (keyword only), default, or a registered name")
    parser.add_argument("--limit", type=int, help="evaluate this many queries (spread over the set)")
    parser.add_argument("--out", default=str(OUT / "locomo_transcripts.json"))
    args = parser.parse_args(argv)
    bench = _bench_dir(args.bench_dir) / "locomo"
    if not (bench / "corpus.jsonl").is_file():
        print(f"skipped: no LoCoMo benchmark at {bench}")
        return 0
    corpus = read_jsonl(bench / "corpus.jsonl")
    qrels, qrels_s = read_qrels(bench / "qrels.tsv"), read_qrels(bench / "qrels_sessions.tsv")
    all_queries = read_jsonl(bench / "queries.jsonl")
    queries = [q for q in all_queries if str(q.get("category")) != "5" and qrels.get(q["id"])]
    adversarial = [q for q in all_queries if str(q.get("category")) == "5"]
    if args.limit:
        queries = m_spread(queries, args.limit)
        adversarial = m_spread(adversarial, max(1, args.limit // 4))
    embedder = None
    if args.embedder != "none":
        from memlane.embed import DEFAULT_EMBEDDER, load_embedder

        embedder = load_embedder(DEFAULT_EMBEDDER if args.embedder == "default" else args.embedder)
    report: dict = {"queries": len(queries), "adversarial": len(adversarial), "embedder": args.embedder}
    with tempfile.TemporaryDirectory() as tmp:
        mapping = convert(corpus, Path(tmp) / "projects")
        index = Path(tmp) / "transcripts.sqlite"
        with TranscriptDomain([Path(tmp) / "projects"], index_path=index) as domain:
            refreshed = domain.refresh()
            turns = domain.stats()["turns"]
            assert turns == len(corpus), (turns, len(corpus))
            by_place = {(v["file"], v["turn"]): uid for uid, v in mapping.items()}
            unit_of = {tid: by_place[(path, turn)]
                       for tid, path, turn in domain.conn.execute("SELECT id, path, turn FROM turns")}
            report["index"] = {"turns": turns, "seconds": refreshed["seconds"],
                               "turns_per_s": round(turns / max(refreshed["seconds"], 1e-9)),
                               "noop_refresh_s": domain.refresh()["seconds"]}
            report["transcripts/keyword"] = run_domain(domain, queries, qrels, qrels_s, mapping, unit_of)
            report["threshold"] = {"min_activation": domain.min_activation,
                                   **threshold_report(domain, queries, adversarial)}
        if embedder is not None:
            with TranscriptDomain([Path(tmp) / "projects"], index_path=index, embedder=embedder) as domain:
                domain.refresh()
                started = time.perf_counter()
                domain._vectors()  # embedded lazily at the first recall: timed apart
                report["index"]["embed_s"] = round(time.perf_counter() - started, 1)
                report["transcripts/hybrid"] = run_domain(domain, queries, qrels, qrels_s, mapping, unit_of)
                report["threshold_hybrid"] = threshold_report(domain, queries, adversarial)
    if not args.limit:
        report.update(run_notes(bench.parent / "locomo", args.embedder))
    OUT.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print_table(report)
    return 0


def m_spread(items: list, limit: int) -> list:
    from memlane.eval.datasets import spread

    return spread(items, limit)


def print_table(report: dict) -> None:
    print(f"LoCoMo, categories 1-4: {report['queries']} queries; index {report['index']['turns']} turns in "
          f"{report['index']['seconds']:.2f} s ({report['index']['turns_per_s']} turns/s), no-op refresh "
          f"{report['index']['noop_refresh_s'] * 1000:.1f} ms")
    print(f"{'system':22s} {'R@5':>6s} {'R@10':>6s} {'Hit@10':>7s} {'NDCG@10':>8s} {'sess R@5':>9s} "
          f"{'p50 ms':>7s} {'p95 ms':>7s}")
    for name, row in report.items():
        if isinstance(row, dict) and "recall@10" in row:
            lat = row.get("latency_ms", {})
            print(f"{name:22s} {row['recall@5']:6.3f} {row['recall@10']:6.3f} {row['hit@10']:7.3f} "
                  f"{row['ndcg@10']:8.3f} {row['session_recall@5']:9.3f} {lat.get('p50', 0):7.2f} "
                  f"{lat.get('p95', 0):7.2f}")
    for name, row in report.items():
        if name.startswith("transcripts/"):
            print(f"{name}: windowed R@10 (±2 turns around each of 10 hits) {row['windowed_recall@10']:.3f}; "
                  f"answered at the threshold {row['answered_share']:.3f}")
    for name in ("threshold", "threshold_hybrid"):
        if name in report:
            t = report[name]
            adv = "-" if t["adversarial_own"] is None else f"{t['adversarial_own']:.3f}"
            print(f"{name} {report['threshold']['min_activation']}: answered own conversation {t['own']:.3f}, "
                  f"another conversation {t['other_conversation']:.3f}, adversarial {adv}")
    if "embed_s" in report["index"]:
        print(f"hybrid: {report['index']['turns']} turns embedded in {report['index']['embed_s']} s")


if __name__ == "__main__":
    sys.exit(main())
