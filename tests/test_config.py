"""Configuration: TOML files, layering, ``MEMLANE_CONFIG``; unknown keys and bad values are
errors that name the key, never ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane import Config, ConfigError, Fusion, Memory, load_config
from memlane.config import DEFAULT_CONFIG_TOML, config_files


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_files(tmp_path):
    config = load_config(tmp_path)
    assert config.sources == []
    assert (config.retrieve.fusion, config.retrieve.vector_weight, config.retrieve.keyword_weight) == (
        "hybrid", 0.7, 0.3)
    assert config.retrieve.min_score == 0.30 and config.retrieve.k == 5


def test_the_default_config_file_is_the_defaults(tmp_path):
    path = write(tmp_path / "c.toml", DEFAULT_CONFIG_TOML)
    loaded = load_config(files=[path])
    assert loaded.sources == [str(path)]
    loaded.sources = []
    assert loaded == Config()


def test_toml_values_are_applied(tmp_path):
    path = write(tmp_path / "c.toml", """
        [stores]
        claude_code = false
        user_store = "~/notes/me"
        [[stores.mounts]]
        path = "/team/notes"
        scope = "user"
        [index]
        busy_timeout_ms = 250
        [embed]
        model = "none"
        [retrieve]
        fusion = "rrf"
        min_score = 0.5
        k = 3
        [retrieve.fts_weights]
        body = 2
        """.replace("\n        ", "\n"))
    c = load_config(files=[path])
    assert c.stores.claude_code is False
    assert c.user_store_path() == Path("~/notes/me").expanduser()
    assert [(m.path, m.scope) for m in c.stores.mounts] == [("/team/notes", "user")]
    assert c.index.busy_timeout_ms == 250 and c.embed.model == "none"
    assert (c.retrieve.fusion, c.retrieve.min_score, c.retrieve.k) == (Fusion.RRF.value, 0.5, 3)
    assert c.retrieve.fts_weights == {"name": 4.0, "description": 3.0, "keywords": 4.0, "body": 2.0}


def test_project_file_overrides_user_file(tmp_path, sealed_env):
    write(sealed_env / "config" / "memlane" / "config.toml", "[retrieve]\nk = 7\nmin_score = 0.2\n")
    repo = tmp_path / "repo"
    write(repo / ".memlane.toml", "[retrieve]\nk = 2\n")
    c = load_config(repo)
    assert (c.retrieve.k, c.retrieve.min_score) == (2, 0.2)
    assert c.sources == [str(sealed_env / "config" / "memlane" / "config.toml"), str(repo / ".memlane.toml")]


def test_memlane_config_names_the_one_file(tmp_path, sealed_env, monkeypatch):
    write(sealed_env / "config" / "memlane" / "config.toml", "[retrieve]\nk = 7\n")
    repo = tmp_path / "repo"
    write(repo / ".memlane.toml", "[retrieve]\nk = 2\n")
    only = write(tmp_path / "elsewhere" / "memlane.toml", "[retrieve]\nk = 9\n")
    monkeypatch.setenv("MEMLANE_CONFIG", str(only))
    assert config_files(repo) == [only]
    c = load_config(repo)
    assert (c.retrieve.k, c.sources) == (9, [str(only)])


def test_memory_uses_memlane_config(store, tmp_path, monkeypatch):
    only = write(tmp_path / "m.toml", f'[index]\npath = "{tmp_path / "configured.sqlite"}"\n[embed]\nmodel = "none"\n')
    monkeypatch.setenv("MEMLANE_CONFIG", str(only))
    with Memory([store]) as mem:
        assert mem.index_path == str(tmp_path / "configured.sqlite")
        assert mem.recall("postgres upgrade")[0]["name"] == "project_postgres_upgrade"
        assert mem.embedder is None


@pytest.mark.parametrize("toml, key", [
    ("[retrieve]\nbogus = 1", "retrieve.bogus"),
    ("[bogus]\nx = 1", "bogus"),
    ("[index]\nmax_file_size = 5", "index.max_file_size"),
    ("sources = []", "sources"),
    ("[retrieve.fts_weights]\ntitle = 2.0", "title"),
    ("[[stores.mounts]]\npath = \"/x\"\nwhat = 1", "what"),
], ids=lambda v: v.split("\n")[-1] if "=" in v else None)
def test_unknown_key_is_an_error_naming_it(tmp_path, toml, key):
    path = write(tmp_path / "c.toml", toml)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(files=[path])


@pytest.mark.parametrize("toml, key", [
    ('[retrieve]\nfusion = "magic"', "retrieve.fusion"),
    ("[retrieve]\nmin_score = 2", "retrieve.min_score"),
    ("[retrieve]\nvector_weight = -0.1", "retrieve.vector_weight"),
    ("[retrieve]\nvector_weight = 0\nkeyword_weight = 0", "retrieve.vector_weight"),
    ("[retrieve]\nk = 0", "retrieve.k"),
    ('[retrieve]\nk = "5"', "retrieve.k"),
    ('[embed]\nlong_notes = "paragraphs"', "embed.long_notes"),
    ('[[stores.mounts]]\npath = "/x"\nscope = "team"', "stores.mounts"),
    ('[stores]\nmounts = "x"', "stores.mounts"),
    ("stores = 3", "stores"),
    ("[retrieve]\nfts_weights = 3", "retrieve.fts_weights"),
    ("x = = 1", "c.toml"),  # not TOML: the error names the file
    # scalar settings must have the type of their default
    ('[index]\nmax_file_bytes = "big"', "index.max_file_bytes"),
    ("[index]\nmax_file_bytes = -1", "index.max_file_bytes"),
    ('[index]\nbusy_timeout_ms = "soon"', "index.busy_timeout_ms"),
    ('[stores]\nclaude_code = "yes"', "stores.claude_code"),
    ("[embed]\nmodel = 5", "embed.model"),
    ('[retrieve]\nmin_cosine = "high"', "retrieve.min_cosine"),
    ('[retrieve.fts_weights]\nname = "heavy"', "name"),
], ids=lambda v: v.split("\n")[-1] if "\n" in v or "=" in v else None)
def test_bad_value_is_an_error_naming_the_key(tmp_path, toml, key):
    path = write(tmp_path / "c.toml", toml)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(files=[path])


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)
