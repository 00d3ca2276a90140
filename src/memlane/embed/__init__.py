"""Embedder registry: built-ins by name, plus plugins from the ``memlane.embedders`` entry-point group.

A plugin package declares, in its pyproject.toml::

    [project.entry-points."memlane.embedders"]
    my-model = "my_package.module:MyEmbedder"

and ``MyEmbedder`` subclasses :class:`memlane.embed.base.Embedder`. Nothing is imported
until an embedder is asked for by name.
"""

from __future__ import annotations

import importlib

from .base import Embedder, EmbedderUnavailable

__all__ = ["Embedder", "EmbedderUnavailable", "DEFAULT_EMBEDDER", "available_embedders", "is_instant", "is_loadable",
           "load_embedder", "resolve_embedder"]

#: chosen by measurement: see docs/how-recall-works.md, "Choosing the default embedder"; e5-minilm-onnx
#: is e5-minilm's pair of models on onnxruntime, with the same Recall@5 and several times its speed (bench/embed_speed.py)
DEFAULT_EMBEDDER = "e5-minilm-onnx"

_BUILTIN = {
    "fake": "memlane.embed.fake:FakeEmbedder",
    "multilingual-e5-small": "memlane.embed.e5:E5SmallEmbedder",
    "all-minilm-l6-v2": "memlane.embed.minilm:MiniLMEmbedder",
    "e5-minilm": "memlane.embed.ensemble:E5MiniLMEmbedder",
    "multilingual-e5-small-onnx": "memlane.embed.e5_onnx:E5OnnxEmbedder",
    "e5-minilm-onnx": "memlane.embed.ensemble:E5MiniLMOnnxEmbedder",
}

_loaded: dict[str, Embedder] = {}


def entry_points(group: str):
    """Installed entry points of ``group`` (importlib.metadata costs ~20 ms to import: only
    when a plugin may be asked for)."""
    from importlib.metadata import entry_points as installed

    return installed(group=group)


def _registry() -> dict[str, str]:
    found = dict(_BUILTIN)
    for ep in entry_points(group="memlane.embedders"):
        found.setdefault(ep.name, ep.value)
    return found


def available_embedders() -> list[str]:
    """Names of every registered embedder (installed or not)."""
    return sorted(_registry())


def load_embedder(name: str | None = None) -> Embedder:
    """Return a process-wide instance of the named embedder.

    Raises :class:`EmbedderUnavailable` when its optional dependency or weights are
    missing, and ``KeyError`` (with the known names) for an unknown name.
    """
    name = name or DEFAULT_EMBEDDER
    if name in _loaded:
        return _loaded[name]
    target = _BUILTIN.get(name) or _registry().get(name)
    if target is None:
        raise KeyError(f"unknown embedder {name!r}; known: {', '.join(available_embedders())}")
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
        instance = cls()
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"embedder {name!r} needs an optional dependency ({exc.name or exc}); "
            f"install it with: pip install 'memlane[embed]'"
        ) from exc
    _loaded[name] = instance
    return instance


def is_instant(name: str) -> bool:
    """Whether the named embedder costs next to nothing to load and run (its class says so),
    without loading it; False for a name that cannot be imported."""
    target = _BUILTIN.get(name) or _registry().get(name)
    if target is None:
        return False
    module_name, _, attr = target.partition(":")
    try:
        return bool(getattr(getattr(importlib.import_module(module_name), attr), "instant", False))
    except (ImportError, AttributeError):
        return False


def is_loadable(name: str) -> bool:
    """Whether the named embedder's dependencies are installed, without loading it: the modules
    its class lists in ``needs`` (and numpy, which every vector search needs) can be imported."""
    import importlib.util

    target = _BUILTIN.get(name) or _registry().get(name)
    if target is None:
        return False
    module_name, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return False
    for module in ("numpy", *getattr(cls, "needs", ())):
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):  # ValueError: a module set to None (blocked) or without a spec
            return False
    return True


def resolve_embedder(choice: "str | Embedder | None", configured: str = "default") -> "tuple[Embedder | None, str | None]":
    """The one way memlane turns an embedder choice into an embedder: an instance as it is, a
    registered name, ``"default"``, or ``"none"`` for keyword-only; ``None`` means the configured
    model (``configured``). Returns (embedder or None, a notice saying why it is keyword-only).
    A model that cannot load degrades to keyword-only with the notice, never an error; an
    unknown name is a configuration error."""
    from ..errors import ConfigError

    if isinstance(choice, Embedder):
        return choice, None
    name = choice or configured or "default"
    if name == "none":
        return None, 'keyword-only: embeddings are turned off (embed.model = "none")'
    try:
        return load_embedder(DEFAULT_EMBEDDER if name == "default" else name), None
    except KeyError as exc:
        raise ConfigError(exc.args[0]) from None
    except EmbedderUnavailable as exc:
        return None, f"keyword-only: {exc}"
