"""`hunt.md`: the hunt's summary for people, made from the same data as `hunt.json`."""
from __future__ import annotations


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(summary: dict) -> str:
    s = summary["sweep"]
    lines = [
        "# reducer hunt",
        "",
        f"{s['operations']} operations x modes {', '.join(s['modes'])} x routes {', '.join(s['routes'])} x dtypes "
        f"{', '.join(s['dtypes'])} on {s['platform']}: {s['programs']} programs ({s['not_applicable']} not "
        f"applicable), {s['ran']} ran, {s['not_run']} not run (budget), {s['clean']} clean, {s['failing']} failing.",
    ]
    if s["contained"]:
        lines.append("Contained by the sandbox: " + ", ".join(f"{n} {k}" for k, n in sorted(s["contained"].items()))
                     + ".")
    lines += ["", f"{len(summary['findings'])} distinct failures, in {summary['run']['seconds']} s "
                  f"({summary['run']['executor']} executor, {summary['run']['jobs']} jobs).", ""]
    if not summary["findings"]:
        return "\n".join(lines) + "\n"
    lines += ["| finding | programs | modes | routes | corpus | reduced | reproducer |",
              "|---|---|---|---|---|---|---|"]
    for f in summary["findings"]:
        known = f["known"]
        corpus = f"known: {known['case']}" if known else ("new" if f["recognised"] else "new (hunt's own check)")
        red = summary["reductions"].get(f["id"])
        reduced = "—"
        if red:
            reduced = (f"{red.get('original_tokens')} -> {red.get('final_tokens')} tokens" if red.get("final_tokens")
                       else f"failed: {red.get('error') or red.get('status')}")
        title = f["signature"]["title"] or f["id"]
        lines.append(f"| {_cell(title)} | {f['count']} | {_cell(', '.join(f['modes']))} "
                     f"| {_cell(', '.join(f['routes']))} | {_cell(corpus)} | {_cell(reduced)} "
                     f"| `{f['folder']}/repro.py` |")
    lines += ["", "Add a new finding to the corpus with `reducer corpus add FOLDER` (findings the hunt's own "
              "check found, `wrong-derivative` and `unrecognised`, are listed for a person to judge)."]
    return "\n".join(lines) + "\n"
