"""The HTML grid: one self-contained page a person reads at a glance.

A title; the versions (the transformers range, tokenizers, pytest-tokcompat) and
the date; the grid with a colour per verdict and the marks of the Markdown grid;
a legend for every colour and mark; the alarms and the upstream registry events
with links to their upstream issues; and per cell, on hover (its title) or click
(a disclosure), the remedy, the drifting dimension and probe, and the error. No
script, font or stylesheet is fetched: the page is one file that works offline.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from pytest_tokcompat.ci.grid import MARK_CHANGED, MARK_DRIFT, MARK_NOT_CHECKED, MARK_UNEXPECTED, Cell, Grid
from pytest_tokcompat.ci.markdown import cell_text

MARK_MISSING = "—"
TITLE = "tokcompat: tokenizer verdicts by transformers release"
COLOURS = {
    "native": ("#d8f5d0", "native: plain AutoTokenizer loads it with right ids"),
    "auto_map": ("#d6e8ff", "auto_map: right ids only with trust_remote_code (the checkpoint's own code)"),
    "alias": ("#fff2c2", "alias: right ids only through a config alias"),
    "backend": (
        "#f3dcff",
        "backend: right ids only with the backend override (tokenizer.json loaded with the fast backend as it is)",
    ),
    "broken": (
        "#ffc9c9",
        "broken: no remedy loads it with right ids (an alias row: needed, but as declared it gives no right ids)",
    ),
    "unused": ("#eef3ee", "alias unused: plain loading keeps parity without it"),
    "needed": ("#fff2c2", "alias needed: it is the remedy"),
    "obsolete": ("#ddd2f7", "alias obsolete: transformers registers the model_type natively, with right ids"),
    "drift": ("#ffd9b3", "alias must stay: the native registration gives wrong ids"),
    "not-checked": ("#e4e4e4", "not checked: it could not be judged here (never a pass)"),
}
MARKS = {
    MARK_UNEXPECTED: "differs from the matrix (the cell also gets a red border)",
    MARK_DRIFT: "some remedy loads but gives wrong ids",
    MARK_CHANGED: "changed since the previous release",
    MARK_NOT_CHECKED: "not checked",
    MARK_MISSING: "no record for that release",
    "[dimension]": "the contract dimension a drifting remedy failed on (ids, default_call, special_tokens, "
    "decode, chat_template)",
    "[ack: …]": "a drift the matrix acknowledges for that release",
    "⚠finding": "right ids, but a finding the matrix does not acknowledge (default_call, special_tokens, decode, "
    "chat_template, special_text), with its consequence on hover",
    "+repair": "a repair applied on top of the remedy (declared-bos/eos: the declared BOS/EOS restored)",
}
LOADER_COLOURS = {
    "ok": ("#d8f5d0", "loader:NAME ok: a client's own loader gives right ids (information, no verdict)"),
    "drift": (
        "#ffc9c9",
        "loader:NAME drift: a client's own loader gives wrong ids (information, no verdict)",
    ),
    "other": ("#ffe0c0", "loader:NAME load-error, encode-error, timeout or crashed (information)"),
}
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d1d1d;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:22px 0 8px}
.meta{color:#444;margin:0 0 14px}.meta b{color:#111}
.status{display:inline-block;padding:3px 10px;border-radius:4px;font-weight:600}
.status.ok{background:#d8f5d0}.status.bad{background:#ffc9c9}.status.partial{background:#ffe7a3}
.incomplete{background:#fff6d6;border:1px solid #e0c35c;padding:8px 14px;border-radius:4px}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #9a9a9a;padding:3px 7px;text-align:left;vertical-align:top;white-space:nowrap}
thead th{background:#f2f2f2;position:sticky;top:0;z-index:2}
.scroll{overflow:auto;max-width:100%;max-height:85vh;margin:8px 0}.scroll table{margin:0}
#grid tr>th:first-child{position:sticky;left:0;z-index:3;background:#f7f7f7}
#grid thead tr>th:first-child{z-index:4;background:#f2f2f2}
td.cell{position:relative;cursor:pointer}
td.cell.unexpected{outline:3px solid #c00;outline-offset:-3px}
td.cell.missing{background:#fafafa;color:#777;cursor:default}
td.cell summary{list-style:none}td.cell summary::-webkit-details-marker{display:none}
td.cell details[open]>summary{font-weight:600}
.pop{position:absolute;z-index:5;left:0;top:100%;min-width:320px;max-width:560px;white-space:normal;
 background:#fff;border:1px solid #555;box-shadow:0 3px 12px rgba(0,0,0,.25);padding:8px 10px;font-size:12.5px}
.pop dl{margin:0}.pop dt{font-weight:600;margin-top:4px}.pop dd{margin:0 0 0 10px;word-break:break-word}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;padding:0;margin:0;list-style:none}
.legend li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:26px;height:16px;border:1px solid #9a9a9a}
.mark{display:inline-block;min-width:26px;text-align:center;font-weight:700}
ul.alarms li,ul.events li{margin:4px 0}
.kind{font-family:ui-monospace,monospace;background:#f1f1f1;padding:0 4px;border-radius:3px}
.alarm-event{color:#a00000;font-weight:600}.ack{color:#555}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _link(url: str | None) -> str:
    if url and url.startswith(("https://", "http://")):
        return f' <a href="{_e(url)}" rel="noreferrer">{_e(url)}</a>'
    return f" {_e(url)}" if url else ""


def _joined(values: Iterable[Any]) -> str:
    found = sorted({str(v) for v in values if v})
    return ", ".join(found) or "unknown"


def _cell_details(cell: Cell, release: str) -> list[tuple[str, str]]:
    """The rows of a cell's disclosure: verdict, expected, remedy, drift, attempts, error, report."""
    rows = [("verdict", cell.verdict), ("transformers", release)]
    if cell.expected:
        rows.append(("expected", cell.expected))
    details = cell.details
    if details.get("remedy"):
        rows.append(("remedy", str(details["remedy"])))
    drift = details.get("drift")
    if isinstance(drift, dict):
        wrong_ids = drift.get("dimension") in (None, "ids")
        parts = [f"{drift.get('remedy')} {'gives wrong ids' if wrong_ids else 'drifts'}"]
        if drift.get("dimension"):
            parts.append(f"dimension {drift['dimension']}")
        if drift.get("probe"):
            kind = f" ({drift['probe_kind']})" if drift.get("probe_kind") else ""
            parts.append(f"probe {drift['probe']!r}{kind}")
        if drift.get("probe_source"):
            parts.append(f"drawn from {drift['probe_source']}")
        rows.append(("drift", "; ".join(parts)))
    attempts = details.get("attempts")
    if isinstance(attempts, list) and attempts:
        rows.append(
            (
                "attempts",
                ", ".join(
                    f"{a.get('remedy')} {a.get('status')}"
                    + (f" ({a['tokenizer_class']})" if a.get("tokenizer_class") else "")
                    for a in attempts
                ),
            )
        )
    if details.get("error"):
        rows.append(("error", str(details["error"])))
    if details.get("why") or (cell.message and not cell.checked):
        rows.append(("why", str(details.get("why") or cell.message)))
    if cell.dimensions:
        rows.append(("dimensions", cell.dimensions))
    if cell.findings:
        rows.append(("findings", ", ".join(cell.findings)))
    if cell.repairs:
        rows.append(("repairs", ", ".join(cell.repairs)))
    if cell.local is not None:
        rows.append(("local folder", cell.local))
    if cell.source:
        rows.append(("report", cell.source))
    return rows


def _cell_html(case: str, release: str, cell: Cell | None) -> str:
    where = f'data-case="{_e(case)}" data-release="{_e(release)}"'
    if cell is None:
        return f'<td class="cell missing" {where} title="no record for this release">{MARK_MISSING}</td>'
    rows = _cell_details(cell, release)
    title = "\n".join(f"{name}: {value}" for name, value in rows)
    colour = COLOURS.get(cell.verdict, COLOURS["not-checked"])[0]
    classes = "cell" + (" unexpected" if cell.unexpected else "")
    listing = "".join(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>" for name, value in rows)
    return (
        f'<td class="{classes}" {where} data-verdict="{_e(cell.verdict)}" style="background:{colour}" '
        f'title="{_e(title)}"><details><summary>{_e(cell_text(cell))}</summary>'
        f'<div class="pop"><dl>{listing}</dl></div></details></td>'
    )


def _loader_html(row: str, release: str, result: dict[str, str] | None) -> str:
    """A client loader's cell (information beside the verdicts): its status and text on hover."""
    where = f'data-case="{_e(row)}" data-release="{_e(release)}"'
    if result is None:
        return f'<td class="cell missing" {where} title="no record for this release">{MARK_MISSING}</td>'
    status = str(result.get("status"))
    colour = LOADER_COLOURS.get(status, LOADER_COLOURS["other"])[0]
    text = str(result.get("text", status))
    return (
        f'<td class="cell loader" {where} data-verdict="{_e(status)}" style="background:{colour}" '
        f'title="{_e(text)}"><details><summary>{_e(status)}</summary>'
        f'<div class="pop"><dl><dt>loader</dt><dd>{_e(text)}</dd></dl></div></details></td>'
    )


def _versions(grid: Grid) -> str:
    if grid.releases:
        span = grid.releases[0] if len(grid.releases) == 1 else f"{grid.releases[0]} – {grid.releases[-1]}"
    else:
        span = "none"
    finished = sorted(str(v.get("finished_at")) for v in grid.versions.values() if v.get("finished_at"))
    try:
        tool = metadata.version("pytest-tokcompat")
    except metadata.PackageNotFoundError:
        tool = "unknown"
    count = f"{len(grid.releases)} release" + ("" if len(grid.releases) == 1 else "s")
    runs = f" · reports finished {finished[0][:10]} to {finished[-1][:10]}" if finished else ""
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f'<p class="meta" id="versions"><b>transformers</b> {_e(span)} ({count}) · '
        f"<b>tokenizers</b> {_e(_joined(v.get('tokenizers') for v in grid.versions.values()))} · "
        f"<b>pytest-tokcompat</b> {_e(_joined(v.get('pytest-tokcompat') for v in grid.versions.values()))} "
        f"(this page: {_e(tool)}) · <b>generated</b> {_e(today)}{_e(runs)}</p>"
    )


def _legend(grid: Grid) -> str:
    used = {cell.verdict for cells in grid.rows.values() for cell in cells.values()}
    items = [
        f'<li data-legend="{_e(name)}"><span class="swatch" style="background:{colour}"></span>{_e(text)}</li>'
        for name, (colour, text) in COLOURS.items()
    ]
    items += [
        f'<li data-legend="{_e(name)}"><span class="swatch" style="background:#eee"></span>{_e(name)}: '
        "a state this page has no colour for</li>"
        for name in sorted(used - set(COLOURS))
    ]
    items += [
        f'<li data-legend="{_e(mark)}"><span class="mark">{_e(mark)}</span>{_e(text)}</li>'
        for mark, text in MARKS.items()
    ]
    if grid.loaders:
        items += [
            f'<li data-legend="loader:{_e(name)}"><span class="swatch" style="background:{colour}"></span>'
            f"{_e(text)}</li>"
            for name, (colour, text) in LOADER_COLOURS.items()
        ]
    return (
        '<section id="legend"><h2>Legend</h2><ul class="legend">'
        + "".join(items)
        + '</ul><p class="meta">Hover a cell for its details, or click it to open them.</p></section>'
    )


def _alarms(grid: Grid) -> str:
    if not grid.alarms:
        text = "No alarms." if grid.complete else "No alarms in what was checked."
        return f'<section id="alarms"><h2>Alarms</h2><p>{text}</p></section>'
    items = "".join(
        f'<li data-alarm="{_e(a.kind)}:{_e(a.subject)}"><span class="kind">{_e(a.kind)}</span> '
        f"<b>{_e(a.subject)}</b>, first in transformers {_e(a.first_release)}"
        f"{' (also ' + _e(', '.join(a.releases[1:])) + ')' if a.releases[1:] else ''}: {_e(a.message)}. "
        f"<i>What to do:</i> {_e(a.action)}.{_link(a.link)}</li>"
        for a in grid.alarms
    )
    return (
        f'<section id="alarms"><h2>Alarms ({len(grid.alarms)})</h2><ul class="alarms">{items}</ul></section>'
    )


def _events(grid: Grid) -> str:
    if not grid.events:
        return (
            '<section id="events"><h2>Upstream registry events</h2><p>No change of transformers\' '
            "tokenizer registries between adjacent releases (for what the reports recorded).</p></section>"
        )
    items = []
    for event in grid.events:
        if event.alarm:
            flag = ' <span class="alarm-event">alarm</span>'
        elif event.acknowledged:
            flag = f' <span class="ack">({_e(event.acknowledged)})</span>'
        else:
            flag = ""
        items.append(f'<li data-event="{_e(event.release)}">{_e(event.text)}{flag}{_link(event.link)}</li>')
    return (
        f'<section id="events"><h2>Upstream registry events ({len(grid.events)})</h2>'
        f'<ul class="events">{"".join(items)}</ul></section>'
    )


def render_page(grid: Grid) -> str:
    """The whole page: self-contained HTML (inline style, no script, nothing fetched)."""
    status = grid.exit_status()
    if grid.alarms or grid.unexpected:
        badge = (
            f'<span class="status bad">{len(grid.alarms)} alarm(s), {len(grid.unexpected)} unexpected</span>'
        )
    elif not grid.complete:
        badge = '<span class="status partial">incomplete</span>'
    else:
        badge = '<span class="status ok">all as expected</span>'
    warning = ""
    if not grid.complete:
        reasons = "".join(f"<li>{_e(reason)}</li>" for reason in grid.incomplete)
        warning = (
            '<div class="incomplete" id="incomplete"><b>Incomplete grid</b>: not everything was checked, so this '
            f"grid cannot say that all is well. Why:<ul>{reasons}</ul></div>"
        )
    head = "".join(f"<th>{_e(release)}</th>" for release in grid.releases)
    rows = "".join(
        f"<tr><th>{_e(case)}</th>"
        + "".join(_cell_html(case, r, cells.get(r)) for r in grid.releases)
        + "</tr>"
        for case, cells in grid.rows.items()
    )
    rows += "".join(
        f'<tr class="loader"><th>{_e(row)}</th>'
        + "".join(_loader_html(row, r, results.get(r)) for r in grid.releases)
        + "</tr>"
        for row, results in grid.loaders.items()
    )
    notes = "".join(f"<li>{_e(note)}</li>" for note in grid.notes)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(TITLE)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{_e(TITLE)}</h1>{_versions(grid)}<p>{badge} "
        f'<span class="meta">exit status {status}</span></p></header>{warning}'
        f'<div class="scroll" id="grid-scroll"><table id="grid"><thead><tr><th>case</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
        f"{_legend(grid)}{_alarms(grid)}{_events(grid)}"
        + (f'<section id="notes"><h2>Notes</h2><ul>{notes}</ul></section>' if notes else "")
        + "</body></html>\n"
    )
