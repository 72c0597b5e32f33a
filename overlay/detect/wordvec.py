"""Static word vectors for the default (rules) mode, read in pure Python.

``rules/word_vectors.bin`` holds one small int8 vector per WordPiece entry of all-MiniLM-L6-v2,
distilled offline by ``tools/distill_word_vectors.py`` (PCA to 64 dimensions). Here a text is
split the way that model's tokenizer splits it (lower case, accents stripped, punctuation apart,
greedy longest-match WordPiece) and its content words are averaged into one unit vector. No
numpy or torch: the file is loaded lazily on first use (a few tens of milliseconds) and
everything after is list arithmetic on 64 numbers.

Example:
    >>> wv = load_word_vectors()
    >>> wv.cosine(wv.text_vector("moved to a Pixel"), wv.text_vector("uses an iPhone")) > 0.3
    True
"""
from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from array import array
from importlib import resources
from pathlib import Path

MAGIC = b"MWWV1\n"
# function words carry no slot: they are left out of a text's average
STOP = frozenset("""a an the and or but so to of in on at for with from by as is are was were be
been being am i me my mine we us our you your he him his she her they them their it its this that
these those has have had do does did just very really too also got get gets getting s t up out
about into over then than there here what when who whom how all any some more most much one ll
re ve d m im i'm it's can could would should will shall may might must if because while
user lol ok oh yeah like""".split())


class WordVectors:
    """WordPiece vocabulary and its int8 vectors; ``text_vector`` averages a text's words."""

    def __init__(self, data: bytes):
        if not data.startswith(MAGIC):
            raise ValueError("not a word-vector file (bad magic)")
        pos = len(MAGIC)
        end = data.index(b"\n", pos)
        self.header = json.loads(data[pos:end])
        self.dims: int = int(self.header["dims"])
        count = int(self.header["count"])
        pos = end + 1
        pieces = []
        for _ in range(count):
            end = data.index(b"\n", pos)
            pieces.append(data[pos:end].decode("utf-8"))
            pos = end + 1
        self.ids = {p: i for i, p in enumerate(pieces)}
        self._vecs = array("b")
        self._vecs.frombytes(data[pos:pos + count * self.dims])
        if len(self._vecs) != count * self.dims:
            raise ValueError("word-vector file is truncated")

    def _piece(self, i: int) -> array:
        return self._vecs[i * self.dims:(i + 1) * self.dims]

    # A vector is a tuple of 64 floats, about 2 KB: the caches stay small (a store of 100,000
    # memories with an id or a number in each filled 65,536 words, 130 MB), common words stay.
    @functools.lru_cache(maxsize=8192)
    def word_vector(self, word: str) -> tuple[float, ...] | None:
        """Mean of a (lower-case, accent-free) word's WordPiece vectors; None when unknown."""
        ids = wordpiece(word, self.ids)
        if not ids:
            return None
        acc = [0.0] * self.dims
        for i in ids:                   # acc[k] += x, dimension by dimension, in piece order
            acc = [a + x for a, x in zip(acc, self._piece(i))]
        return _unit(acc)

    @functools.lru_cache(maxsize=4096)
    def text_vector(self, text: str) -> tuple[float, ...] | None:
        """Unit mean vector of a text's content words (None when it has none; cached: the
        topic model and the pair features both read it)."""
        acc = [0.0] * self.dims
        n = 0
        for w in content_words(text):
            v = self.word_vector(w)
            if v is not None:
                n += 1
                acc = [a + x for a, x in zip(acc, v)]     # acc[k] += x, word by word
        return _unit(acc) if n else None

    def word_vectors(self, text: str) -> list[tuple[str, tuple[float, ...]]]:
        """(word, vector) of each distinct content word of a text."""
        out = []
        for w in dict.fromkeys(content_words(text)):
            v = self.word_vector(w)
            if v is not None:
                out.append((w, v))
        return out

    @staticmethod
    def cosine(a, b) -> float:
        if a is None or b is None:
            return 0.0
        return sum(x * y for x, y in zip(a, b))


def _unit(v: list[float]) -> tuple[float, ...] | None:
    n = math.sqrt(sum(x * x for x in v))
    return tuple(x / n for x in v) if n else None


# What basic_tokens does to a text of ASCII characters alone: letters and digits make words,
# every punctuation mark or symbol is a token of its own, spaces and control characters split.
_ASCII_TOKENS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")


def basic_tokens(text: str) -> list[str]:
    """BERT's basic tokenizer: lower case, accents stripped, split at spaces and punctuation."""
    text = (text or "").lower()
    if text.isascii():                  # the same tokens, without a look at each character
        return _ASCII_TOKENS.findall(text)
    return _tokens_by_character(text)


def _tokens_by_character(text: str) -> list[str]:
    """``basic_tokens`` of a lower-cased text, character by character (any text)."""
    text = unicodedata.normalize("NFD", text)
    out: list[str] = []
    cur: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Mn":
            continue
        if ch.isspace() or cat.startswith("C"):
            if cur:
                out.append("".join(cur))
                cur = []
        elif cat.startswith("P") or cat.startswith("S") or (33 <= ord(ch) <= 47) or (58 <= ord(ch) <= 64):
            if cur:
                out.append("".join(cur))
                cur = []
            out.append(ch)
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out


def content_words(text: str) -> list[str]:
    """The words of a text that can name a slot or a value (no punctuation, no function words)."""
    return [w for w in basic_tokens(text) if (w.isalnum() or len(w) > 1) and w not in STOP]


def wordpiece(word: str, vocab: dict[str, int], max_chars: int = 100) -> list[int]:
    """Greedy longest-match-first WordPiece ids of one basic token ([] when it cannot be split)."""
    if len(word) > max_chars:
        return []
    ids, start = [], 0
    while start < len(word):
        end = len(word)
        got = None
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                got = vocab[piece]
                break
            end -= 1
        if got is None:
            return []
        ids.append(got)
        start = end
    return ids


@functools.lru_cache(maxsize=2)
def load_word_vectors(path: str | None = None) -> WordVectors | None:
    """The shipped vectors (None when the file is not installed)."""
    try:
        src = Path(path) if path else resources.files("memwatch_overlay.rules").joinpath("word_vectors.bin")
        data = src.read_bytes()
    except FileNotFoundError:
        return None
    return WordVectors(data)
