r"""Which of several Python regexes is the first to match a text: one RE2 pass when exact.

`RegexSet` holds compiled Python `re` patterns and answers "the first of these candidates
that finds a match in `text`". With google-re2 installed (the `fast` extra), the patterns
that translate exactly go into one RE2 set, searched once per text; the others, and every
text RE2 cannot answer exactly for, are searched with Python `re` as before. Without
google-re2 (or with `accelerate=False`) every candidate is searched with `re`, in order.

Exactness: the answer is always the one Python `re` gives. RE2 never sees a pattern's
source (its syntax differs from Python's: `{,n}`, `[[:alpha:]]`, `\Z`, `$`...). The
translation walks the tree Python's own parser made of the pattern, and RE2 answers only
for non-empty ASCII texts:

- each single-character item (literal, class, `.`, `\w`, `\s`...) becomes the explicit set
  of ASCII characters Python's engine says it matches, under the flags in force there
  (IGNORECASE folding, `\s` matching `\v` and `\x1c`-`\x1f`, DOTALL, ASCII are Python's);
  RE2 matches it case-sensitively, so RE2's own folding and classes never come into play;
- `^` and `\A` become `\A`; `\Z` becomes `\z`; `$` becomes `\z`, and for a text ending in
  a newline (where Python's `$` also matches before it) a pattern with `$` is searched
  with `re`; `\b`, `\B` stay (same on ASCII text; Python's `\B` never matches an empty
  text, which never goes to RE2);
- groups become non-capturing; alternation and repeats (greedy or lazy: whether a match
  exists does not depend on it) stay.

Anything else keeps the whole pattern on Python `re`: lookahead and lookbehind,
backreferences, conditionals `(?(1)...)`, atomic groups, possessive repeats, `^`/`$` under
MULTILINE, and any translation RE2 rejects (e.g. a repeat count over 1000) or any pattern
Python's parser reads differently from what we expect (an unknown node).

RE2::Set::Match reports "no match" if its DFA runs out of memory, and the Python binding
cannot tell us. For a set (Prog::kManyMatch) RE2 never gives up for being slow; it only
fails when it cannot hold a handful of states, which it checks when the set is compiled
(a failing Compile() leaves every pattern on `re`).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

try:  # Python >= 3.11
    from re import _compiler as sre_compile, _constants as c, _parser as sre_parse
except ImportError:  # Python 3.10
    import sre_compile
    import sre_constants as c
    import sre_parse

try:
    import re2
except ImportError:  # the optional `fast` extra is not installed
    re2 = None

_SINGLE_CHAR = (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN)
_NO_MATCH = r"[^\x00-\x{10FFFF}]"   # an empty class: an item no ASCII character matches
_ALL_ASCII = "".join(map(chr, range(128)))


def search_set(sources: Sequence[str], max_mem: int | None = None):
    """One compiled, unanchored RE2 set of these RE2 sources (google-re2, the `fast` extra),
    and the indices of the sources it took, ascending: a set id is a position in that list.
    A source RE2 rejects is left out. None without google-re2, when no source is taken, or
    when RE2 cannot compile the set. `max_mem`: RE2's memory budget for it (its default when
    None); RE2::Set::Match answers "no match" when its DFA cannot hold its states."""
    if re2 is None:
        return None
    options = re2.Options()
    options.log_errors = False
    if max_mem is not None:
        options.max_mem = max_mem
    rset = re2.Set.SearchSet(options)
    taken = []
    for k, source in enumerate(sources):
        try:
            rset.Add(source)
        except re2.error:
            continue
        taken.append(k)
    if not taken:
        return None
    try:
        rset.Compile()
    except re2.error:
        return None
    return rset, taken


class Untranslatable(Exception):
    """The pattern uses a construct RE2 cannot express with Python re's exact meaning."""


@lru_cache(maxsize=4096)
def _ascii_codes(op, av, flags: int) -> tuple[int, ...]:
    """The ASCII codes one single-character item matches, asked of Python's own engine."""
    state = sre_parse.State()
    state.flags = flags
    item = sre_parse.SubPattern(state, [(op, list(av) if op is c.IN else av)])
    probe = sre_compile.compile(item, flags)
    return tuple(sorted(ord(ch) for ch in probe.findall(_ALL_ASCII)))


def _char_class(codes: tuple[int, ...]) -> str:
    if not codes:
        return _NO_MATCH
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "[" + "".join(rf"\x{{{lo:02x}}}" if lo == hi else rf"\x{{{lo:02x}}}-\x{{{hi:02x}}}"
                         for lo, hi in runs) + "]"


class _Translator:
    """Python parse tree -> RE2 source with the same matches on ASCII texts."""

    def __init__(self):
        self.uses_dollar = False

    def sequence(self, items, flags: int) -> str:
        return "".join(self.item(op, av, flags) for op, av in items)

    def item(self, op, av, flags: int) -> str:
        if op in _SINGLE_CHAR:
            key = tuple(av) if op is c.IN else av
            return _char_class(_ascii_codes(op, key, flags))
        if op is c.AT:
            return self.anchor(av, flags)
        if op is c.BRANCH:
            return "(?:" + "|".join(self.sequence(alt, flags) for alt in av[1]) + ")"
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, body = av
            return "(?:" + self.sequence(body, _combine_flags(flags, add_flags, del_flags)) + ")"
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            low, high, body = av
            count = f"{{{low},}}" if high == c.MAXREPEAT else f"{{{low},{high}}}"
            return "(?:" + self.sequence(body, flags) + ")" + count + ("?" if op is c.MIN_REPEAT else "")
        raise Untranslatable(f"{op} is not translated")

    def anchor(self, at, flags: int) -> str:
        if at is c.AT_BEGINNING_STRING:
            return r"\A"
        if at is c.AT_END_STRING:
            return r"\z"
        if at in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
            return r"\b" if at is c.AT_BOUNDARY else r"\B"
        if flags & re.MULTILINE:
            raise Untranslatable("^ or $ under MULTILINE")
        if at is c.AT_BEGINNING:
            return r"\A"
        if at is c.AT_END:
            self.uses_dollar = True
            return r"\z"
        raise Untranslatable(f"{at} is not translated")


def _combine_flags(flags: int, add_flags: int, del_flags: int) -> int:
    """The flags inside a scoped group `(?flags-flags:...)`, as Python's compiler combines them."""
    if add_flags & (re.ASCII | re.LOCALE | re.UNICODE):
        flags &= ~(re.ASCII | re.LOCALE | re.UNICODE)
    return (flags | add_flags) & ~del_flags


@lru_cache(maxsize=1024)
def _translate_source(source: str, flags: int) -> tuple[str, bool]:
    with warnings.catch_warnings():   # e.g. "Possible nested set": re.compile already warned
        warnings.simplefilter("ignore", FutureWarning)
        tree = sre_parse.parse(source, flags)
    translator = _Translator()
    out = translator.sequence(tree, tree.state.flags | flags)
    return out, translator.uses_dollar


def translate(pattern: re.Pattern) -> tuple[str, bool]:
    """RE2 source matching where `pattern` matches on a non-empty ASCII text, and whether the
    pattern has a `$` (then a text ending in a newline must be searched with `re`).

    Raises Untranslatable when no such source is known.
    """
    if not isinstance(pattern.pattern, str):
        raise Untranslatable("bytes pattern")
    return _translate_source(pattern.pattern, pattern.flags)


def _unbounded(op, av) -> bool:
    return op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[1] == c.MAXREPEAT


def _has_unbounded(items) -> bool:
    """Whether a parsed sequence holds an unbounded repeat anywhere inside."""
    for op, av in items:
        if _unbounded(op, av):
            return True
        for sub in _children(op, av):
            if _has_unbounded(sub):
                return True
    return False


def _children(op, av) -> list:
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) if hasattr(c, "POSSESSIVE_REPEAT") \
            else op in (c.MAX_REPEAT, c.MIN_REPEAT):
        return [av[2]]
    if op is c.SUBPATTERN:
        return [av[3]]
    if op is c.BRANCH:
        return list(av[1])
    if op in (c.ASSERT, c.ASSERT_NOT):
        return [av[1]]
    if hasattr(c, "ATOMIC_GROUP") and op is c.ATOMIC_GROUP:
        return [av]
    return []


def nested_quantifier(source: str) -> str | None:
    """A description of a nested unbounded repeat (`(a+)+`, `(\\w*\\s?)*`) in `source`, else None.

    Python's backtracking engine can take exponential time on such a pattern when a text
    almost matches ("aaaa...!"); memwatch.toml refuses them at load time rather than hang an
    audit on one memory. Rewrite as a single repeat (`a+`) or bound the inner one (`a{1,20}`).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            tree = sre_parse.parse(source)
        except re.error:
            return None

    def walk(items) -> str | None:
        for op, av in items:
            if _unbounded(op, av) and _has_unbounded(av[2]):
                return "an unbounded repeat inside another unbounded repeat"
            for sub in _children(op, av):
                found = walk(sub)
                if found:
                    return found
        return None

    return walk(tree)


@dataclass(frozen=True)
class Candidates:
    """Pattern indices to try, prepared for `RegexSet.first_match` (see `RegexSet.candidates`)."""

    ordered: tuple[int, ...]            # all of them, in order: the pure-Python path
    on_re2: frozenset[int]              # answered by RE2 for a non-empty ASCII text
    on_python: tuple[int, ...]          # searched with re, in order
    on_re2_nl: frozenset[int]           # the same two for an ASCII text ending in "\n"
    on_python_nl: tuple[int, ...]

    def __bool__(self) -> bool:
        return bool(self.ordered)


class RegexSet:
    """Compiled Python regexes; `first_match` says which candidate matches a text first."""

    def __init__(self, patterns: Sequence[re.Pattern], accelerate: bool = True):
        self.patterns = list(patterns)
        self.on_re2: frozenset[int] = frozenset()        # indices RE2 answers for
        self.uses_dollar: frozenset[int] = frozenset()   # ...except on texts ending in "\n"
        self._set = None
        self._set_ids: list[int] = []                     # RE2 set id -> pattern index
        if accelerate and re2 is not None:
            self._build_re2_set()

    @property
    def accelerated(self) -> bool:
        return self._set is not None

    def _build_re2_set(self) -> None:
        translated: list[tuple[int, str, bool]] = []
        for i, pattern in enumerate(self.patterns):
            try:
                translated.append((i, *translate(pattern)))
            except Untranslatable:
                continue
        built = search_set([source for _, source, _ in translated])
        if built is None:
            return
        rset, taken = built
        ids = [translated[k][0] for k in taken]
        self._set, self._set_ids = rset, ids
        self.on_re2 = frozenset(ids)
        self.uses_dollar = frozenset(translated[k][0] for k in taken if translated[k][2])

    def candidates(self, indices: Sequence[int]) -> Candidates:
        ordered = tuple(sorted(indices))
        on_re2 = frozenset(i for i in ordered if i in self.on_re2)
        on_re2_nl = on_re2 - self.uses_dollar
        return Candidates(ordered=ordered,
                          on_re2=on_re2, on_python=tuple(i for i in ordered if i not in on_re2),
                          on_re2_nl=on_re2_nl, on_python_nl=tuple(i for i in ordered if i not in on_re2_nl))

    def first_match(self, text: str, candidates: Candidates) -> int | None:
        """The smallest candidate index whose pattern `search`es `text`, or None."""
        if self._set is None or not isinstance(text, str) or not text or not text.isascii():
            for i in candidates.ordered:
                if self.patterns[i].search(text):
                    return i
            return None
        if text[-1] == "\n":
            on_re2, on_python = candidates.on_re2_nl, candidates.on_python_nl
        else:
            on_re2, on_python = candidates.on_re2, candidates.on_python
        best = None
        if on_re2:
            for set_id in self._set.Match(text) or ():
                i = self._set_ids[set_id]
                if i in on_re2 and (best is None or i < best):
                    best = i
        for i in on_python:
            if best is not None and i > best:
                break
            if self.patterns[i].search(text):
                return i
        return best
