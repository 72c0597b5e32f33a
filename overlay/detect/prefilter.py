"""Which of many regexes could match a text, from one scan for the literals they require.

Most slot-pack regexes cannot match a text that lacks some literal ("moved", "works at",
"@"): ``slotpack.required_literals`` reads that set from each regex. Searching for each
regex's literals separately costs one search per regex; ``Prefilter`` instead compiles
every literal into one trie-shaped pattern and scans a text once, giving a bit mask of the
regexes worth running on it. A regex whose bit is clear has no match in that text; a set
bit only means it may have one.

With google-re2 installed (the ``fast`` extra), an ASCII text is scanned by one RE2 set of the
ASCII literals instead, which reports every literal in the text at once (1.1 against 2.4 us
for a short bench clause, 1.7 against 5.9 us for a clause of the dev sets' memories); the same
bits either way (tests/test_slot_prefilter.py compares both with the literals one by one).

Example:
    >>> import re
    >>> works, lives = re.compile(r"works at (\\w+)", re.I), re.compile(r"lives in (\\w+)", re.I)
    >>> pf = Prefilter([works, lives])
    >>> pf.mask("i work at acme and lives in oslo") == pf.bit(lives)
    True
"""
from __future__ import annotations

import re
from typing import Iterable

from memwatch_overlay.overlay.detect.pack import required_literals, word_trie
from memwatch_overlay.rules.regexset import search_set

# The RE2 set's memory budget: its DFA is built lazily, and RE2::Set::Match answers "no match"
# when it cannot hold its states (rules/regexset.py); a set of plain literals needs far less
RE2_MAX_MEM = 64 << 20


class Prefilter:
    """Bit masks of the regexes (given at construction) that may match a lower-cased text."""

    def __init__(self, patterns: Iterable[re.Pattern], accelerate: bool = True):
        self._bits: dict[int, int] = {}          # id(pattern) -> its bit
        self._kept: list[re.Pattern] = []        # keeps the ids above valid
        self.always = 0                          # regexes without a required literal
        by_literal: dict[str, int] = {}
        self._needs: list[tuple[int, tuple[str, ...]]] = []     # (bit, literals) for the reference
        for p in patterns:
            if id(p) in self._bits:
                continue
            bit = 1 << len(self._kept)
            self._bits[id(p)] = bit
            self._kept.append(p)
            lits = required_literals(p)
            if not lits:
                self.always |= bit
                continue
            self._needs.append((bit, lits))
            for w in lits:
                by_literal[w] = by_literal.get(w, 0) | bit
        # The scan reports, at each position, the longest literal starting there; every
        # shorter literal starting there is a prefix of it, so it stands for all of them.
        self._found: dict[str, int] = {}
        for w in by_literal:
            m = 0
            for k in range(1, len(w) + 1):
                m |= by_literal.get(w[:k], 0)
            self._found[w] = m
        self._scan = re.compile("(?=(" + word_trie(by_literal) + "))") if by_literal else None
        self._set, self._set_bits = _literal_set(by_literal) if accelerate else (None, ())

    @property
    def accelerated(self) -> bool:
        """Whether ASCII texts are scanned by the RE2 set."""
        return self._set is not None

    def bit(self, pattern: re.Pattern) -> int:
        """The bit of ``pattern`` (one of the patterns given at construction)."""
        return self._bits[id(pattern)]

    def mask(self, low: str) -> int:
        """Bits of the regexes that may match the text whose lower-cased form is ``low``."""
        m = self.always
        if self._set is not None and low.isascii():
            bits = self._set_bits
            for i in self._set.Match(low) or ():
                m |= bits[i]
            return m
        if self._scan is not None:
            found = self._found
            for literal in self._scan.findall(low):     # the scan's one group: the literal
                m |= found[literal]
        return m

    def mask_one_by_one(self, low: str) -> int:
        """``mask`` computed plainly, one regex and one literal at a time (a reference)."""
        m = self.always
        for bit, lits in self._needs:
            if any(w in low for w in lits):
                m |= bit
        return m

    def literals_in(self, low: str) -> set[str]:
        """The literals that occur in ``low`` (what ``mask`` is computed from)."""
        out: set[str] = set()
        if self._scan is not None:
            for hit in self._scan.finditer(low):
                w = hit.group(1)
                out.update(w[:k] for k in range(1, len(w) + 1) if w[:k] in self._found)
        return out


def _literal_set(by_literal: dict[str, int]) -> tuple[object | None, tuple[int, ...]]:
    """One RE2 set of the ASCII literals (each character outside [a-z0-9] written as a hex
    escape, so RE2's syntax never reads it) and each literal's bits, by its id in the set;
    (None, ()) without google-re2 or when RE2 refuses a literal (its bits would never be
    set). A literal with a non-ASCII character is left out: it cannot occur in the ASCII
    texts the set scans."""
    literals = [w for w in by_literal if w.isascii()]
    built = search_set(["".join(ch if ch.isalnum() else f"\\x{{{ord(ch):02x}}}" for ch in w) for w in literals],
                       RE2_MAX_MEM)
    if built is None or len(built[1]) != len(literals):
        return None, ()
    return built[0], tuple(by_literal[w] for w in literals)
