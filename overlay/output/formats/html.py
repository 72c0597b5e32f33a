"""A single self-contained HTML page: inline CSS and SVG, no scripts, no network.

Sections: gate status and summary numbers (stable ids ``summary-<key>``, with
``data-value`` holding the exact figure), violations, per-category and per-source
tables, the stale-ratio trend over recent audits (when ``report["trend"]`` holds
runs, as `overlay.trend` gives them), a freshness histogram per category, a timeline of upcoming expiries
(facts per horizon of days until expired, and the soonest ones), the stalest facts, and the
contradictions with their evidence.

Memory: facts are read once through `Digest` (histograms and horizon counts are
counters; `top` stalest and soonest facts are kept). At most `max_contradictions`
contradictions are listed, with a count of the rest.
"""
from __future__ import annotations

import re
from html import escape
from typing import Any, Iterable, Mapping, TextIO

from memwatch_overlay.core.version import __version__
from memwatch_overlay.overlay.output.formats import svg
from memwatch_overlay.overlay.output.formats.base import DigestRenderer
from memwatch_overlay.overlay.output.formats.digest import (
    HIST_BINS,
    HORIZONS,
    SUMMARY_KEYS,
    Digest,
    head_and_count,
    expiry_days,
    horizon_name,
    shorten,
    stale_ratio,
)

MAX_CONTRADICTIONS = 500
SOON_DAYS = 90      # "soonest to expire" lists the facts expiring within this many days

# Table headers in words (the JSON's field names stay in data-key / data-* attributes)
HEADERS = {"name": "Name", "total": "Total", "fresh": "Fresh", "aging": "Aging", "stale": "Stale",
           "expired": "Expired", "contradicted": "Contradicted", "avg_freshness": "Average freshness",
           "stale_ratio": "Stale ratio", "memory": "Memory", "category": "Category", "freshness": "Freshness",
           "label": "Label", "days_left": "Days until not fresh", "days_until_expired": "Days until expired",
           "age_days": "Age (days)", "status": "Status"}
# Label cells: a light tint of the label's colour (the bars' colours are svg.BAND_COLOURS)
LABEL_TINTS = {"fresh": "#d4efdf", "aging": "#fcf3cf", "stale": "#fae5d3", "expired": "#f5d5d1"}

CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d6dbe3}
.meta{color:#5b6473;font-size:13px}
.gate{display:inline-block;padding:3px 10px;border-radius:4px;color:#fff;font-weight:bold}
.gate.passed{background:#27ae60}.gate.failed{background:#c0392b}.gate.unknown,.gate.none{background:#7f8c8d}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.card{background:#fff;border:1px solid #d6dbe3;border-radius:6px;padding:10px 14px;min-width:92px}
.card .num{display:block;font-size:24px;font-weight:bold}.card .lbl{font-size:12px;color:#5b6473}
.card.fresh{border-top:4px solid #27ae60}.card.aging{border-top:4px solid #f1c40f}
.card.stale{border-top:4px solid #e67e22}.card.expired{border-top:4px solid #c0392b}
.card.contradicted{border-top:4px solid #8e44ad}
.violations li{color:#a5281b}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:6px 0}
th,td{border:1px solid #d6dbe3;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:14px}
figure{margin:0;display:inline-block;background:#fff;border:1px solid #d6dbe3;border-radius:6px;padding:8px}
figcaption{font-size:13px;font-weight:bold;margin-bottom:4px}
svg .tick{font-size:10px;text-anchor:middle;fill:#5b6473}
svg .val{font-size:10px;text-anchor:middle;fill:#1d2330}
svg .ytick{font-size:10px;text-anchor:end;fill:#5b6473}
svg .ylabel{font-size:10px;text-anchor:middle;fill:#5b6473}
.evidence{max-width:520px}.more{color:#5b6473;font-style:italic}
.wrap{max-width:100%;overflow-x:auto}
table.facts,table.pairs{width:100%}
td.text{min-width:12em;overflow-wrap:anywhere}
td .ref{display:block;color:#5b6473;font-size:11px;overflow-wrap:anywhere;margin-top:2px}
td.label{font-weight:bold;white-space:nowrap}
td.label.fresh{background:#d4efdf}td.label.aging{background:#fcf3cf}
td.label.stale{background:#fae5d3}td.label.expired{background:#f5d5d1}
td.update{white-space:nowrap}td.update .act{font-weight:bold}
svg.chart{max-width:100%;height:auto}
@media (max-width:720px){
body{margin:10px}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:auto}
table.stack tr.head{display:none}
table.stack tr{border:1px solid #d6dbe3;margin:0 0 8px;background:#fff}
table.stack td{border:none;border-bottom:1px solid #eef1f5;white-space:normal;min-width:0;
display:flex;justify-content:space-between;gap:8px}
table.stack td::before{content:attr(data-th);font-size:11px;color:#5b6473;text-align:left}
table.stack td.text,table.stack td.evidence,table.stack td.update{display:block}
table.stack td.text::before,table.stack td.evidence::before,table.stack td.update::before{display:block}
}
"""


class HTMLRenderer(DigestRenderer):
    """One HTML page; options `top` (stalest/soonest facts) and `max_contradictions`."""

    problem_cap = 0

    def write(self, digest: Digest) -> None:
        cap = self.options.get("max_contradictions", MAX_CONTRADICTIONS)
        _write(self.report, digest, self.stream, cap)


render = HTMLRenderer.render


def _write(report: Mapping[str, Any], digest: Digest, stream: TextIO,
           max_contradictions: int) -> None:
    w = stream.write
    w('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
      '<meta name="viewport" content="width=device-width, initial-scale=1">'
      '<title>memwatch-overlay report</title>'
      f"<style>{CSS}</style></head><body>\n")
    w(_header(report))
    w(_summary(report.get("summary") or {}))
    w(_violations(report.get("violations") or ()))
    for title, key in (("By category", "by_category"), ("By source", "by_source")):
        if report.get(key):
            w(_breakdown(title, key, report[key]))
    if (report.get("trend") or {}).get("runs"):
        w(_trend(report["trend"]))
    w(_histograms(digest))
    w(_timeline(digest))
    w(_facts_table("Stalest facts", "stalest", digest.stalest, digest.seen))
    w(_contradictions(report.get("contradictions") or (), max_contradictions))
    w(f'<p class="meta">memwatch-overlay {escape(__version__)}</p>\n</body></html>\n')


def _header(report: Mapping) -> str:
    passed = report.get("passed")
    cls, text = {True: ("passed", "gate passed"), False: ("failed", "gate failed")}.get(
        passed, ("unknown", "gate not evaluated"))
    if report.get("gate") == "none":
        cls, text = "none", "no gate configured"
    as_of = escape(str(report.get("as_of") or ""))
    return (f'<h1>memwatch-overlay report</h1><p class="meta">as of '
            f'<span id="as-of">{as_of}</span> &middot; '
            f'<span id="gate-status" class="gate {cls}" data-value="{cls}">{text}</span></p>\n')


def _summary(summary: Mapping) -> str:
    items = [(k, summary.get(k)) for k in SUMMARY_KEYS] + [("stale_ratio", stale_ratio(summary))]
    cards = []
    for key, value in items:
        ident = "summary-" + key.replace("_", "-")
        cards.append(f'<div class="card {key}"><span class="num" id="{ident}" '
                     f'data-value="{escape(_raw(value))}">{escape(_fmt(value))}</span>'
                     f'<span class="lbl">{escape(key.replace("_", " "))}</span></div>')
    return '<section id="summary"><div class="cards">' + "".join(cards) + "</div></section>\n"


def _violations(violations: Iterable) -> str:
    items = "".join(f"<li>{escape(str(v))}</li>" for v in violations)
    if not items:
        return ""
    return f'<section><h2>Violations</h2><ul id="violations" class="violations">{items}</ul></section>\n'


def _breakdown(title: str, key: str, parts: Mapping) -> str:
    cols = ("name", *SUMMARY_KEYS, "stale_ratio")
    head = "".join(f'<th data-key="{k}">{escape(HEADERS.get(k, k))}</th>' for k in cols)
    rows = []
    for name, s in sorted(parts.items()):
        cells = "".join(f'<td class="n" data-key="{k}" data-th="{HEADERS[k]}">{escape(_fmt(s.get(k)))}</td>'
                        for k in SUMMARY_KEYS)
        rows.append(f'<tr data-name="{escape(str(name))}"><td data-th="Name">{escape(str(name))}</td>{cells}'
                    f'<td class="n" data-key="stale_ratio" data-th="Stale ratio">{_fmt(stale_ratio(s))}</td></tr>')
    ident = key.replace("_", "-")
    return (f'<section><h2>{escape(title)}</h2><div class="wrap"><table id="{ident}" class="stack">'
            f'<tr class="head">{head}</tr>' + "".join(rows) + "</table></div></section>\n")


def _histograms(digest: Digest) -> str:
    figures = []
    labels = [f"{i / HIST_BINS:.1f}" for i in range(HIST_BINS)]
    colours = [svg.band_colour(i / HIST_BINS) for i in range(HIST_BINS)]
    for category, counts in sorted(digest.histograms.items()):
        data = [{"category": category, "bin": i, "count": c} for i, c in enumerate(counts)]
        chart = svg.bars(counts, labels, colours, data=data,
                         title=f"Freshness of {category} facts")
        figures.append(f'<figure id="hist-{_slug(category)}" data-category="{escape(category)}" '
                       f'data-total="{sum(counts)}"><figcaption>{escape(category)} '
                       f'({_plural(sum(counts), "fact")})</figcaption>{chart}</figure>')
    body = "".join(figures) or '<p class="more">No facts.</p>'
    return ('<section><h2>Freshness by category</h2><p class="meta">Facts per freshness '
            'band of width 0.1 (left: stalest).</p>'
            f'<div class="charts" id="histograms">{body}</div></section>\n')


def _trend(trend: Mapping) -> str:
    runs = trend["runs"]
    values = [float(r.get("stale_ratio") or 0.0) for r in runs]
    labels = [f"#{r.get('id')}" for r in runs]
    data = [{"run": r.get("id"), "stale-ratio": r.get("stale_ratio"), "as-of": r.get("as_of")}
            for r in runs]
    chart = svg.line(values, labels, data=data, title="Stale ratio per audit run")
    return ('<section><h2>Staleness trend</h2><p class="meta">(stale + expired) / total over the '
            f'last {len(runs)} audit run(s).</p><figure id="trend"><figcaption>stale ratio'
            f'</figcaption>{chart}</figure></section>\n')


def _timeline(digest: Digest) -> str:
    n = len(HORIZONS) + 1
    labels = [horizon_name(i) for i in range(n)]
    data = [{"horizon": labels[i], "count": c} for i, c in enumerate(digest.horizons)]
    chart = svg.bars(digest.horizons, labels, [svg.TIMELINE_COLOUR] * n, data=data,
                     title="Facts by days until expired", width=480)
    soon = [f for f in digest.soonest if (expiry_days(f) or 0) <= SOON_DAYS]
    if soon:
        soonest = _facts_table(f"Soonest to expire (within {SOON_DAYS} days)", "soonest", soon, None, level=3)
    else:
        nxt = digest.soonest[0] if digest.soonest else None
        tail = f" The next one expires in {_days(expiry_days(nxt))} days." if nxt is not None else ""
        soonest = (f'<h3>Soonest to expire</h3><p class="more" id="soonest">Nothing expires within '
                   f'{SOON_DAYS} days.{escape(tail)}</p>')
    return ('<section><h2>Upcoming expiries</h2><p class="meta">Facts not yet expired, by '
            'days until they expire.</p><figure id="timeline"><figcaption>days until expired</figcaption>'
            f"{chart}</figure>{soonest}</section>\n")


_ID_LIKE = re.compile(r"^[0-9a-f]{8}-|^[0-9a-f]{16,}$|^\d+$", re.I)
FACT_COLUMNS = ("memory", "category", "freshness", "label", "days_left", "days_until_expired", "age_days",
                "status")
DAY_COLUMNS = ("days_left", "days_until_expired", "age_days")


def _facts_table(title: str, ident: str, facts: list, seen: int | None, level: int = 2) -> str:
    """Facts as rows: the memory (key: text, its ref under it), then figures; day counts
    rounded, the label cell tinted, exact values in data-value. Under 720 px wide each row
    becomes a card (table.stack)."""
    head = "".join(f'<th data-key="{c}">{HEADERS[c]}</th>' for c in FACT_COLUMNS)
    rows = []
    for f in facts:
        ref = str(f.get("ref", ""))
        key = f.get("key")
        key = key if key and len(str(key)) <= 24 and not _ID_LIKE.match(str(key)) else None   # not a UUID/row id
        memory = (f"<b>{escape(str(key))}</b>: " if key else "") + escape(str(f.get("text") or ""))
        label = str(f.get("label") or "")
        cells = [f'<td class="text" data-th="Memory">{memory}<span class="ref">{escape(ref)}</span></td>',
                 f'<td data-th="Category">{escape(str(f.get("category") or ""))}</td>',
                 f'<td class="n" data-th="Freshness" data-value="{escape(_raw(f.get("freshness")))}">'
                 f'{escape(_fmt2(f.get("freshness")))}</td>',
                 f'<td class="label {escape(label)}" data-th="Label">{escape(label)}</td>']
        for c in DAY_COLUMNS:
            cells.append(f'<td class="n" data-th="{HEADERS[c]}" data-value="{escape(_raw(f.get(c)))}">'
                         f'{escape(_days(f.get(c)))}</td>')
        cells.append(f'<td data-th="Status">{escape(str(f.get("status") or ""))}</td>')
        rows.append(f'<tr data-ref="{escape(ref)}">{"".join(cells)}</tr>')
    note = f" ({len(facts)} of {seen})" if seen is not None else ""
    if not rows:
        return f'<h{level}>{title}</h{level}><p class="more" id="{ident}">None.</p>'
    return (f'<section><h{level}>{title}{note}</h{level}><div class="wrap"><table id="{ident}" '
            f'class="facts stack"><tr class="head">{head}</tr>' + "".join(rows) + "</table></div></section>\n")


def _contradictions(contradictions, cap: int) -> str:
    """The older and newer memory side by side (texts, refs under them), why (kind,
    confidence, evidence) and the suggested update."""
    shown, total = head_and_count(contradictions, cap)
    text_of = getattr(contradictions, "text_of", None) or (lambda ref: None)
    rows = []
    for c in shown:
        older, newer = str(c.get("older", "")), str(c.get("newer", ""))
        older_text = c.get("older_text") or text_of(older) or ""
        newer_text = c.get("newer_text") or text_of(newer) or ""
        kind = str(c.get("kind", ""))
        why = (f'<b>{escape(kind)}</b> {escape(_fmt2(c.get("confidence")))}: '
               f'{escape(shorten(c.get("evidence"), 400))}')
        rows.append(f'<tr data-older="{escape(older)}" data-newer="{escape(newer)}" data-kind="{escape(kind)}" '
                    f'data-evidence="{escape(str(c.get("evidence") or ""))}">'
                    f'<td class="text" data-th="Older memory">{escape(str(older_text))}'
                    f'<span class="ref">{escape(older)}</span></td>'
                    f'<td class="text" data-th="Newer memory">{escape(str(newer_text))}'
                    f'<span class="ref">{escape(newer)}</span></td>'
                    f'<td class="evidence" data-th="Why">{why}</td>'
                    f'<td class="update" data-th="Suggested update">{_update(c.get("update"))}</td></tr>')
    more = ""
    if total > len(shown):
        more = f'<p class="more">... and {total - len(shown)} more.</p>'
    if not rows:
        return '<section><h2>Contradictions</h2><p class="more" id="contradictions">None.</p></section>\n'
    return (f'<section><h2>Contradictions ({total})</h2><div class="wrap"><table id="contradictions" '
            'class="pairs stack"><tr class="head"><th>Older memory</th><th>Newer memory</th><th>Why</th>'
            "<th>Suggested update</th></tr>" + "".join(rows) + f"</table></div>{more}</section>\n")


def _update(update: Any) -> str:
    """`UPDATE employer` / `Google -> Anthropic`, or `EXPIRE` (the old value no longer holds)."""
    if not isinstance(update, Mapping) or not update:
        return ""
    action = update.get("action") or ("UPDATE" if update.get("new_value") else "EXPIRE")
    key = update.get("key")
    out = f'<span class="act">{escape(str(action))}</span>' + (f" {escape(str(key))}" if key else "")
    if update.get("new_value") is not None:
        old = update.get("old_value")
        out += ("<br>" + (f"{escape(str(old))} " if old is not None else "") + "&rarr; "
                + escape(str(update["new_value"])))
    return out


def _fmt2(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else _fmt(value)


def _days(value: Any) -> str:
    """A day count rounded to whole days (`<1` under a day; empty when unknown).

    Example:
        >>> _days(1734.62), _days(0.4), _days(0), _days(None)
        ('1,735', '<1', '0', '')
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if 0 < value < 1:
        return "<1"
    return f"{value:,.0f}"


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _raw(value: Any) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "x"
