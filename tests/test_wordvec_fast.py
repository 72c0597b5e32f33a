"""The static word vectors' fast paths (overlay/detect/wordvec.py) give what the plain
character-by-character and number-by-number computations give, exactly."""
from __future__ import annotations

import math
import random
import string

from memwatch_overlay.overlay.detect import wordvec
from memwatch_overlay.overlay.detect.wordvec import _tokens_by_character, basic_tokens, load_word_vectors


def test_ascii_texts_split_as_the_character_by_character_tokenizer_splits_them():
    every_ascii = "".join(chr(i) for i in range(128))
    rnd = random.Random(5)
    texts = [every_ascii, every_ascii[::-1], "", " ", "I'm at Acme-Corp (NYC) since 2019!!",
             "mail bob_w@example.com, +1 555-0100; 50% off #deal ~ok~ `x` {y} [z] |w|"]
    texts += ["".join(rnd.choice(string.printable + "\x00\x01\x1c\x1f\x7f") for _ in range(rnd.randrange(60)))
              for _ in range(3000)]
    for t in texts:
        assert basic_tokens(t) == _tokens_by_character(t.lower()), repr(t)
    # the Kelvin sign lower-cases to an ASCII "k": the fast path sees the lowered text
    assert basic_tokens("\u212a9 stuff") == _tokens_by_character("\u212a9 stuff".lower()) == ["k9", "stuff"]


def _reference_word_vector(wv, word):
    ids = wordvec.wordpiece(word, wv.ids)
    if not ids:
        return None
    acc = [0.0] * wv.dims
    for i in ids:
        for k, x in enumerate(wv._piece(i)):
            acc[k] += x
    n = math.sqrt(sum(x * x for x in acc))
    return tuple(x / n for x in acc) if n else None


def _reference_text_vector(wv, text):
    acc, n = [0.0] * wv.dims, 0
    for w in wordvec.content_words(text):
        v = _reference_word_vector(wv, w)
        if v is not None:
            n += 1
            for k, x in enumerate(v):
                acc[k] += x
    m = math.sqrt(sum(x * x for x in acc))
    return tuple(x / m for x in acc) if n and m else None


def test_word_and_text_vectors_are_the_plain_sums_bit_for_bit():
    from contradiction_cases import PARAPHRASES
    wv = load_word_vectors()
    texts = [t for o, _, n, _ in PARAPHRASES for t in (o, n)] + ["naïve café in Zürich", "", "?!", "xqzv"]
    for t in texts + texts:                 # the second pass reads the caches
        assert wv.text_vector(t) == _reference_text_vector(wv, t), t
        for w in wordvec.content_words(t):
            assert wv.word_vector(w) == _reference_word_vector(wv, w), w
