"""Read figures back from the HTML report with the standard library's HTML parser."""
from __future__ import annotations

from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "line", "rect", "circle", "polyline"}


class Page(HTMLParser):
    """Collects elements by id (attrs + text), histogram/timeline bars, and table rows."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids: dict[str, dict] = {}
        self.bars: list[dict] = []
        self.points: list[dict] = []                   # trend chart points
        self.rows: dict[str, list[list[str]]] = {}    # table id -> rows of cell texts
        self.row_attrs: dict[str, list[dict]] = {}    # table id -> each row's attributes (data-ref, ...)
        self.cells: list[dict] = []                    # every td's attributes
        self._open: list[tuple[str, dict]] = []
        self._table: list[str] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "rect" and "bar" in (attrs.get("class") or "").split():
            self.bars.append(attrs)
        if tag == "circle" and "point" in (attrs.get("class") or "").split():
            self.points.append(attrs)
        if tag == "table":
            self._table.append(attrs.get("id") or "")
        elif tag == "tr" and self._table:
            self._row = []
            self.row_attrs.setdefault(self._table[-1], []).append(attrs)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            if tag == "td":
                self.cells.append(attrs)
        if tag in VOID:
            return
        node = {"tag": tag, "attrs": attrs, "text": []}
        if attrs.get("id"):
            self.ids[attrs["id"]] = node
        self._open.append((tag, node))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.rows.setdefault(self._table[-1], []).append(self._row)
            self._row = None
        elif tag == "table" and self._table:
            self._table.pop()
        if tag in VOID:
            return
        while self._open:
            open_tag, _ = self._open.pop()
            if open_tag == tag:
                break

    def handle_data(self, data):
        for _, node in self._open:
            node["text"].append(data)
        if self._cell is not None:
            self._cell.append(data)

    def text(self, ident: str) -> str:
        return "".join(self.ids[ident]["text"]).strip()

    def attr(self, ident: str, name: str) -> str | None:
        return self.ids[ident]["attrs"].get(name)
