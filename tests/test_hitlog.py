"""The hit-log (L2): every recall leaves one line per unit; parallel writers lose nothing;
truncated, corrupt, missing or unwritable logs never break a recall."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from memlane import Memory
from memlane.lifecycle import HitLog
from memlane.lifecycle.hitlog import query_hash


def rows(n: int, prefix: str = "u") -> list[dict]:
    return [{"path": f"/m/{prefix}{i}.md", "name": f"{prefix}{i}", "rank": i + 1, "score": 0.5,
             "parts": {"fused": 0.5}} for i in range(n)]


def test_record_and_read(tmp_path):
    log = HitLog(tmp_path / "hits.jsonl")
    assert log.record("why is CI red?", rows(2), session="s1", depth="full", bracket="FRESH")
    got = list(log.read())
    assert [r["name"] for r in got] == ["u0", "u1"]
    first = got[0]
    assert first["session"] == "s1" and first["q"] == query_hash("why is CI red?") and first["depth"] == "full"
    assert first["bracket"] == "FRESH" and first["parts"] == {"fused": 0.5} and first["layer"] == "recall"
    assert "why is CI red" not in (tmp_path / "hits.jsonl").read_text()  # the prompt itself is not stored


def test_missing_truncated_and_corrupt_lines(tmp_path):
    log = HitLog(tmp_path / "hits.jsonl")
    assert list(log.read()) == []
    log.record("q", rows(2))
    with open(log.path, "ab") as handle:
        handle.write(b'not json\n\xff\xfe\n{"t": 1, "name": "cut off')
    assert [r["name"] for r in log.read()] == ["u0", "u1"]
    log.record("q", rows(1, "after"))  # appending after a truncated line loses nothing
    assert [r["name"] for r in log.read()] == ["u0", "u1", "after0"]


def test_parallel_writers_lose_no_rows(tmp_path):
    path = tmp_path / "hits.jsonl"
    script = (
        "import sys\nfrom memlane.lifecycle import HitLog\n"
        f"log = HitLog({str(path)!r})\n"
        "for i in range(50):\n"
        "    log.record(f'q{i}', [{'path': f'/m/{sys.argv[1]}-{i}-{j}.md', 'name': 'x' * 300, 'rank': j,"
        " 'score': 0.1} for j in range(3)], session=sys.argv[1])\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, f"p{n}"]) for n in range(8)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    records = list(HitLog(path).read())
    assert len(records) == 8 * 50 * 3
    assert len({r["unit"] for r in records}) == 8 * 50 * 3
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert len(lines) == 8 * 50 * 3 and all(json.loads(line) for line in lines)  # no torn lines
    # (a writer that reads the file's end while another's write is landing may add one blank line: harmless)


def test_rotation_keeps_recent_history(tmp_path):
    log = HitLog(tmp_path / "hits.jsonl", max_bytes=2_000, keep=2)
    for i in range(40):
        log.record(f"q{i}", rows(1, f"r{i}-"))
    files = log.files()
    assert [p.name for p in files][-1] == "hits.jsonl" and len(files) <= 3
    names = [r["name"] for r in log.read()]
    assert names[-1] == "r39-0" and names == sorted(names, key=lambda n: int(n[1:].split("-")[0]))


def test_an_unwritable_log_never_breaks_recall(store, tmp_path, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    log = HitLog(blocker / "hits.jsonl")
    with caplog.at_level(logging.WARNING, logger="memlane"):
        assert log.record("q", rows(1)) is False
    assert "not written" in caplog.text


def test_recall_writes_the_hit_log(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        hits = mem.recall("release the postgres upgrade", session="abc")
        records = list(mem.hit_log.read())
    assert [r["name"] for r in records] == [h["name"] for h in hits]
    assert {r["session"] for r in records} == {"abc"} and all("fused" in r["parts"] for r in records)
    assert json.loads((tmp_path / "i.sqlite.hits.jsonl").read_text().splitlines()[0])["rank"] == 1


def test_a_rotated_log_from_before_the_logs_were_private_becomes_so(tmp_path):
    """The hit-log quotes no prompt but names the notes recalled: a rotated file an older version
    left readable by others is made the user's alone when it moves on."""
    import os
    import stat

    path = tmp_path / "hits.jsonl"
    old = tmp_path / "hits.jsonl.1"
    old.write_text('{"t": 1, "unit": "u", "name": "n"}\n')
    os.chmod(old, 0o644)
    log = HitLog(path, max_bytes=2_000, keep=3)
    for i in range(40):
        log.record(f"q{i}", rows(1, f"r{i}-"))
        if (tmp_path / "hits.jsonl.2").exists():
            break  # the first rotation: the old file moved on to .2
    assert (tmp_path / "hits.jsonl.2").read_text().startswith('{"t": 1, "unit": "u"')
    for rotated in log.files():
        assert stat.S_IMODE(rotated.stat().st_mode) & 0o077 == 0, rotated.name
