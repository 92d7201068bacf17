"""The README is a start and docs/ the reference: every option of every command is documented, the
README stays short, and every relative link in them leads to a file."""
import re
from pathlib import Path

import typer

from reducer.cli import app

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def options(command, path: tuple = ()):
    """(command path, --option) of every option (typer's own click: a group has `commands`)."""
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from options(sub, path + (name,))
        return
    for param in command.params:
        for opt in getattr(param, "opts", ()):
            if param.param_type_name == "option" and opt.startswith("--") and opt != "--help":
                yield " ".join(path), opt


def test_every_option_in_help_is_documented():
    text = "\n".join(page.read_text() for page in PAGES)
    found = list(options(typer.main.get_command(app)))
    missing = [f"reducer {where} {opt}" for where, opt in found if not re.search(re.escape(opt) + r"(?![\w-])", text)]
    assert len(found) > 30 and not missing


def test_the_readme_is_a_start_and_its_links_lead_somewhere():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"
