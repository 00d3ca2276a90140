"""One redaction pass at every exit: a secret written into any field of a note — its title and
hook in MEMORY.md, its recall keywords, its description and body, a document's heading, a
transcript turn — never leaves memlane through the hook, MCP, the CLI (text and JSON), the
graph, or the logs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from conftest import write_note

TOKEN = "ghp_" + "Zq8Kx2Lm4Np6Rs8Tv0Wy2Ab4Cd6Ef8Gh0Ij2K"
URL_PW = "hunter2butlonger"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3tuv9Rw1"
SECRETS = (TOKEN, URL_PW, AWS)


@pytest.fixture
def leaky(tmp_path):
    store = tmp_path / "store"
    write_note(store, "project_deploy.md", f"""---
name: project_deploy
description: when deploying billing, the token {TOKEN} opens the registry
type: project
recall: [deploy, billing, "{TOKEN}"]
---
Deploy billing with postgres://deploy:{URL_PW}@db.internal/billing and
aws_secret_access_key = {AWS}
""")
    (store / "MEMORY.md").write_text(f"# Memory\n\n- [Deploy {TOKEN}](project_deploy.md) — billing deploys, "
                                     f"key {TOKEN}\n")
    docs = tmp_path / "docs"
    write_note(docs, "guide.md", f"# Guide\n\n## Deploy billing with {TOKEN}\n\nBilling deploys need the "
                                 f"registry token {TOKEN}.\n")
    return {"store": store, "docs": docs, "tmp": tmp_path}


def _no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{where} leaked a secret"


def _cli(leaky, *args, stdin=None):
    cmd = [sys.executable, "-m", "memlane.adapters.cli", *args, "--store", str(leaky["store"]), "--embedder", "none",
           "--index", str(leaky["tmp"] / "i.sqlite")]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    return proc.stdout + proc.stderr


def test_the_cli_redacts_every_field(leaky):
    for args in (["recall", "deploy billing", "--depth", "full"], ["recall", "deploy billing", "--depth", "full",
                                                                  "--json", "--explain"],
                 ["show", "project_deploy"], ["show", "project_deploy", "--json"], ["stats", "--json"],
                 ["lint"], ["lint", "--json"], ["graph", "--dot"], ["graph", "--mermaid"],
                 ["recall", "deploy billing", "--docs", str(leaky["docs"]), "--json"]):
        _no_secret(_cli(leaky, *args), " ".join(args[:2]))


def test_the_graph_page_is_redacted(leaky):
    page = leaky["tmp"] / "m.html"
    _cli(leaky, "graph", "--html", str(page))
    _no_secret(page.read_text(), "graph --html")


def test_the_hooks_and_their_log_are_redacted(leaky, sealed_env):
    from memlane.adapters.hook import run_hook

    for event, prompt in (("session-start", ""), ("user-prompt-submit", f"deploy billing with {TOKEN}")):
        for explain in (False, True):
            out = io.StringIO()
            payload = {"session_id": "x", "cwd": str(leaky["tmp"]), "prompt": prompt, "source": "startup",
                       "transcript_path": "/none"}
            run_hook(event, stores=[str(leaky["store"])], embedder="none", index=str(leaky["tmp"] / "h.sqlite"),
                     stdin=io.StringIO(json.dumps(payload)), stdout=out, explain=explain)
            _no_secret(out.getvalue(), f"{event} hook")
    os.chmod(sealed_env / "cache" / "hook.log", 0o644)  # as a log from before it was made 0600
    out = io.StringIO()
    run_hook("user-prompt-submit", stores=[str(leaky["store"])], embedder="none", index=str(leaky["tmp"] / "h.sqlite"),
             stdin=io.StringIO(f'{{"prompt": "{TOKEN}", "session_id": 7, '), stdout=out)  # fails: logged
    log = (sealed_env / "cache" / "hook.log").read_text()
    assert "failed" in log
    _no_secret(log, "hook.log")
    assert os.stat(sealed_env / "cache" / "hook.log").st_mode & 0o077 == 0  # it quotes prompts: the user's alone


def test_mcp_answers_are_redacted(leaky):
    from memlane.adapters.mcp_server import Engine, _json

    engine = Engine([str(leaky["store"])], "none", str(leaky["tmp"] / "m.sqlite"), str(leaky["tmp"]),
                    docs=[str(leaky["docs"])])
    for answer in (engine.recall("deploy billing", depth="full"), engine.recall("deploy billing", depth="ids"),
                   engine.get(["project_deploy"]), engine.related("project_deploy"),
                   engine.recall("deploy billing", depth="full", domains=["notes", "knowledge"])):
        _no_secret(_json(answer), "an MCP tool")


def test_the_library_hands_out_redacted_data(leaky):
    from memlane import Memory

    with Memory([leaky["store"]], embedder="none", index_path=leaky["tmp"] / "l.sqlite") as mem:
        _no_secret(json.dumps([r.as_dict() for r in mem.recall("deploy billing", depth="full", explain=True)]),
                   "Memory.recall")
        _no_secret(json.dumps(mem.show("project_deploy")), "Memory.show")


@pytest.fixture
def library_redaction_off(monkeypatch):
    """Each exit must hold on its own: the library's own redaction of notes is switched off."""
    import memlane.adapters.picture.data
    import memlane.memory
    import memlane.recall

    identity = lambda value, *args, **kwargs: value  # noqa: E731
    monkeypatch.setattr(memlane.recall, "redact", identity)
    monkeypatch.setattr(memlane.memory, "redact_data", identity)
    for name in ("redact", "redact_data"):
        monkeypatch.setattr(memlane.adapters.picture.data, name, identity)


def test_each_exit_redacts_on_its_own(leaky, library_redaction_off, capsys, sealed_env):
    from memlane.adapters.cli import main
    from memlane.adapters.hook import run_hook
    from memlane.adapters.mcp_server import Engine, _json

    common = ["--store", str(leaky["store"]), "--embedder", "none", "--index", str(leaky["tmp"] / "x.sqlite")]
    for args in (["recall", "deploy billing", "--depth", "full"], ["recall", "deploy billing", "--depth", "full",
                                                                  "--json"], ["graph", "--dot"]):
        main([*args, *common])
        _no_secret(capsys.readouterr().out, f"the CLI's {args[0]}")
    out = io.StringIO()
    payload = {"session_id": TOKEN, "cwd": str(leaky["tmp"]), "prompt": "deploy billing", "transcript_path": "/none"}
    run_hook("user-prompt-submit", stores=[str(leaky["store"])], embedder="none", index=str(leaky["tmp"] / "y.sqlite"),
             stdin=io.StringIO(json.dumps(payload)), stdout=out)
    assert "project_deploy" in out.getvalue()
    _no_secret(out.getvalue(), "the hook")
    _no_secret((sealed_env / "cache" / "hook.log").read_text(), "hook.log")  # the session id is logged
    engine = Engine([str(leaky["store"])], "none", str(leaky["tmp"] / "z.sqlite"), str(leaky["tmp"]))
    _no_secret(_json(engine.recall("deploy billing", depth="full")), "MCP recall")
