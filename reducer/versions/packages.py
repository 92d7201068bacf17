"""Which packages go into the environment that tries one version.

The package under test is pinned to the version tried; what the reproducer imports comes with it
(`enzyme_ad` brings enzyme-ad, `jax` brings jax and jaxlib). `jax` and `jaxlib` are released
together and are pinned to the same version; the other packages keep the installed version where
the resolver finds that compatible, and otherwise take the newest release the version under test
allows (enzyme-ad names the range of jax it works with). A version whose packages cannot be
installed together is skipped with the resolver's reason. Where the reproducer cannot run with the
installed companions (enzyme-ad 0.0.14 with jax 0.10.2), `contemporary_pins` gives the companions
as they were when the version came out: each at its newest release uploaded before it, and their
own dependencies no newer than that.
"""
from __future__ import annotations

import ast
import datetime
import importlib.metadata as md
import sys

from packaging.utils import canonicalize_name

from reducer.versions.envs import Environments
from reducer.versions.index import LOCKSTEP, installed_version, release, releases

#: the project's own packages: run from the source tree (PYTHONPATH), never installed into a version's env
OWN = {"reducer", "oracles"}


def imported_distributions(source: str) -> list[str]:
    """The installed distributions a program imports (jax also brings jaxlib), in a stable order."""
    tops = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ["jax", "jaxlib"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            tops.add(node.module.split(".")[0])
    owners = md.packages_distributions()
    names = []
    for top in sorted(tops - OWN - set(sys.stdlib_module_names)):
        names += [canonicalize_name(d) for d in owners.get(top, [])]
    if "jax" in names:
        names.append("jaxlib")
    return sorted(set(names))


def _lockstep_pin(package: str, version: str) -> dict[str, str]:
    """{jaxlib: V} for jax V when the index has that jaxlib, else nothing (the resolver picks one)."""
    partner = LOCKSTEP.get(package)
    if not partner:
        return {}
    if any(str(r.version) == version for r in releases(partner)):
        return {partner: version}
    return {}


def pins_for(package: str, version: str, needed: list[str], envs: Environments) -> tuple[dict | None, str]:
    """Every package and version of the environment for `package==version`, or None and why not."""
    package = canonicalize_name(package)
    fixed = {package: version, **_lockstep_pin(package, version)}
    others = [n for n in needed if n not in fixed]
    installed = {n: installed_version(n) for n in others}
    attempts = [[f"{n}=={v}" for n, v in fixed.items()] +
                [f"{n}=={installed[n]}" if installed[n] else n for n in others]]
    if any(installed.values()):
        attempts.append([f"{n}=={v}" for n, v in fixed.items()] + others)
    reason = ""
    for requirements in attempts:
        pins, reason = envs.resolve(requirements)
        if pins is None:
            continue
        if "jax" in pins and "jaxlib" in pins and pins["jax"] != pins["jaxlib"]:
            partner = "jaxlib" if "jax" in fixed else "jax"
            aligned = [r for r in requirements if canonicalize_name(r.split("==")[0]) not in ("jax", "jaxlib")]
            lead = pins["jax"] if partner == "jaxlib" else pins["jaxlib"]
            pins, reason = envs.resolve(aligned + [f"jax=={lead}", f"jaxlib=={lead}"])
            if pins is None:
                reason = f"no jaxlib {lead} installs with jax {lead} here: {reason}"
                continue
        return pins, ""
    return None, f"cannot be installed together ({', '.join(attempts[-1])}): {reason}"


def _newest_before(name: str, when) -> str | None:
    older = [r for r in releases(name) if r.uploaded and r.uploaded <= when and not r.version.is_prerelease
             and not r.why_not_installable()]
    return str(older[-1].version) if older else None


def contemporary_pins(package: str, version: str, needed: list[str], envs: Environments) -> tuple[dict | None, str]:
    """The environment for `package==version` with every companion at its newest release before that version."""
    package = canonicalize_name(package)
    tried = release(package, version)
    when = tried.uploaded
    if when is None:
        return None, "the index gives no upload dates"
    fixed = {package: version, **_lockstep_pin(package, version)}
    requirements = [f"{n}=={v}" for n, v in fixed.items()]
    for name in (n for n in needed if n not in fixed):
        lead = "jax" if name == "jaxlib" else name  # jaxlib follows jax
        pinned = _newest_before(lead, when) if lead not in fixed else fixed[lead]
        requirements.append(f"{name}=={pinned}" if pinned else name)
    # their dependencies (numpy, scipy …) of that time too
    return envs.resolve(requirements, before=(tried.completed + datetime.timedelta(days=1)).isoformat())
