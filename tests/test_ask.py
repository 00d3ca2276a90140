"""A long prompt is read without the tool output pasted around its ask (retrieve/ask.py)."""

from memlane.retrieve.ask import the_ask

ASK = "why does the nightly deploy keep failing on staging since the cache change?"
TRACE = "\n".join(["Traceback (most recent call last):"]
                  + [f'  File "/srv/app/mod{n}.py", line {n * 7}, in run\n    result = step_{n}(options)' for n in range(12)]
                  + ["ValueError: bad option"])


def test_a_pasted_traceback_is_left_out_before_or_after_the_ask():
    for prompt in (f"{ASK}\n\n{TRACE}", f"{TRACE}\n{ASK}", f"{ASK}\n\n```\n{TRACE}\n```"):
        asked = the_ask(prompt)
        assert ASK in asked and "mod3.py" not in asked and "step_5" not in asked


def test_a_fenced_block_is_left_out_around_an_unspaced_script():
    ask = "这个部署为什么在预发布环境一直失败？"
    assert the_ask(f"```\n{TRACE}\n```\n\n{ask}") == ask


def test_too_little_left_reads_the_whole_prompt():
    frames = "\n".join(line for line in TRACE.splitlines() if line.startswith("  "))
    prompt = f"{frames}\nwhat's this?"
    assert the_ask(prompt) == prompt


def test_short_and_prose_prompts_are_read_as_written():
    assert the_ask(ASK) == ASK
    prose = "\n".join([ASK, "Add a note about it when you are done.", "Add the fix to the changelog too.",
                       "Add a test that fails without the fix.", "It broke twice this week, and both times after a",
                       "release that changed how the cache keys are built; the runbook says nothing about it.",
                       "- first, check the cache keys", "- then the deploy script"])
    assert the_ask(prose) == prose


def test_recall_reads_the_ask(tmp_path):
    from memlane import Memory

    store = tmp_path / "notes"
    store.mkdir()
    (store / "staging.md").write_text("---\nname: staging deploys\ndescription: why staging deploys fail\n---\n"
                                      "Staging deploys fail when the cache schema changes; flush it first.\n")
    (store / "python.md").write_text("---\nname: python frames\ndescription: reading a python traceback file line\n"
                                     "---\nTraceback File line run result options step.\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        names = [r.name for r in memory.recall(f"{TRACE}\n{ASK}", record=False)]
    assert names and names[0] == "staging deploys" and "python frames" not in names


def test_the_hooks_explain_says_what_was_searched(tmp_path, monkeypatch):
    import io
    import json

    from memlane.adapters.hook import run_hook

    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path / "cache"))
    store = tmp_path / "notes"
    store.mkdir()
    (store / "staging.md").write_text("---\nname: staging deploys\ndescription: why staging deploys fail\n---\n"
                                      "Staging deploys fail when the cache schema changes; flush it first.\n")

    def explained(prompt: str) -> dict:
        out = io.StringIO()
        payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        run_hook("user-prompt-submit", stores=[str(store)], embedder="none", index=str(tmp_path / "i.sqlite"),
                 explain=True, stdin=io.StringIO(json.dumps(payload)), stdout=out)
        return json.JSONDecoder().raw_decode(out.getvalue())[0]

    report = explained(f"{TRACE}\n{ASK}")
    assert ASK in report["searched"] and "mod3.py" not in report["searched"] and "mod3.py" in report["query"]
    assert "searched" not in explained(ASK)
