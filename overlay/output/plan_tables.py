"""Table and JSON renderings of write-back plans, apply results, undo results and history.

Library code never prints: these write to the console or stream they are given.
"""
from __future__ import annotations

import json
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memwatch_overlay.core.timeparse import to_iso

MAX_ROWS = 200


def _show(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob {len(bytes(value))} bytes>"
    if isinstance(value, dict) and set(value) == {"blob"}:
        return f"<blob {len(value['blob']) // 2} bytes>"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "…"


def render_plan(plan, console: Console, applied=None, limit: int = MAX_ROWS) -> None:
    """What would change (or, with `applied`, what did): one row per column written."""
    writes, notes = plan.writes, plan.annotations
    verb = "applied" if applied is not None else "would change"
    console.print(f"[bold]write-back plan[/] as of {to_iso(plan.as_of)}: {len(writes)} row(s) {verb}, "
                  f"{len(notes)} annotation(s), {len(plan.skipped)} skipped")
    if plan.already:
        console.print(f"{plan.already} matching fact(s) already handled as they are now (applied or undone "
                      f"earlier; planned again once the bot changes them)")
    ids = {id(c): i for i, c in applied.applied} if applied is not None else {}
    if writes:
        table = Table(header_style="bold")
        for col in (("id",) if applied is not None else ()) + ("action", "ref", "column", "old", "new"):
            table.add_column(col, overflow="fold")
        for n, change in enumerate(writes):
            if n >= limit:
                console.print(f"… {len(writes) - limit} more (use --format json for all)")
                break
            first = [str(ids.get(id(change), "-"))] if applied is not None else []
            action = f"#{change.action_index} {change.do}"
            if change.do == "delete":
                table.add_row(*first, action, escape(change.ref), "(row)", "", "deleted")
                continue
            for col, new in change.values.items():
                table.add_row(*first, action, escape(change.ref), escape(col),
                              escape(_show(change.old.get(col))), escape(_show(new)))
        console.print(table)
    if notes:
        console.print(f"annotations (overlay only): {len(notes)} fact(s)"
                      + ("" if applied is not None else " would be annotated"))
    for skipped in plan.skipped[:limit]:
        console.print(f"[yellow]skipped[/] {escape(skipped.change.ref)}: {escape(skipped.reason)}")
    if applied is not None:
        for skipped in applied.skipped[:limit]:
            console.print(f"[yellow]skipped[/] {escape(skipped.change.ref)}: {escape(skipped.reason)}")
        if applied.held:
            console.print(f"{len(applied.held)} write(s) held: their source has no apply")
        console.print(f"applied {len(applied.applied)} write(s), recorded {len(applied.annotated)} "
                      f"annotation(s); undo with `memwatch-overlay undo ACTION_ID` or `undo --since "
                      f"{to_iso(applied.run_at)}`")
    elif writes:
        console.print("nothing was written; run with --apply to write these changes")


def write_plan_json(plan, out: IO[str], applied=None) -> None:
    data = plan.to_dict()
    data["applied"] = applied.to_dict() if applied is not None else None
    out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def render_undo(result, console: Console) -> None:
    for action, note in result.restored:
        console.print(f"undid #{action.id} {action.kind} {escape(action.ref)}: {escape(note)}")
    for action_id, reason in result.skipped:
        console.print(f"[yellow]skipped[/] #{action_id}: {escape(reason)}")
    console.print(f"{len(result.restored)} undone, {len(result.skipped)} skipped")


def render_history(actions, console: Console) -> None:
    table = Table(header_style="bold")
    for col in ("id", "when", "ref", "kind", "values", "state", "undone"):
        table.add_column(col, overflow="fold")
    for a in actions:
        values = ", ".join(f"{k}={_show(v)}" for k, v in (a.values or {}).items())
        table.add_row(str(a.id), _short(a.run_at), escape(a.ref), a.kind, escape(values),
                      a.state, _short(a.undone_at))
    console.print(table)


def _short(epoch) -> str:
    return (to_iso(epoch) or "")[:19].replace("T", " ")


def history_dict(actions) -> dict:
    return {"actions": [{"id": a.id, "run_id": a.run_id, "run_at": to_iso(a.run_at), "source": a.source,
                         "table": a.tbl, "ref": a.ref, "pk": a.pk, "kind": a.kind, "action": a.action_index,
                         "label": a.label, "values": a.values, "state": a.state,
                         "undone_at": to_iso(a.undone_at), "note": a.note} for a in actions]}
