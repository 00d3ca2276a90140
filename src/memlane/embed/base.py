"""The embedder contract: one class attribute set and one method to implement.

Modelled on simonw/llm's embedding plugins: an embedder turns a batch of texts into
L2-normalised float32 vectors. Queries and passages are embedded separately because
asymmetric models (e5: "query: " / "passage: " prefixes) need to know which is which.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import EmbedderUnavailable  # re-exported: the registry raises it
from ..guards.sanitize import whole_characters
from ..records import dataclass

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:  # numpy is an optional dependency; never import it at module load
    from typing import ClassVar

    import numpy as np


@dataclass(frozen=True)
class QueryLine:
    """How one prompt is searched: the vector the stored ones are multiplied with, and the cosine
    line (retrieve/fusion.py) that turns what comes out into the vector leg's 0..1."""

    vector: "np.ndarray"
    min_cosine: float
    strong_cosine: float
    why: str = ""  # set when the prompt is not judged on the model's usual line (for --explain)


class Embedder:
    """Base class for embedders.

    Subclasses set ``name`` (registry key, also stored with every vector so a model
    change re-embeds), ``dim``, ``min_cosine`` and ``strong_cosine`` (where this model's
    cosines say "unrelated" and "clearly relevant": models live on different scales), and
    implement :meth:`embed_batch`.
    """

    name: ClassVar[str] = ""
    dim: ClassVar[int] = 0
    #: cosine below which the vector leg says "not relevant" for this model (R3); the leg's 0
    min_cosine: ClassVar[float] = 0.0
    #: cosine of a clearly relevant pair for this model; the leg's 1 (see retrieve/fusion.py)
    strong_cosine: ClassVar[float] = 1.0
    #: longest input, in characters, the model sees usefully; longer texts are cut
    max_chars: ClassVar[int] = 2000
    #: costs next to nothing to load and run (the test embedder): a store is embedded inline,
    #: never left to the background
    instant: ClassVar[bool] = False
    #: the modules it imports to run (an optional extra's): when one is missing, memlane knows
    #: without loading the model that recall is keyword-only
    needs: ClassVar[tuple[str, ...]] = ()

    def embed_batch(self, texts: Sequence[str], *, is_query: bool) -> "np.ndarray":
        """Return an array of shape (len(texts), dim), float32, rows L2-normalised."""
        raise NotImplementedError

    #: recent query vectors: one prompt is embedded once even when several recalls ask for it
    #: (layer 3, then layer 4, then the knowledge domain, in one hook request)
    QUERY_CACHE = 32

    def keep_resident(self) -> None:
        """A resident process (the daemon) will embed prompts for hours: ask the OS to read the
        model's memory-mapped weights in now, so that a prompt's rare token never waits on a disk
        read. Nothing to do for a model held in memory already."""

    def embed_query(self, text: str) -> "np.ndarray":
        cache = self.__dict__.setdefault("_query_cache", {})
        vector = cache.pop(text, None)
        if vector is None:  # a lone surrogate (argv's bytes of another encoding, half an emoji): no
            vector = self.embed_batch([whole_characters(text)], is_query=True)[0]  # tokenizer encodes it
            vector.setflags(write=False)  # shared by every caller: nobody may change it
        cache[text] = vector  # most recent last
        while len(cache) > self.QUERY_CACHE:
            cache.pop(next(iter(cache)))
        return vector

    def query_line(self, text: str, vector: "np.ndarray") -> QueryLine:
        """What ``text``, embedded as ``vector``, is searched with: the vector on the model's own
        line. A joined model may use only the part that can read the prompt (ensemble.py)."""
        return QueryLine(vector, self.min_cosine, self.strong_cosine)

    def embed_passages(self, texts: Sequence[str]) -> "np.ndarray":
        return self.embed_batch(list(texts), is_query=False)

