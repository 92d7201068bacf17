"""Filing a report in one step: the tracker of the project that owns the bug, a link that opens a new
issue there with the title and body filled in, and a link that searches the issues already filed.

No network is used: the links are written, not opened. GitHub takes the title and body of a new issue
from the link's query (`/issues/new?title=…&body=…`); a link past about 8 000 characters is refused,
so a long body is cut at a line and ends by saying to paste the rest from `report.md`.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from urllib.parse import urlencode

import oracles
from oracles import owners
from oracles.base import Signature
from oracles.nonfinite import inside_call

MAX_URL = 8000
#: the signature's fields that name what failed, the search's key words first
KEYWORD_FIELDS = ("op", "target", "rule", "pass", "xla-pass", "type", "detail", "message")
MAX_KEYWORDS = 6
REST = "\n\n(The report is longer than a link carries: paste the rest from `report.md`.)"
#: what a signature's message masks (`oracles.base.normalize_message` and the families' own)
#: the XLA pass a title names as the culprit (`reducer.xla_culprit`)
CULPRIT_IN_TITLE = re.compile(r"\(XLA pass `([\w.-]+)`\)")
MASKS = re.compile(r"<[a-z-]+>|\bN\b")


@dataclass(frozen=True)
class Filing:
    """Where a report goes, and the links that file it."""

    project: str
    repo: str | None  # None: the program's own code, no tracker
    title: str
    new_issue: str | None
    search: str | None
    keywords: str

    def to_dict(self) -> dict:
        return asdict(self)


def keywords(sig: Signature) -> str:
    """The operation's name and the error's key words, as one would search the tracker for them (a
    value made inside a public call: that call's name and the value first, `bessel_jn nan`)."""
    words: list[str] = []
    for name in (("from", "value") if inside_call(sig) else ()) + KEYWORD_FIELDS:
        value = MASKS.sub(" ", sig.get(name) or "")
        if name == "op" and value == "function":  # no one operation: a whole function's
            continue
        for word in re.findall(r"[A-Za-z_][\w.-]*\w", value):
            if word.lower() not in {w.lower() for w in words} and word.lower() not in {"in", "the", "of", "for", "to"}:
                words.append(word)
    return " ".join(words[:MAX_KEYWORDS])


def new_issue_link(repo: str, title: str, body: str) -> str:
    """GitHub's new-issue link for `repo`, the title and as much of `body` as a link carries."""
    base = f"https://github.com/{repo}/issues/new?"
    link = base + urlencode({"title": title, "body": body})
    if len(link) <= MAX_URL:
        return link
    lines = body.splitlines()
    while lines:
        lines.pop()
        link = base + urlencode({"title": title, "body": "\n".join(lines) + REST})
        if len(link) <= MAX_URL:
            return link
    return base + urlencode({"title": title, "body": REST.strip()})


def search_link(repo: str, words: str) -> str:
    return f"https://github.com/{repo}/issues?" + urlencode({"q": f"is:issue {words}".strip()})


def filing(sig: Signature, title: str, body: str, owner: str | None = None) -> Filing:
    """Where the failure `sig` goes (its family's owner, or `owner` where a fix said whose it is), with
    the links that file `title` and `body` there."""
    project = owners.PROJECTS[owner] if owner else oracles.project(sig)
    words = keywords(sig)
    culprit = CULPRIT_IN_TITLE.search(title)  # a script's culprit pass is its title's, not a field of its failure
    if culprit and culprit.group(1).lower() not in words.lower().split():
        words = f"{culprit.group(1)} {words}".strip()
    if project.repo is None:
        return Filing(project.name, None, title, None, None, words)
    return Filing(project.name, project.repo, title, new_issue_link(project.repo, title, body),
                  search_link(project.repo, words), words)


def section(f: Filing, fix: str = "", why: str = "no library raised the failure") -> list[str]:
    """The report's "Where to file" section; `fix` what made the reproducer run through, and `why` why
    a failure of the program's is its own code's, in words."""
    out = ["## Where to file", ""]
    if f.repo is None:
        return out + [f"Most likely the program's own code, not a library: {why}"
                      + (f", and with {fix} the reproducer runs through" if fix else "")
                      + ". File it with a library only where the library documents otherwise.", ""]
    return out + [f"With {f.project} ([{f.repo}](https://github.com/{f.repo}/issues)):", "",
                  f"- [open a new issue with this report]({f.new_issue})",
                  f"- [search the issues already filed]({f.search}) for `{f.keywords}`", ""]


_WITH = re.compile(r"^With (?P<project>.+?) \(\[(?P<repo>[\w.-]+/[\w.-]+)\]\(")
_LINK = re.compile(r"^- \[(?P<what>[^\]]+)\]\((?P<url>[^)\s]+)\)")


def read(report_text: str) -> Filing | None:
    """The filing a report's "Where to file" section gives (None for a report without one)."""
    lines = report_text.splitlines()
    if "## Where to file" not in lines:
        return None
    title = lines[0].lstrip("# ").strip() if lines else ""
    section = lines[lines.index("## Where to file") + 1:]
    section = section[:next((k for k, line in enumerate(section) if line.startswith(("## ", "<details>"))),
                            len(section))]
    found = next((m for m in map(_WITH.match, section) if m), None)
    if found is None:
        return Filing(owners.PROJECTS["program"].name, None, title, None, None, "")
    links = {m.group("what"): m.group("url") for m in map(_LINK.match, section) if m}
    new = next((url for what, url in links.items() if what.startswith("open")), None)
    search = next((url for what, url in links.items() if what.startswith("search")), None)
    words = re.search(r"for `([^`]*)`", "\n".join(section))
    return Filing(found.group("project"), found.group("repo"), title, new, search, words.group(1) if words else "")


def said(f: Filing) -> str:
    """Where to file, in lines for the end of a reduction."""
    if f.repo is None:
        return f"whose bug: {f.project} (report.md says why)"
    return f"file with {f.project}: {f.new_issue}\nsearch {f.repo} first: {f.search}"
