#!/usr/bin/env python3
"""Write rules/prefilter_literals.json: the required literals of every regex of the shipped
slot pack, as the prefilter reads them (overlay/detect/pack.py ``required_literals``).

Usage (after editing rules/slots.toml; tests/test_pack_lazy.py fails until it is re-run):
    python tools/prefilter_literals.py

Reading them means parsing each regex with Python's own regex parser, about 40 ms of CPU
for the shipped pack at every detector start; the file holds the result, keyed by a digest
of the regex source and flags, so a regex that is not in it (a user's pack) is still parsed.
"""
from __future__ import annotations

import json
from pathlib import Path

from memwatch_overlay.overlay.detect import pack as P
from memwatch_overlay.overlay.detect.slots import prefilter_patterns

OUT = Path(__file__).resolve().parents[1] / "rules" / P.LITERALS_FILE


def literals() -> dict[str, list[str] | None]:
    """digest -> the literals the parser reads (None: the regex has none), for every
    pattern of the shipped pack as the detector builds its prefilter."""
    out: dict[str, list[str] | None] = {}
    for p in prefilter_patterns(P.load_pack()):
        source = getattr(p, "literal_source", p.pattern)
        got = P.parse_required_literals(source, p.flags)
        out[P.literals_digest(source, p.flags)] = None if got is None else list(got)
    return dict(sorted(out.items()))


def main() -> None:
    data = {"about": "required literals of the shipped slot pack's regexes (tools/prefilter_literals.py)",
            "literals": literals()}
    OUT.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(data['literals'])} regexes")


if __name__ == "__main__":
    main()
