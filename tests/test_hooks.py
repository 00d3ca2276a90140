"""The Claude Code hooks, run as Claude Code runs them: a subprocess, the event JSON on stdin,
the hookSpecificOutput JSON (or nothing) on stdout, exit 0 whatever happens.

Golden inputs follow Claude Code's hook and transcript contracts: transcripts
with sidechain lines, a message id repeated by streaming, ``<synthetic>`` lines and a compact
boundary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_note
from memlane.config import Bracket, InjectConfig
from memlane.inject.layers import choose_bracket
from memlane.inject.render import render
from memlane.retrieve.recalled import Recalled as Item
from memlane.inject.transcript import read_gemini, read_transcript

CAP = 10_000


# -- golden transcripts ----------------------------------------------------------------------------
def user_line(text, *, sidechain=False, uuid="u"):
    return {"type": "user", "isSidechain": sidechain, "uuid": uuid, "sessionId": "s",
            "message": {"role": "user", "content": text}}


def assistant_line(used, *, model="claude-sonnet-5", sidechain=False, mid="m1"):
    return {"type": "assistant", "isSidechain": sidechain, "uuid": mid, "requestId": "r-" + mid,
            "message": {"model": model, "id": mid, "type": "message", "role": "assistant",
                        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": used // 10, "cache_creation_input_tokens": used // 2,
                                  "cache_read_input_tokens": used - used // 10 - used // 2, "output_tokens": 50}}}


def write_transcript(path: Path, used: int, *, compact_after=False) -> Path:
    lines = [
        {"type": "summary", "summary": "an earlier session"},
        user_line("how do we key the CI caches?", uuid="u1"),
        assistant_line(used // 2, mid="m0"),
        user_line([{"type": "tool_result", "tool_use_id": "t1", "content": "output"}], uuid="u2"),
        assistant_line(used, mid="m1"),
        assistant_line(used, mid="m1"),  # streaming re-emits the same message id
        assistant_line(190_000, sidechain=True, mid="m9"),  # a subagent's context: not ours
        {"type": "assistant", "isSidechain": False, "uuid": "x",
         "message": {"model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": "…"}],
                     "usage": {"input_tokens": 0, "output_tokens": 0}}},
        {"type": "system", "subtype": "local_command", "content": "<command-name>/cost</command-name>"},
    ]
    if compact_after:
        lines.append({"type": "system", "subtype": "compact_boundary",
                      "compactMetadata": {"trigger": "auto", "preTokens": 167189}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{torn", encoding="utf-8")
    return path


def test_fill_comes_from_the_last_main_thread_usage(tmp_path):
    view = read_transcript(write_transcript(tmp_path / "t.jsonl", 100_000))
    assert view.used_tokens == 100_000 and view.model == "claude-sonnet-5" and not view.compacted
    assert view.fill() == pytest.approx(0.5)
    assert view.recent_user_turns == ["how do we key the CI caches?"]  # the tool result is no turn


def test_a_compact_boundary_makes_the_fill_unknown(tmp_path):
    view = read_transcript(write_transcript(tmp_path / "t.jsonl", 100_000, compact_after=True))
    assert view.compacted and view.fill() is None


def test_a_missing_or_garbage_transcript_is_an_empty_view(tmp_path):
    assert read_transcript(tmp_path / "nope.jsonl").problem
    (tmp_path / "g.jsonl").write_bytes(b"\x00\xff garbage\n[1,2]\n")
    view = read_transcript(tmp_path / "g.jsonl")
    assert view.fill() is None and view.recent_user_turns == []


@pytest.mark.parametrize("name", ["fifo.jsonl", "fifo.json", "/dev/zero", "folder"])
def test_a_transcript_that_is_not_a_regular_file_is_not_read(tmp_path, name):
    """A FIFO blocks its open until a writer comes and /dev/zero never ends: either would hold the
    hook, and the daemon's workspace behind it, for good."""
    import threading

    path = Path(name) if name.startswith("/") else tmp_path / name
    if name.startswith("fifo"):
        os.mkfifo(path)
    elif name == "folder":
        path.mkdir()
    views = []
    reader = threading.Thread(target=lambda: views.append(read_transcript(path)), daemon=True)
    reader.start()
    reader.join(10)
    assert views and views[0].problem and views[0].fill() is None, "the transcript's reader did not return"


@pytest.mark.parametrize("fill, bracket", [(0.10, Bracket.FRESH), (0.50, Bracket.MODERATE),
                                           (0.80, Bracket.DEPLETED), (None, Bracket.MODERATE)])
def test_brackets(fill, bracket):
    assert choose_bracket(fill, InjectConfig())[0] is bracket


# -- rendering within the cap ------------------------------------------------------------------------
def test_rendering_never_exceeds_the_cap_and_cuts_at_note_boundaries():
    items = [(Item(name=f"n{i}", title=f"Note {i}", path=f"/m/n{i}.md", description="d" * 80, body="x" * 4000),
              "full") for i in range(40)]
    out = render(items, header="H", budget_tokens=100_000, max_chars=CAP)
    assert len(out.text) <= CAP and out.shown and out.omitted
    assert [d for _, d in out.shown[:2]] == ["full", "full"] and out.shown[2][1] == "index"  # then index lines
    assert out.text.rstrip().endswith("prints one)")
    assert "Notes below are files in /m/" in out.text and out.text.count("/m/") == 1  # the folder once,
    for item, depth in out.shown:
        assert (("x" * 4000) in out.text) if depth == "full" else f"— n{item.name[1:]}.md" in out.text  # names after


def test_a_depleted_bracket_still_shows_every_match_as_a_line():
    items = [(Item(name=f"n{i}", title=f"Note {i}", path=f"/m/n{i}.md", body="b" * 3000), "index") for i in range(3)]
    out = render(items, header="H", budget_tokens=10, max_chars=CAP)
    assert [d for _, d in out.shown] == ["index"] * 3 and "b" * 200 not in out.text


# -- the hook as a subprocess ------------------------------------------------------------------------
@pytest.fixture
def hook_env(tmp_path, sealed_env):
    store = tmp_path / "store"
    write_note(store, "user_role.md", "---\nname: user_role\ndescription: The user is a backend engineer who "
               "prefers terse answers\ntype: user\n---\nPrefers Go and terse answers.\n")
    write_note(store, "project_freeze.md", "---\nname: project_freeze\ndescription: Release freeze until the Q3 "
               "audit is done\ntype: project\nimportance: 0.9\n---\nNo releases before the Q3 audit closes.\n")
    write_note(store, "feedback_ci_cache.md", "---\nname: feedback_ci_cache\ndescription: Key CI caches on the "
               "lockfile hash, never on the branch name\ntype: feedback\n---\nCaches keyed on branch names go "
               "stale after a rebase; key them on the lockfile hash.\n")
    write_note(store, "feedback_lock_timeout.md", "---\nname: feedback_lock_timeout\ndescription: Set "
               "lock_timeout first\ntype: feedback\npaths: [\"db/migrations/*.sql\"]\n---\nA statement waiting on "
               "a lock blocks every writer behind it.\n")
    return {"store": store, "index": tmp_path / "i.sqlite", "tmp": tmp_path}


def run_hook(env, event, payload, *extra, raw=None):
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "hook", event, "--store", str(env["store"]),
           "--embedder", "none", "--index", str(env["index"]), *extra]
    stdin = raw if raw is not None else json.dumps(payload)
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    return proc


def prompt_payload(env, prompt, session="s1", transcript=None):
    return {"session_id": session, "transcript_path": str(transcript or env["tmp"] / "none.jsonl"),
            "cwd": str(env["tmp"]), "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
            "prompt": prompt}


def context_of(proc) -> str:
    assert proc.returncode == 0, proc.stderr
    if not proc.stdout.strip():
        return ""
    data = json.loads(proc.stdout)
    assert set(data) == {"hookSpecificOutput"}
    out = data["hookSpecificOutput"]
    assert out["hookEventName"] in ("UserPromptSubmit", "SessionStart")
    assert len(out["additionalContext"]) <= CAP
    return out["additionalContext"]


def test_user_prompt_submit_injects_background_with_source_paths(hook_env):
    text = context_of(run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "why is the CI cache stale after a rebase?")))
    assert text.startswith("Relevant memory (background facts") and "feedback_ci_cache.md" in text
    assert "key them on the lockfile hash" in text  # unknown fill -> moderate: the best note in full


@pytest.mark.parametrize("fill, bracket", [(0.10, "fresh"), (0.50, "moderate"), (0.80, "depleted")])
def test_the_bracket_follows_the_transcript(hook_env, fill, bracket):
    transcript = write_transcript(hook_env["tmp"] / "t.jsonl", int(200_000 * fill))
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?", transcript=transcript)
    proc = run_hook(hook_env, "user-prompt-submit", payload, "--explain")
    report = json.loads(proc.stdout.split("\n\n", 1)[0])
    assert report["bracket"] == bracket and report["fill_source"] == "transcript"
    text = context_of(run_hook(hook_env, "user-prompt-submit", payload))
    assert ("### " in text) == (bracket != "depleted")


def test_dedup_across_prompts_and_reset_after_compact(hook_env):
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?")
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload))
    assert context_of(run_hook(hook_env, "user-prompt-submit", payload)) == ""
    assert context_of(run_hook(hook_env, "user-prompt-submit", payload)) == ""
    start = {"session_id": "s1", "transcript_path": payload["transcript_path"], "cwd": payload["cwd"],
             "hook_event_name": "SessionStart", "source": "compact"}
    context_of(run_hook(hook_env, "session-start", start))
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload))
    # another session has its own state
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload | {"session_id": "s2"}))


def test_codex_resets_what_the_session_saw_after_a_compaction(hook_env, tmp_path, monkeypatch):
    """Codex starts the session again with source ``compact`` once it has compacted its context:
    the installed hook listens for it, and a note the compaction dropped comes back at the next
    prompt (before, the matcher left ``compact`` out and the note stayed away for 120 minutes)."""
    from memlane.adapters import install

    monkeypatch.chdir(hook_env["tmp"])
    (matcher,) = [g["matcher"] for g in json.loads(install.plan(tmp_path / "hooks.json", "codex").after)["hooks"]
                  ["SessionStart"]]
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?", session="codex-1")
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload, "--agent", "codex"))
    assert context_of(run_hook(hook_env, "user-prompt-submit", payload, "--agent", "codex")) == ""
    start = {"session_id": "codex-1", "transcript_path": None, "cwd": payload["cwd"], "model": "gpt-5.5",
             "permission_mode": "default", "hook_event_name": "SessionStart", "source": "compact"}
    assert "compact" in matcher.split("|")
    context_of(run_hook(hook_env, "session-start", start, "--agent", "codex"))
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload, "--agent", "codex"))


def test_an_edited_note_is_injected_again(hook_env):
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?")
    context_of(run_hook(hook_env, "user-prompt-submit", payload))
    note = hook_env["store"] / "feedback_ci_cache.md"
    note.write_text(note.read_text() + "Also purge the old cache once.\n")
    assert "purge the old cache" in context_of(run_hook(hook_env, "user-prompt-submit", payload))


def test_session_start_injects_identity_and_project_facts(hook_env):
    start = {"session_id": "s9", "transcript_path": "/nowhere.jsonl", "cwd": str(hook_env["tmp"]),
             "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-5"}
    text = context_of(run_hook(hook_env, "session-start", start))
    assert "About you:" in text and "backend engineer" in text
    assert "This project:" in text and "Release freeze" in text
    assert text.index("About you:") < text.index("This project:")


def test_a_file_named_in_the_prompt_triggers_its_note(hook_env):
    text = context_of(run_hook(hook_env, "user-prompt-submit",
                               prompt_payload(hook_env, "review db/migrations/0042_add_owner.sql please")))
    assert "feedback_lock_timeout.md" in text and "paths: db/migrations/*.sql matches" in text


def test_a_short_prompt_borrows_the_previous_user_turn(hook_env):
    transcript = hook_env["tmp"] / "t.jsonl"
    transcript.write_text(json.dumps(user_line("our CI cache goes stale after every rebase")) + "\n")
    proc = run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "ok fix it", transcript=transcript),
                    "--explain")
    report = json.loads(proc.stdout.split("\n\n", 1)[0])
    assert report["query"] == "our CI cache goes stale after every rebase ok fix it"
    assert report["shown"] and report["shown"][0]["name"] == "feedback_ci_cache"


@pytest.mark.parametrize("path", [5, ["t.jsonl"], {"a": 1}, True])
def test_a_transcript_path_that_is_no_string_is_no_transcript(hook_env, path):
    """Not the setup's fault, so no "memory is off" for the user: the prompt is recalled as without a transcript."""
    assert read_transcript(path).problem and read_gemini(path).problem
    payload = {**prompt_payload(hook_env, "why is the CI cache stale after a rebase?"), "transcript_path": path}
    proc = run_hook(hook_env, "user-prompt-submit", payload)
    assert "systemMessage" not in proc.stdout and "feedback_ci_cache.md" in context_of(proc)


@pytest.mark.parametrize("raw", ["not json at all", "[1, 2, 3]", "", "{\"prompt\": 42}"])
def test_garbage_stdin_exits_0_with_nothing_and_a_log_line(hook_env, raw, sealed_env):
    proc = run_hook(hook_env, "user-prompt-submit", None, raw=raw)
    assert proc.returncode == 0 and proc.stdout == ""
    if raw.strip() and raw != "{\"prompt\": 42}":
        assert "failed, nothing injected" in (sealed_env / "cache" / "hook.log").read_text()


@pytest.mark.parametrize("raw, kind", [("[1]", "an array"), ('"hi"', "a string"), ("null", "null"),
                                       ("7", "a number"), ("true", "a boolean")])
def test_hook_input_that_is_no_object_is_named_in_json_words(raw, kind):
    """What `memlane doctor` and `recall --prompt-json` show the user names JSON's kinds, not Python's types."""
    from memlane.adapters.hook import parse_payload

    with pytest.raises(ValueError, match=f"^hook input is {kind} in JSON, not an object$"):
        parse_payload(raw)


def test_a_broken_config_or_index_never_blocks(hook_env, monkeypatch, sealed_env):
    bad = hook_env["tmp"] / "bad.toml"
    bad.write_text("[retrieve\nk = ")
    monkeypatch.setenv("MEMLANE_CONFIG", str(bad))
    proc = run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "ci cache"))
    assert proc.returncode == 0 and "additionalContext" not in proc.stdout  # nothing for the model,
    assert "memory is off" in json.loads(proc.stdout)["systemMessage"]  # a word for the user
    assert "ConfigError" in (sealed_env / "cache" / "hook.log").read_text()
    monkeypatch.delenv("MEMLANE_CONFIG")
    hook_env["index"].mkdir()  # the index path is a folder: unopenable
    text = context_of(run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "ci cache rebase")))
    assert "feedback_ci_cache.md" in text  # an in-memory index for this run


def test_explain_is_a_dry_run(hook_env):
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?")
    for _ in range(2):
        proc = run_hook(hook_env, "user-prompt-submit", payload, "--explain")
        assert json.loads(proc.stdout.split("\n\n", 1)[0])["shown"]
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload))


def test_parallel_sessions(hook_env):
    context_of(run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "warm up the index")))
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "hook", "user-prompt-submit", "--store",
           str(hook_env["store"]), "--embedder", "none", "--index", str(hook_env["index"])]
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    for n, proc in enumerate(procs):
        proc.stdin.write(json.dumps(prompt_payload(hook_env, "why is the CI cache stale after a rebase?",
                                                   session=f"p{n}")))
        proc.stdin.close()
    outputs = [(proc.wait(timeout=120), proc.stdout.read()) for proc in procs]
    assert all(code == 0 and "feedback_ci_cache.md" in out for code, out in outputs)
    log = Path(f"{hook_env['index']}.hits.jsonl").read_text().splitlines()
    sessions = {json.loads(line)["session"] for line in log if line.strip()}
    assert {f"p{n}" for n in range(8)} <= sessions


def test_statusline_side_file_sets_the_bracket(hook_env):
    status = {"session_id": "s5", "transcript_path": "/x.jsonl", "model": {"id": "claude-opus-5"},
              "context_window": {"context_window_size": 200_000, "used_percentage": 85, "remaining_percentage": 15}}
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.cli", "statusline"], input=json.dumps(status),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "85% of context used" in proc.stdout
    report = json.loads(run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "ci cache rebase", session="s5"),
                                 "--explain").stdout.split("\n\n", 1)[0])
    assert report["bracket"] == "depleted" and report["fill_source"] == "statusline"


@pytest.mark.parametrize("used, shown, bracket", [
    (float("nan"), None, "moderate"), (float("inf"), None, "moderate"), (True, None, "moderate"),
    (1e308, "100%", "depleted"), (-40, "0%", "fresh")])
def test_statusline_reads_a_percentage_out_of_range_as_what_it_can_be(hook_env, used, shown, bracket):
    # NaN, infinity or true is no fill (the configured default bracket), not "nan% of context used"
    # and a depleted context; a number past either end is held to 0-100
    status = {"session_id": "s6", "context_window": {"context_window_size": 200_000, "used_percentage": used}}
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.cli", "statusline"], input=json.dumps(status),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == (f"memlane · {shown} of context used\n" if shown else "memlane\n")
    report = json.loads(run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "ci cache rebase", session="s6"),
                                 "--explain").stdout.split("\n\n", 1)[0])
    assert report["bracket"] == bracket


def test_a_side_file_an_older_statusline_wrote_with_nan_is_no_fill(hook_env):
    import time

    from memlane.inject.session import context_file, read_context

    path = context_file("s7")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{"used_percentage": NaN, "window": 200000, "t": {time.time()}}}', encoding="utf-8")
    assert read_context("s7", max_age_s=60) == (None, 200_000)
    path.write_text(f'{{"used_percentage": 250, "window": 200000, "t": {time.time()}}}', encoding="utf-8")
    assert read_context("s7", max_age_s=60) == (1.0, 200_000)


def test_gemini_names_the_prompt_event_before_agent(hook_env):
    proc = run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "why is the CI cache stale after a rebase?"),
                    "--agent", "gemini")
    data = json.loads(proc.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "feedback_ci_cache.md" in data["hookSpecificOutput"]["additionalContext"]


def test_cursor_session_start_uses_its_own_shape(hook_env):
    start = {"hook_event_name": "sessionStart", "conversation_id": "c1", "generation_id": "g1",
             "workspace_roots": [str(hook_env["tmp"])]}
    proc = run_hook(hook_env, "session-start", start, "--agent", "cursor")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert set(data) == {"additional_context"} and "Release freeze" in data["additional_context"]
    proc = run_hook(hook_env, "user-prompt-submit", {"prompt": "ci cache", "conversation_id": "c1"}, "--agent", "cursor")
    assert json.loads(proc.stdout) == {"continue": True}  # Cursor's prompt hook cannot add context


# -- Codex and Gemini transcripts ------------------------------------------------------------------
def write_codex_rollout(path: Path, used: int, window: int = 272_000, *, compacted=False) -> Path:
    """A Codex CLI rollout: ``{timestamp, type, payload}`` lines, token counts as events."""
    def line(kind, payload):
        return {"timestamp": "2026-11-29T10:00:00.000Z", "type": kind, "payload": payload}

    def tokens(n):
        usage = {"input_tokens": n, "cached_input_tokens": n // 2, "output_tokens": 300,
                 "reasoning_output_tokens": 100, "total_tokens": n + 300}
        return line("event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                                  "model_context_window": window}, "rate_limits": None})

    lines = [
        line("session_meta", {"id": "019a", "cwd": "/repo", "cli_version": "0.58.0"}),
        line("turn_context", {"cwd": "/repo", "model": "gpt-5-codex"}),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "<environment_context>…"}]}),
        line("event_msg", {"type": "user_message", "message": "our CI cache goes stale after every rebase"}),
        tokens(used // 3),
        line("event_msg", {"type": "token_count", "info": None, "rate_limits": {}}),  # before any usage
        tokens(used),
    ]
    if compacted:
        lines.append(line("compacted", {"message": "summary of the conversation"}))
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def write_gemini_recording(path: Path, used: int) -> Path:
    """A Gemini CLI chat recording: one JSON document with ``messages``."""
    path.write_text(json.dumps({"sessionId": "g1", "projectHash": "ab", "startTime": "2026-11-29T10:00:00Z",
                                "lastUpdated": "2026-11-29T10:05:00Z", "messages": [
        {"id": "1", "timestamp": "t", "type": "user", "content": "our CI cache goes stale after every rebase"},
        {"id": "2", "timestamp": "t", "type": "gemini", "content": "Looking.", "model": "gemini-2.5-pro",
         "tokens": {"input": used, "output": 40, "cached": used // 2, "thoughts": 10, "tool": 0, "total": used + 50}},
        {"id": "3", "timestamp": "t", "type": "info", "content": "tool ran"},
    ]}), encoding="utf-8")
    return path


def test_codex_fill_comes_from_its_token_count_events(tmp_path):
    view = read_transcript(write_codex_rollout(tmp_path / "rollout.jsonl", 136_000))
    assert view.used_tokens == 136_000 and view.window == 272_000 and view.fill() == 0.5
    assert view.model == "gpt-5-codex"
    assert view.recent_user_turns == ["our CI cache goes stale after every rebase"]
    compacted = read_transcript(write_codex_rollout(tmp_path / "c.jsonl", 136_000, compacted=True))
    assert compacted.compacted and compacted.fill() is None


def test_gemini_fill_comes_from_its_last_reply(tmp_path):
    view = read_transcript(write_gemini_recording(tmp_path / "session-1.json", 850_000))
    assert view.used_tokens == 850_000 and view.model == "gemini-2.5-pro" and view.fill() == 0.85
    assert view.recent_user_turns == ["our CI cache goes stale after every rebase"]
    (tmp_path / "bad.json").write_text("{not json")
    assert read_transcript(tmp_path / "bad.json").problem == "transcript is not JSON"


def write_gemini_jsonl_recording(path: Path, used: int) -> Path:
    """A Gemini CLI chat recording as newer versions write it: JSONL records — a metadata line,
    each message as recorded (again, whole, when it changes), ``$set`` updates, ``$rewindTo``."""
    tokens = {"input": used, "output": 40, "cached": used // 2, "thoughts": 10, "tool": 0, "total": used + 50}
    reply = {"id": "2", "timestamp": "t", "type": "gemini", "content": "Looking.", "model": "gemini-2.5-pro"}
    records = [
        {"sessionId": "g1", "projectHash": "ab", "startTime": "2026-11-29T10:00:00Z", "lastUpdated": "t"},
        {"id": "1", "timestamp": "t", "type": "user", "content": [{"text": "our CI cache goes stale after every rebase"}]},
        {"$set": {"lastUpdated": "t"}},
        reply, {**reply, "tokens": tokens},  # the reply again, once its usage came in
        {"id": "3", "timestamp": "t", "type": "user", "content": "a prompt the user rewound"},
        {"id": "4", "timestamp": "t", "type": "gemini", "content": "x", "model": "gemini-2.5-pro",
         "tokens": {**tokens, "input": 1}},
        {"$rewindTo": "3"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + '\n{"id": "5", "ty', encoding="utf-8")  # torn last
    return path


def test_gemini_jsonl_recording_gives_the_fill_and_turns_too(tmp_path):
    view = read_gemini(write_gemini_jsonl_recording(tmp_path / "session-2026-11-29T10-00-g1.jsonl", 850_000))
    assert view.problem is None and view.used_tokens == 850_000 and view.fill() == 0.85
    assert view.recent_user_turns == ["our CI cache goes stale after every rebase"]
    history = [{"id": "9", "type": "user", "content": "the history after a compression"}]
    with open(tmp_path / "session-2026-11-29T10-00-g1.jsonl", "a", encoding="utf-8") as handle:
        handle.write("\n" + json.dumps({"$set": {"messages": history}}) + "\n")
    view = read_gemini(tmp_path / "session-2026-11-29T10-00-g1.jsonl")
    assert view.used_tokens is None and view.recent_user_turns == ["the history after a compression"]


@pytest.mark.parametrize("agent, writer, used, bracket", [
    ("codex", write_codex_rollout, 27_000, "fresh"), ("codex", write_codex_rollout, 220_000, "depleted"),
    ("gemini", write_gemini_recording, 500_000, "moderate"),
    ("gemini", write_gemini_jsonl_recording, 500_000, "moderate"),
])
def test_codex_and_gemini_hooks_choose_the_bracket_from_their_transcripts(hook_env, agent, writer, used, bracket):
    transcript = writer(hook_env["tmp"] / ("t.json" if writer is write_gemini_recording else "t.jsonl"), used)
    payload = prompt_payload(hook_env, "ok fix it", transcript=transcript)  # short: borrows the user's last turn
    proc = run_hook(hook_env, "user-prompt-submit", payload, "--agent", agent, "--explain")
    report = json.loads(proc.stdout.split("\n\n", 1)[0])
    assert report["bracket"] == bracket and report["fill_source"] == "transcript"
    assert report["query"] == "our CI cache goes stale after every rebase ok fix it"
    assert "feedback_ci_cache" in report["layers"]["L3"]["recalled"]


def test_recall_prompt_json_shows_what_the_hook_would_inject_and_why(hook_env, tmp_path):
    transcript = write_transcript(tmp_path / "t.jsonl", int(200_000 * 0.8))
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?", transcript=transcript)
    (tmp_path / "in.json").write_text(json.dumps(payload))
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "recall", "--prompt-json", str(tmp_path / "in.json"),
           "--store", str(hook_env["store"]), "--embedder", "none", "--index", str(hook_env["index"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bracket: depleted — fill 80% of 200,000 tokens, from the transcript")
    assert "index feedback_ci_cache" in proc.stdout and "why (the recall ranking" in proc.stdout
    assert "score: relevance" in proc.stdout and "--- the injected text ---" in proc.stdout
    data = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120).stdout)
    assert data["report"]["bracket"] == "depleted" and data["ranking"][0]["name"] == "feedback_ci_cache"
    # a dry run: the same input through the real hook still injects (nothing was marked as seen)
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit", payload))
    bad = subprocess.run([*cmd[:5], str(tmp_path / "missing.json"), *cmd[6:]], capture_output=True, text=True)
    assert bad.returncode != 0 and "missing.json" in bad.stderr


def test_recall_prompt_json_says_it_would_inject_the_menu_when_only_the_menu_comes(hook_env, tmp_path):
    """Every note the prompt recalls was injected earlier in the session: the hook still prints the
    menu of further candidates, and the dry run says so (not "would inject nothing")."""
    write_note(hook_env["store"], "project_ci_green.md", "---\nname: project_ci_green\ndescription: Releases wait "
               "for a green pipeline\ntype: project\n---\nThe CI must be green before anything ships.\n")
    assert "feedback_ci_cache.md" in context_of(run_hook(hook_env, "user-prompt-submit",
                                                         prompt_payload(hook_env, "lockfile hash", session="menu")))
    payload = prompt_payload(hook_env, "why is the CI cache stale after a rebase?", session="menu")
    (tmp_path / "in.json").write_text(json.dumps(payload))
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "recall", "--prompt-json", str(tmp_path / "in.json"),
           "--store", str(hook_env["store"]), "--embedder", "none", "--index", str(hook_env["index"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    injected = proc.stdout.split("--- the injected text ---\n", 1)[1]
    assert "Possibly relevant" in injected and "project_ci_green.md" in injected
    assert "would inject nothing" not in proc.stdout
    assert f"would inject {len(injected.rstrip(chr(10))):,} characters:" in proc.stdout
    assert "already injected in this session: feedback_ci_cache" in proc.stdout
    assert f"menu  {hook_env['store'] / 'project_ci_green.md'}" in proc.stdout
    # and the hook itself injects just that
    assert context_of(run_hook(hook_env, "user-prompt-submit", payload)) == injected.rstrip("\n")


def test_recall_prompt_json_prints_a_pasted_page_of_a_prompt_as_one_short_line(hook_env, tmp_path):
    """A prompt that pastes a log is echoed on the query line cut, on one line, with its length
    (it printed every character the hook keeps, across the log's lines); --json keeps it whole."""
    prompt = "why is the CI cache stale after a rebase?\n" + "".join(f"step {n}: cache miss\n" for n in range(2000))
    (tmp_path / "in.json").write_text(json.dumps(prompt_payload(hook_env, prompt)))
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "recall", "--prompt-json", str(tmp_path / "in.json"),
           "--store", str(hook_env["store"]), "--embedder", "none", "--index", str(hook_env["index"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("query: ")]
    assert line.startswith("query: why is the CI cache stale after a rebase? step 0: cache miss step 1")
    assert len(line) < 600 and "characters; --json has them all)" in line
    assert "step 1999: cache miss" not in proc.stdout.split("--- the injected text ---")[0]
    data = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120).stdout)
    assert "step 1999: cache miss" in data["report"]["query"]


def test_the_hook_log_is_kept_small(tmp_path):
    """Past its size the log becomes ``hook.log.1`` and a new one begins: two files at most."""
    from memlane import logs
    from memlane.adapters.hook import _HookLog

    handler = _HookLog(tmp_path / "hook.log", max_bytes=200)
    logs.send_to(handler)
    try:
        for n in range(40):
            logs.get("memlane.test-hook-log").warning("line %d of a hook's diagnostics", n)
    finally:
        logs.send_to(None)
        handler.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["hook.log", "hook.log.1"]
    assert "memlane.test-hook-log: line 39 of a hook's diagnostics" in (tmp_path / "hook.log").read_text()
    assert all(p.stat().st_size < 400 for p in tmp_path.iterdir())


def test_the_hook_log_writes_logging_s_line_redacted_with_its_traceback(tmp_path):
    """Time, process, logger and message as ``logging``'s default format writes them, a secret in
    the message or its traceback redacted, and debug lines left out."""
    import re

    from memlane import logs
    from memlane.adapters.hook import _HookLog

    handler = _HookLog(tmp_path / "hook.log", max_bytes=10_000)
    logs.send_to(handler)
    token = "ghp_" + "a1B2" * 9
    try:
        logs.get("memlane.test").debug("not kept")
        logs.get("memlane.test").info("a prompt quoting %s", token)
        try:
            raise ValueError(f"bad {token}")
        except ValueError:
            logs.get("memlane.test").exception("failed: %d %s", 2, "ways")
    finally:
        logs.send_to(None)
        handler.close()
    text = (tmp_path / "hook.log").read_text()
    assert "not kept" not in text and token not in text
    assert re.match(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} {os.getpid()} memlane.test: a prompt quoting "
                    r"\[redacted secret\]\n", text)
    assert "memlane.test: failed: 2 ways\nTraceback (most recent call last):" in text
    assert "ValueError: bad [redacted secret]" in text


def test_the_hook_log_writes_the_control_characters_a_line_quotes_escaped(tmp_path):
    """A note's file name with an escape sequence in it (the daemon logs the files it skips): the
    README says to look at hook.log, and `tail` must not run what the name holds."""
    from memlane import logs
    from memlane.adapters.hook import _HookLog

    handler = _HookLog(tmp_path / "hook.log", max_bytes=10_000)
    logs.send_to(handler)
    try:
        logs.get("memlane.index").warning("skipped %s: binary file", "/m/evil\x1b]0;pwned\x07\u202e.md")
    finally:
        logs.send_to(None)
        handler.close()
    text = (tmp_path / "hook.log").read_text()
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "skipped /m/evil\\x1b]0;pwned\\x07\\u202e.md: binary file\n" in text


def test_a_hook_log_that_cannot_be_written_loses_the_line_not_the_answer(sealed_env, tmp_path):
    """A read-only cache or a folder where hook.log should be: the hook still answers."""
    import io

    from conftest import write_note
    from memlane.adapters.hook import run_hook

    (sealed_env / "cache").mkdir(parents=True, exist_ok=True)
    (sealed_env / "cache" / "hook.log").mkdir()
    store = tmp_path / "store"
    write_note(store, "feedback_ci_cache.md", "---\nname: ci cache\ndescription: Key CI caches on the lockfile hash"
               "\ntype: feedback\n---\nCaches keyed on branch names go stale after a rebase.\n")
    out = io.StringIO()
    payload = json.dumps({"session_id": "log-dir", "prompt": "why is the CI cache stale after a rebase?",
                          "transcript_path": None, "cwd": str(tmp_path)})
    assert run_hook("user-prompt-submit", stores=[str(store)], embedder="none", index=str(tmp_path / "i.sqlite"),
                    stdin=io.StringIO(payload), stdout=out) == 0
    assert "feedback_ci_cache" in out.getvalue()


def test_a_hook_log_whose_folder_vanishes_is_made_again_and_prints_no_traceback(tmp_path, capsys):
    """The cache folder deleted under a running hook: the log's folder is made again and the line
    written; nothing (no traceback) reaches stderr."""
    import shutil

    from memlane.adapters.hook import _HookLog

    folder = tmp_path / "cache"
    folder.mkdir()
    handler = _HookLog(folder / "hook.log", max_bytes=200)
    try:
        handler.write("memlane.test", 30, "before the folder went")
        shutil.rmtree(folder)
        for n in range(12):  # past max_bytes too: the rotation finds no file to move
            handler.write("memlane.test", 30, f"line {n} after the folder went")
    finally:
        handler.close()
    assert "line 11 after the folder went" in (folder / "hook.log").read_text()
    assert capsys.readouterr().err == ""


def test_a_hook_log_that_cannot_be_written_prints_no_traceback(tmp_path, capsys):
    """A log that cannot be made even so (a file where its folder should be) loses the line
    silently: a traceback would reach the hook's stderr."""
    from memlane.adapters.hook import _HookLog

    (tmp_path / "cache").write_text("a file, not a folder")
    handler = _HookLog(tmp_path / "cache" / "hook.log", max_bytes=200)
    try:
        handler.write("memlane.test", 30, "a line with nowhere to go")
    finally:
        handler.close()
    assert capsys.readouterr().err == ""


def test_a_hook_whose_cache_folder_vanishes_still_answers_silently(sealed_env, tmp_path, monkeypatch, capsys):
    """The cache folder deleted while the hook runs (after its log was set up): exit 0, the
    protocol answer on stdout, nothing on stderr."""
    import io
    import shutil

    from conftest import write_note
    from memlane.adapters import hook

    store = tmp_path / "store"
    write_note(store, "feedback_ci_cache.md", "---\nname: ci cache\ndescription: Key CI caches on the lockfile hash"
               "\ntype: feedback\n---\nCaches keyed on branch names go stale after a rebase.\n")
    real_final_text = hook._final_text

    def lose_the_cache_then_finish(text, max_chars):  # after the session state is written
        shutil.rmtree(sealed_env / "cache")
        return real_final_text(text, max_chars)

    monkeypatch.setattr(hook, "_final_text", lose_the_cache_then_finish)
    out = io.StringIO()
    payload = json.dumps({"session_id": "log-gone", "prompt": "why is the CI cache stale after a rebase?",
                          "transcript_path": None, "cwd": str(tmp_path)})
    assert hook.run_hook("user-prompt-submit", stores=[str(store)], embedder="none",
                         index=str(tmp_path / "i.sqlite"), stdin=io.StringIO(payload), stdout=out) == 0
    answer = json.loads(out.getvalue())
    assert "feedback_ci_cache" in json.dumps(answer)
    assert capsys.readouterr().err == ""


def test_two_session_ids_never_share_a_state_file():
    """An id that is a file name already (Claude Code's UUIDs) is the file's name; any other is
    cleaned and followed by its digest: "a/b" and "a_b", or two long ids alike in their first 120
    characters, no longer share what each session was shown."""
    from memlane.inject.session import SessionState

    uuid_id = "3f1c9a2e-7b4d-4e8a-9c1f-2d6b8e0a4c7d"
    assert SessionState.load(uuid_id).path.name == f"{uuid_id}.json"
    ids = ["a/b", "a_b", "a b", "x" * 130 + "1", "x" * 130 + "2", "../../etc", ".hidden", ""]
    names = [SessionState.load(i).path.name for i in ids]
    assert len(set(names)) == len(ids), names
    assert all("/" not in n and not n.startswith(".") for n in names)
    first = SessionState.load("a/b")
    first.injected = {"u1": ["h", 1.0, "full"]}
    first.save()
    assert SessionState.load("a_b").injected == {} and SessionState.load("a/b").injected == first.injected


def test_session_ids_differing_only_in_case_never_share_a_state_file():
    """macOS's file system ignores case by default: "Ab.json" and "aB.json" are one file there, so
    an id with a capital letter is followed by its digest (Claude Code's lower-case UUIDs keep
    their names); the told markers and the statusline side file likewise."""
    from memlane.inject.session import SessionState, _safe, context_file

    ids = ["Session-A", "session-a", "SESSION-A", "session-A"]
    for name in ([SessionState.load(i).path.name for i in ids], [context_file(i).name for i in ids],
                 [_safe(i) for i in ids]):
        assert len({n.lower() for n in name}) == len(ids), name
    assert SessionState.load("session-a").path.name == "session-a.json"


def test_no_session_id_has_a_state_file_no_session_id_can_take():
    """A hook input with no session id keeps its state apart from every real session's, whatever that is named."""
    from memlane.inject.session import SessionState, _safe

    none = _safe("")
    assert none and none != _safe("no-session") and not none.startswith(".")
    assert SessionState.load("").path.name == f"{none}.json" == SessionState.load(None).path.name


def test_a_session_id_that_reads_as_a_digested_name_never_shares_that_file():
    """An id that is not a file name, or none, is named with a digest ("a/b" -> "a_b-" and 16 hex digits):
    an id spelled as that name itself kept its state in the same file, the told markers and side file too."""
    from memlane.inject.session import SessionState, _safe, context_file

    for other in ("", "a/b", "Session-A"):
        named = _safe(other)
        assert named.rsplit("-", 1)[1].isalnum() and _safe(named) != named
        assert SessionState.load(named).path != SessionState.load(other).path
        assert context_file(named) != context_file(other)
    uuid = "3f2c9b1e-8a4d-4c6b-9e2f-1a2b3c4d5e6f"  # Claude Code's ids keep their names
    assert SessionState.load(uuid).path.name == f"{uuid}.json"


def test_session_state_is_replaced_whole_the_users_alone_and_leaves_nothing_on_failure(monkeypatch):
    from memlane.inject import session as sessions

    path = sessions.sessions_dir() / "s-atomic.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    sessions._replace_with_json(path, {"injected": {"a": 1}}, ".state-")
    assert json.loads(path.read_text()) == {"injected": {"a": 1}}
    assert path.stat().st_mode & 0o077 == 0
    sessions._replace_with_json(path, {"injected": {"b": 2}}, ".state-")  # replaces, never appends
    assert json.loads(path.read_text()) == {"injected": {"b": 2}}

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sessions.json, "dump", no_room)
    with pytest.raises(OSError):
        sessions._replace_with_json(path, {"injected": {"c": 3}}, ".state-")
    assert json.loads(path.read_text()) == {"injected": {"b": 2}}  # the old state stands
    assert sorted(p.name for p in path.parent.iterdir()) == ["s-atomic.json"]  # no half-written file left


def test_a_hook_answered_in_a_fresh_process_imports_no_tempfile_and_no_dataclasses(hook_env):
    """tempfile (with shutil, random, bz2 and lzma) is ~3 ms of every hook a fresh process
    answers: the session state is replaced without it. ``dataclasses`` (with inspect and ast) and
    creating its classes were ~45 ms: the records on the path are ``memlane.records``'. Its line
    goes to hook.log without ``logging`` (~10 ms with what it imports), its digests are taken
    without OpenSSL's library (``_hashlib``, ~4 ms), and ``typing`` (~4 ms) is read by type
    checkers alone."""
    run_hook(hook_env, "user-prompt-submit", prompt_payload(hook_env, "warm up the index"))  # the index exists now
    code = ("import io, json, sys; from memlane.adapters.hook import run_hook; "
            f"raw = json.dumps({prompt_payload(hook_env, 'how should the CI cache be keyed?', session='s-fresh')!r}); "
            "out = io.StringIO(); real, sys.stdout = sys.stdout, out; "
            f"run_hook('user-prompt-submit', stores=[{str(hook_env['store'])!r}], embedder='none', "
            f"index={str(hook_env['index'])!r}, stdin=io.StringIO(raw), refresh=False); sys.stdout = real; "
            "print(json.dumps({'answer': out.getvalue(), 'loaded': [m for m in ('tempfile', 'shutil', 'random', "
            "'dataclasses', 'inspect', 'ast', 'logging', 'typing', '_hashlib', 'copy') "
            "if m in sys.modules]}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    from memlane.inject.session import sessions_dir

    assert "feedback_ci_cache" in seen["answer"]  # it did answer, and saved the session's state
    assert "feedback_ci_cache" in (sessions_dir() / "s-fresh.json").read_text()
    assert seen["loaded"] == [], seen
    from memlane.config import cache_home

    assert "memlane: hook user-prompt-submit: session s-fresh, " in (cache_home() / "hook.log").read_text()


def test_a_gemini_rewind_to_an_unknown_message_keeps_the_history(tmp_path, caplog):
    """``$rewindTo`` names the message the user rewound to; one this recording does not hold (a torn
    or trimmed file, a message recorded elsewhere) has nothing to rewind to: the history stays as
    it is (and the log says so), rather than going whole."""
    import logging

    path = write_gemini_jsonl_recording(tmp_path / "session-2026-11-29T10-00-g1.jsonl", 850_000)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n" + json.dumps({"$rewindTo": "no-such-message"}) + "\n")
    with caplog.at_level(logging.INFO, logger="memlane.inject"):
        view = read_gemini(path)
    assert view.used_tokens == 850_000 and view.recent_user_turns == ["our CI cache goes stale after every rebase"]
    assert "rewinds to a message it does not hold" in caplog.text
