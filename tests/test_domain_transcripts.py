"""The transcript domain (D1): parsing Claude Code JSONL, delta sync, recall with a window,
filters, the threshold, the privacy gate, and bad input.

Golden transcripts are written by the tests in the exact JSON of Claude Code (reference
Claude Code's transcript format): string and block content, thinking / tool_use / tool_result, one
streamed assistant message over several lines, a sidechain, a ``<synthetic>`` message, a
slash-command echo, system reminders, a compact boundary, file-history snapshots.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane.domains.base import Recalled
from memlane.domains.transcripts import MAX_TURN_CHARS, TranscriptDomain, extract_turn, filter_sql
from memlane.guards.privacy import PrivacyGate

SESSION_A = "3f2a9c4e-1b7d-4e21-9a0b-5c6d7e8f9a01"
SESSION_B = "8c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
SHOP, BLOG = "-home-alice-src-shop", "-home-alice-src-blog"


# -- golden lines -------------------------------------------------------------------------------
def _common(session: str, n: int, cwd: str, stamp: str, **extra) -> dict:
    return {"parentUuid": f"u-{n - 1}" if n else None, "isSidechain": False, "userType": "external", "cwd": cwd,
            "sessionId": session, "version": "2.1.32", "gitBranch": "main", "uuid": f"u-{n}",
            "timestamp": stamp} | extra


def user(session, n, content, *, cwd="/home/alice/src/shop", stamp="2025-06-01T10:00:00.000Z", **extra) -> dict:
    message = {"role": "user", "content": content}
    return _common(session, n, cwd, stamp, **extra) | {"type": "user", "message": message}


def assistant(session, n, msg_id, blocks, *, cwd="/home/alice/src/shop", stamp="2025-06-01T10:00:05.000Z",
              model="claude-sonnet-4-5", **extra) -> dict:
    return _common(session, n, cwd, stamp, **extra) | {"type": "assistant", "requestId": f"req_{msg_id}", "message": {
        "model": model, "id": msg_id, "type": "message", "role": "assistant", "content": blocks,
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 4, "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 15000,
                  "cache_creation": {"ephemeral_5m_input_tokens": 1200}, "output_tokens": 80,
                  "service_tier": "standard"}}}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def shop_session() -> list[dict]:
    s = SESSION_A
    return [
        {"type": "summary", "summary": "Checkout discount bug", "leafUuid": "u-9"},
        user(s, 1, "The checkout page crashes when the cart has a discount coupon applied. Can you find out why?"),
        assistant(s, 2, "msg_01", [{"type": "thinking", "thinking": "quasar thoughts on coupons", "signature": "x"}]),
        assistant(s, 3, "msg_01", [text("Let me look at the coupon code in the checkout module.")]),
        assistant(s, 4, "msg_01", [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                    "input": {"file_path": "/home/alice/src/shop/checkout.py"}}]),
        user(s, 5, [{"tool_use_id": "toolu_1", "type": "tool_result",
                     "content": "def apply_coupon(cart):\n    # marmalade sentinel\n    ..."}],
             toolUseResult={"type": "text", "file": {"filePath": "checkout.py", "content": "marmalade"}}),
        assistant(s, 6, "msg_02", [text("Found it: the discount is applied twice because apply_coupon runs in both "
                                        "the cart reducer and the checkout saga. I removed the call from the saga.")],
                  stamp="2025-06-01T10:02:00.000Z"),
        assistant(s, 7, "msg_02", [text("Found it: the discount is applied twice because apply_coupon runs in both "
                                        "the cart reducer and the checkout saga. I removed the call from the saga.")],
                  stamp="2025-06-01T10:02:00.000Z"),  # the same block re-emitted (streaming usage update)
        user(s, 8, "<command-message>review is running…</command-message>\n<command-name>/review</command-name>"),
        user(s, 9, "<system-reminder>Contents of MEMORY.md: always run the xylophone linter</system-reminder>"),
        user(s, 10, [text("Great, now add a regression test for the double discount"),
                     text("<system-reminder>The user opened the file tests/test_cart.py</system-reminder>")],
             stamp="2025-06-02T09:00:00.000Z"),
        user(s, 11, "Sidechain prompt about zanzibar", isSidechain=True),
        assistant(s, 12, "msg_side", [text("zanzibar answer from a subagent")], isSidechain=True),
        assistant(s, 13, "msg_syn", [text("No response requested: nebula placeholder")], model="<synthetic>"),
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
         "compactMetadata": {"trigger": "auto", "preTokens": 167189}, "sessionId": s, "uuid": "u-14",
         "timestamp": "2025-06-02T09:05:00.000Z", "isSidechain": False},
        user(s, 15, "This session is being continued from a previous conversation: walrus summary",
             isCompactSummary=True),
        {"type": "file-history-snapshot", "messageId": "m-1", "snapshot": {"trackedFileBackups": {}},
         "isSnapshotUpdate": False},
        assistant(s, 16, "msg_03", [text("Added test_double_discount in tests/test_checkout.py; it fails before the "
                                         "fix and passes after.")], stamp="2025-06-02T09:10:00.000Z"),
        user(s, 17, "[Request interrupted by user]"),
        user(s, 18, "Caveat: The messages below were generated by the user while running local commands.",
             isMeta=True),
    ]


def blog_session() -> list[dict]:
    s = SESSION_B
    kw = {"cwd": "/home/alice/src/blog"}
    return [
        user(s, 1, "Add an RSS feed to the static site generator", stamp="2025-07-10T08:00:00.000Z", **kw),
        assistant(s, 2, "msg_b1", [text("I added feed.xml generation to the build step, with the ten latest posts.")],
                  stamp="2025-07-10T08:01:00.000Z", **kw),
    ]


def write_jsonl(path: Path, records: list, *, newline_at_end: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records)
    path.write_text(body + ("\n" if newline_at_end and records else ""), encoding="utf-8")
    return path


def append_jsonl(path: Path, records: list) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for r in records:
            handle.write(json.dumps(r) + "\n")


@pytest.fixture
def projects(tmp_path) -> Path:
    root = tmp_path / "projects"
    write_jsonl(root / SHOP / f"{SESSION_A}.jsonl", shop_session())
    write_jsonl(root / BLOG / f"{SESSION_B}.jsonl", blog_session())
    # a subagent log beside the session: sidechain lines, never read as a session
    write_jsonl(root / SHOP / SESSION_A / "subagents" / "agent-1.jsonl",
                [user(SESSION_A, 1, "subagent zanzibar", isSidechain=True)])
    return root


@pytest.fixture
def domain(projects):
    with TranscriptDomain([projects], index_path=":memory:") as d:
        yield d


def turns_of(domain, session=SESSION_A) -> list[tuple]:
    return domain.conn.execute("SELECT turn, role, text FROM turns WHERE session = ? ORDER BY turn",
                               (session,)).fetchall()


# -- parsing ------------------------------------------------------------------------------------
def test_golden_transcripts_become_text_turns(domain, projects):
    report = domain.refresh()
    assert (report["files"], report["sessions"], report["turns_added"]) == (2, 2, 7)
    assert report["skipped"] == [] and report["seconds"] >= 0
    turns = turns_of(domain)
    assert [(t, r) for t, r, _ in turns] == [(1, "user"), (2, "assistant"), (3, "assistant"), (4, "user"),
                                            (5, "assistant")]
    assert turns[1][2] == "Let me look at the coupon code in the checkout module."  # thinking, tool_use dropped
    assert turns[2][2].count("Found it") == 1  # a re-emitted block of the same message is folded
    assert turns[3][2] == "Great, now add a regression test for the double discount"  # reminder stripped
    every = " ".join(t for _, _, t in turns_of(domain) + turns_of(domain, SESSION_B))
    for absent in ("marmalade", "zanzibar", "nebula", "quasar", "xylophone", "walrus", "/review", "Caveat",
                   "interrupted"):
        assert absent not in every
    row = domain.conn.execute("SELECT project, cwd, time FROM turns WHERE session = ? AND turn = 1",
                              (SESSION_A,)).fetchone()
    assert row == (SHOP, "/home/alice/src/shop", "2025-06-01T10:00:00.000Z")


@pytest.mark.parametrize("record, expected", [
    ({"type": "user", "message": {"role": "user", "content": "plain words"}}, ("user", "plain words")),
    ({"type": "user", "message": {"content": [{"type": "tool_result", "content": "x"}]}}, None),
    ({"type": "user", "message": {"content": [{"type": "image", "source": {}}, text("see picture")]}},
     ("user", "see picture")),
    ({"type": "user", "message": {"content": "<local-command-stdout>ok</local-command-stdout>"}}, None),
    ({"type": "user", "message": {"content": "before <system-reminder>noise</system-reminder> after"}},
     ("user", "before  after")),
    ({"type": "assistant", "message": {"id": "m", "content": [{"type": "tool_use", "name": "Bash"}]}}, None),
    ({"type": "assistant", "message": {"id": "m", "content": [text("a"), {"type": "thinking"}, text("b")]}},
     ("assistant", "a\n\nb")),
    ({"type": "assistant", "message": {"id": "m", "model": "<synthetic>", "content": [text("x")]}}, None),
    ({"type": "assistant", "isSidechain": True, "message": {"id": "m", "content": [text("x")]}}, None),
    ({"type": "summary", "summary": "s"}, None),
    ({"type": "system", "subtype": "compact_boundary"}, None),
    ({"type": "user", "message": "not a dict"}, None),
    (["a", "list"], None),
])
def test_extract_turn(record, expected):
    piece = extract_turn(record)
    assert (None if piece is None else (piece.role, piece.text)) == expected


# -- recall -------------------------------------------------------------------------------------
def test_recall_returns_the_turn_with_its_window(domain, projects):
    domain.refresh()
    hits = domain.recall("why was the discount applied twice in checkout", k=3)
    assert hits and isinstance(hits[0], Recalled)
    hit = hits[0]
    assert hit.domain == "transcripts" and hit.address == f"session {SESSION_A} turn 3"
    assert hit.path == str((projects / SHOP / f"{SESSION_A}.jsonl").resolve()) and Path(hit.path).is_absolute()
    assert 0.35 <= hit.activation <= 1.0
    assert hit.meta.pop("also_matched") == [1]  # turn 1 matches too, inside this window: folded in
    assert hit.meta | {"window": None} == {"session": SESSION_A, "turn": 3, "role": "assistant",
                                           "time": "2025-06-01T10:02:00.000Z", "project": SHOP,
                                           "cwd": "/home/alice/src/shop", "window": None}
    assert hit.meta["window"] == [1, 5]
    lines = hit.text.splitlines()
    assert lines[0].startswith("user: The checkout page crashes")
    assert lines[2].startswith("» assistant: Found it")
    assert lines[-1].startswith("assistant: Added test_double_discount")
    assert "apply_coupon" in hit.why or "discount" in hit.why


def test_windows_of_adjacent_hits_do_not_overlap(tmp_path):
    lines = []
    for n in range(1, 13):
        lines.append(user(SESSION_A, 2 * n, f"question {n} about the flaky websocket reconnect test"))
        lines.append(assistant(SESSION_A, 2 * n + 1, f"msg_{n}", [text(f"answer {n}: the websocket reconnect "
                                                                        "test is flaky on CI")]))
    write_jsonl(tmp_path / "p" / f"{SESSION_A}.jsonl", lines)
    with TranscriptDomain([tmp_path / "p"], index_path=":memory:", window=2) as d:
        d.refresh()
        hits = d.recall("flaky websocket reconnect test", k=10)
    shown = [turn for h in hits for turn in range(h.meta["window"][0], h.meta["window"][1] + 1)]
    assert len(hits) >= 3 and len(shown) == len(set(shown))  # no turn returned twice
    assert all(h.meta["window"][0] <= h.meta["turn"] <= h.meta["window"][1] for h in hits)
    assert any(h.meta.get("also_matched") for h in hits)  # hits inside a window are folded into it
    for h in hits:
        count = h.meta["window"][1] - h.meta["window"][0] + 1
        assert len([line for line in h.text.splitlines() if line.startswith(("user:", "assistant:", "» "))]) == count


def test_filters(domain):
    domain.refresh()
    feed = "rss feed generation build"
    assert domain.recall(feed, k=3)[0].meta["session"] == SESSION_B
    assert domain.recall(feed, k=3, filters={"session": SESSION_B[:6]})
    assert domain.recall(feed, k=3, filters={"session": SESSION_A[:6]}) == []
    assert domain.recall(feed, k=3, filters={"project": "blog"})
    assert domain.recall(feed, k=3, filters={"project": "/home/alice/src/shop"}) == []
    assert domain.recall(feed, k=3, filters={"since": "2025-07-10"})
    assert domain.recall(feed, k=3, filters={"until": "2025-07-09"}) == []
    assert domain.recall(feed, k=3, filters={"until": "2025-07-10"})  # a bare date includes its day
    assert domain.recall(feed, k=3, filters={"since": "2025-07-10T08:00:30Z"})[0].meta["role"] == "assistant"
    test = "regression test double discount"
    assert {h.meta["turn"] for h in domain.recall(test, k=5, filters={"since": "2025-06-02T00:00:00"})} <= {4, 5}
    with pytest.raises(ValueError, match="unknown transcript filter"):
        domain.recall(feed, k=3, filters={"branch": "main"})
    with pytest.raises(ValueError, match="not an ISO date"):
        domain.recall(feed, k=3, filters={"since": "last tuesday"})


def test_filter_sql():
    assert filter_sql(None) == ("1", [])
    where, params = filter_sql({"session": "3f2a_", "project": "shop%"})
    assert where == ("t.session LIKE ? ESCAPE '\\' AND (t.project LIKE ? ESCAPE '\\' OR t.cwd LIKE ? ESCAPE '\\')")
    assert params == ["3f2a\\_%", "%shop\\%%", "%shop\\%%"]
    where, params = filter_sql({"since": "2025-06-01", "until": "2025-06-01"})
    assert where == "t.ts >= ? AND t.ts < ?" and params[1] - params[0] == 86400


@pytest.mark.parametrize("query", ["thanks!", "ok great", "sourdough bread hydration recipe",
                                   "what is the capital of France and its population"])
def test_unrelated_query_returns_nothing(domain, query):
    domain.refresh()
    assert domain.recall(query, k=5) == []


def test_hybrid_leg_with_fake_embedder_embeds_once(projects):
    from memlane.embed.fake import FakeEmbedder

    class Counting(FakeEmbedder):
        calls = 0

        def embed_batch(self, texts, *, is_query):
            Counting.calls += 0 if is_query else len(texts)
            return super().embed_batch(texts, is_query=is_query)

    with TranscriptDomain([projects], index_path=":memory:", embedder=Counting()) as d:
        d.refresh()
        hits = d.recall("discount applied twice checkout saga", k=2)
        assert hits[0].meta["turn"] == 3 and "cosine" in hits[0].why
        first = Counting.calls
        assert first == 7
        d.recall("rss feed", k=2)
        assert Counting.calls == first  # vectors are cached by text hash
        assert d.recall("thanks", k=2) == []


# -- delta sync ---------------------------------------------------------------------------------
def test_appended_lines_index_only_the_new_turns(domain, projects):
    domain.refresh()
    before = domain.conn.execute("SELECT id, turn FROM turns ORDER BY id").fetchall()
    path = projects / BLOG / f"{SESSION_B}.jsonl"
    append_jsonl(path, [
        assistant(SESSION_B, 3, "msg_b1", [text("The feed also carries an Atom variant.")]),  # same message
        user(SESSION_B, 4, "Now paginate the archive page", stamp="2025-07-11T08:00:00.000Z"),
        assistant(SESSION_B, 5, "msg_b2", [text("Archive pagination done, twenty posts per page.")]),
    ])
    report = domain.refresh()
    assert (report["turns_added"], report["turns_removed"], report["files_changed"]) == (2, 0, 1)
    assert domain.conn.execute("SELECT id, turn FROM turns ORDER BY id").fetchall()[:len(before)] == before
    assert "Atom variant" in turns_of(domain, SESSION_B)[1][2]  # folded into its streamed message
    assert domain.recall("atom variant feed", k=1)[0].meta["turn"] == 2
    assert domain.recall("archive pagination twenty posts", k=1)[0].meta["turn"] == 4
    again = domain.refresh()
    assert (again["turns_added"], again["files_changed"]) == (0, 0)


def test_grown_file_is_read_from_where_it_stopped(domain, projects, monkeypatch):
    domain.refresh()
    path = projects / BLOG / f"{SESSION_B}.jsonl"
    size = path.stat().st_size
    append_jsonl(path, [user(SESSION_B, 4, "one more thing about the feed")])
    seeks = []
    real_open = open

    def spying_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if str(file) == str(path.resolve()) and "b" in mode:
            real_seek = handle.seek
            handle.seek = lambda pos, *a: (seeks.append(pos), real_seek(pos, *a))[1]
        return handle

    monkeypatch.setattr("builtins.open", spying_open)
    assert domain.refresh()["turns_added"] == 1
    assert seeks == [size]  # the fingerprint reads the small prefix without seeking; the read starts at the end


def test_rewritten_or_truncated_file_is_reindexed(domain, projects):
    domain.refresh()
    path = projects / SHOP / f"{SESSION_A}.jsonl"
    write_jsonl(path, [user(SESSION_A, 1, "Migrate the orders table to bigint ids")])  # shorter: truncated
    report = domain.refresh()
    assert (report["turns_added"], report["turns_removed"]) == (1, 5)
    assert domain.recall("discount applied twice", k=3) == []
    assert domain.recall("orders table bigint", k=1)[0].meta["turn"] == 1
    # same size, other bytes: the prefix fingerprint no longer matches
    same = path.read_text(encoding="utf-8").replace("Migrate", "Rewrite")
    path.write_text(same, encoding="utf-8")
    assert domain.refresh()["turns_added"] == 1
    assert domain.conn.execute("SELECT text FROM turns WHERE session = ?", (SESSION_A,)).fetchall() == \
        [("Rewrite the orders table to bigint ids",)]


def test_torn_last_line_waits_until_complete(tmp_path):
    path = tmp_path / "p" / f"{SESSION_A}.jsonl"
    full = json.dumps(user(SESSION_A, 2, "second question about the payment webhook"))
    write_jsonl(path, [user(SESSION_A, 1, "first question about the invoice")])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(full[:40])  # a writer mid-line
    with TranscriptDomain([tmp_path / "p"], index_path=":memory:") as d:
        report = d.refresh()
        assert report["turns_added"] == 1 and report["skipped"] == []
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(full[40:] + "\n")
        report = d.refresh()
        assert (report["turns_added"], report["skipped"]) == (1, [])
        assert [t for t, _, _ in turns_of(d)] == [1, 2]
        assert d.recall("payment webhook", k=1)[0].meta["turn"] == 2


def test_deleted_file_leaves_the_index(domain, projects):
    domain.refresh()
    (projects / BLOG / f"{SESSION_B}.jsonl").unlink()
    report = domain.refresh()
    assert report["turns_removed"] == 2 and report["sessions"] == 1
    assert domain.recall("rss feed generation", k=3) == []
    assert domain.conn.execute("SELECT count(*) FROM turns_fts").fetchone()[0] == 5


def test_persistent_index_survives_reopening(projects, tmp_path):
    index = tmp_path / "cache" / "t.sqlite"
    with TranscriptDomain([projects], index_path=index) as d:
        assert d.refresh()["turns_added"] == 7
    with TranscriptDomain([projects], index_path=index) as d:
        report = d.refresh()
        assert (report["turns_added"], report["files_changed"], report["sessions"]) == (0, 0, 2)
        assert d.recall("rss feed", k=1)


def test_default_index_lives_in_the_cache(projects, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path / "mc"))
    d = TranscriptDomain([projects])
    assert Path(d.index_path).parent == tmp_path / "mc" / "domains"
    assert Path(d.index_path).name.startswith("transcripts-")
    d.close()


# -- privacy ------------------------------------------------------------------------------------
def test_excluded_transcript_is_never_read_nor_returned(projects, monkeypatch):
    secret = projects / BLOG / f"{SESSION_B}.jsonl"
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: (opened.append(str(f)), real_open(f, *a, **k))[1])
    gate = PrivacyGate(exclude=(f"{BLOG}/*",))
    with TranscriptDomain([projects], gate=gate, index_path=":memory:") as d:
        report = d.refresh()
        assert str(secret.resolve()) not in opened
        assert report["excluded"] == 1 and "blog" not in json.dumps(report)  # counted, never named
        assert d.recall("rss feed generation", k=5) == []
        assert d.recall("discount applied twice", k=1)


def test_gate_applies_to_an_index_built_before_it(projects, tmp_path):
    index = tmp_path / "t.sqlite"
    with TranscriptDomain([projects], index_path=index) as d:
        d.refresh()
    gate = PrivacyGate(exclude=("*blog*",))
    with TranscriptDomain([projects], gate=gate, index_path=index) as d:
        assert d.recall("rss feed generation", k=5) == []  # stale index: recall checks the gate again
        assert d.refresh()["turns_removed"] == 2  # and the next refresh drops the file's turns


# -- bad input ----------------------------------------------------------------------------------
def test_gigantic_texts_are_capped(tmp_path):
    pasted = "stacktrace frame " * 20_000 + " tangerine"
    tool_output = "kumquat " * 200_000
    write_jsonl(tmp_path / "p" / f"{SESSION_A}.jsonl", [
        user(SESSION_A, 1, "Why does this crash? " + pasted),
        assistant(SESSION_A, 2, "msg_1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
        user(SESSION_A, 3, [{"tool_use_id": "t1", "type": "tool_result", "content": tool_output}],
             toolUseResult={"stdout": tool_output}),
        assistant(SESSION_A, 4, "msg_2", [text("The crash comes from a recursion in the stacktrace formatter.")]),
    ])
    with TranscriptDomain([tmp_path / "p"], index_path=":memory:") as d:
        assert d.refresh()["turns_added"] == 2
        stored = d.conn.execute("SELECT length(text), chars FROM turns WHERE turn = 1").fetchone()
        assert stored == (MAX_TURN_CHARS, len("Why does this crash? " + pasted))
        assert d.recall("kumquat", k=3) == [] and d.recall("tangerine", k=3) == []  # beyond the cap
        hit = d.recall("crash stacktrace frame", k=1, filters={"session": SESSION_A})[0]
        assert hit.meta["turn"] == 1 and hit.meta["truncated"]["chars"] > MAX_TURN_CHARS
        assert "more characters not indexed" in hit.text
        assert len(hit.text) < MAX_TURN_CHARS + 3_000


def test_binary_junk_and_non_utf8_bytes_are_skipped_and_counted(tmp_path):
    path = tmp_path / "p" / f"{SESSION_A}.jsonl"
    path.parent.mkdir(parents=True)
    good = json.dumps(user(SESSION_A, 1, "Deploy the billing service")).encode()
    latin = json.dumps(user(SESSION_A, 2, "café ÉLAN menu")).encode().replace(b"\\u00e9", b"\xe9")
    path.write_bytes(b"\x00\xff\xfe\x89PNG\r\n\x1a\n" + good + b"\n" + b"{not json}\n" + latin + b"\n"
                     + b"[" * 100_000 + b"\n" + b"42\n" + good.replace(b"billing", b"ledger") + b"\n")
    with TranscriptDomain([tmp_path / "p"], index_path=":memory:") as d:
        report = d.refresh()
        assert report["turns_added"] == 3
        assert report["skipped"] == [{"path": str(path.resolve()), "reason": "5 unparseable line(s) skipped"}]
        assert d.recall("billing service deploy", k=1)[0].meta["turn"] == 1
        assert d.recall("elan menu", k=1)[0].meta["turn"] == 2  # the bad byte became U+FFFD
        assert d.stats()["bad_lines"] == 5


def test_empty_file_empty_folder_and_missing_root(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / f"{SESSION_A}.jsonl").write_bytes(b"")
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "notes.md").write_text("# not a transcript\n")
    with TranscriptDomain([tmp_path / "p", tmp_path / "nothing", tmp_path / "gone"], index_path=":memory:") as d:
        report = d.refresh()
        assert (report["files"], report["turns_added"], report["sessions"]) == (1, 0, 0)
        assert report["skipped"] == [
            {"path": str((tmp_path / "nothing").resolve()), "reason": "no transcripts (*.jsonl) in it"},
            {"path": str((tmp_path / "gone").resolve()), "reason": "not found"}]
        assert d.recall("anything at all here", k=3) == []


def test_a_single_file_root(projects):
    with TranscriptDomain([projects / BLOG / f"{SESSION_B}.jsonl"], index_path=":memory:") as d:
        report = d.refresh()
        assert (report["files"], report["turns_added"]) == (1, 2)
        assert d.recall("rss feed", k=1)[0].meta["project"] == BLOG


def test_two_processes_sharing_an_index_do_not_duplicate_turns(projects, tmp_path):
    index = tmp_path / "shared.sqlite"
    with TranscriptDomain([projects], index_path=index) as one, TranscriptDomain([projects], index_path=index) as two:
        one.refresh()
        two.refresh()
        append_jsonl(projects / BLOG / f"{SESSION_B}.jsonl", [user(SESSION_B, 3, "Add tags to the feed entries")])
        assert one.refresh()["turns_added"] + two.refresh()["turns_added"] == 1
        assert two.stats()["turns"] == 8
