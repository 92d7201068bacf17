"""What the package index has: the releases of a package, when each was uploaded, and whether one
installs here (a wheel for this Python and platform, not yanked).

The index is the one pip is configured with (`pip config list` and the PIP_* variables: index-url,
extra-index-url, find-links), read through the JSON simple API (PEP 691), or its HTML form (PEP 503)
where an index serves only that, and local find-links folders. Nothing here installs anything.
"""
from __future__ import annotations

import datetime
import functools
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, canonicalize_name
from packaging.utils import parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from reducer.errors import NOT_FOUND, USAGE, ReducerError

PYPI = "https://pypi.org/simple"
TIMEOUT = float(os.environ.get("REDUCER_INDEX_TIMEOUT", "20"))
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
#: packages that are released together and must be installed at the same version
LOCKSTEP = {"jax": "jaxlib", "jaxlib": "jax"}


@dataclass(frozen=True)
class IndexSettings:
    """Where pip looks for packages; passed on to uv so both see the same releases."""

    index_url: str = PYPI
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()

    def installer_args(self, uv: bool = True) -> list[str]:
        """Options for uv (or pip): uv must look at every index for the best match, as pip does."""
        args = ["--index-url", self.index_url] + (["--index-strategy", "unsafe-best-match"] if uv else [])
        for url in self.extra_index_urls:
            args += ["--extra-index-url", url]
        for link in self.find_links:
            args += ["--find-links", link]
        return args


def _usable(location: str) -> bool:
    """False for a file:// index or a folder that does not exist (pip only warns about those)."""
    if location.startswith("file://"):
        return Path(urllib.parse.urlparse(location).path).exists()
    if "://" not in location:
        return Path(location).exists()
    return True


@functools.lru_cache(maxsize=1)
def pip_settings() -> IndexSettings:
    """The index configuration pip would use here."""
    values: dict[str, str] = {}
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    for line in listed.splitlines():  # global.index-url='…', :env:.find-links='…'
        m = re.match(r"^[^.]*\.(?P<key>[\w-]+)='(?P<value>.*)'$", line.strip())
        if m:
            values[m["key"]] = m["value"]
    for key in ("index-url", "extra-index-url", "find-links"):
        env = os.environ.get("PIP_" + key.upper().replace("-", "_"))
        if env is not None:  # set, even empty: it overrides the configuration files
            values[key] = env
    split = lambda key: tuple(v for v in values.get(key, "").split() if _usable(v))  # noqa: E731
    index = values.get("index-url", PYPI).split()
    return IndexSettings(index_url=index[0] if index else PYPI, extra_index_urls=split("extra-index-url"),
                         find_links=split("find-links"))


@dataclass
class Release:
    """One version of a package on the index."""

    version: Version
    uploaded: datetime.datetime | None = None  # its first file
    completed: datetime.datetime | None = None  # its last file (wheels for some platforms come days later)
    files: list[str] = field(default_factory=list)
    wheel_here: bool = False  # a wheel this interpreter can install
    yanked: bool = False
    requires_python: str = ""

    def why_not_installable(self) -> str:
        """Empty when it installs here, else why not."""
        here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        if self.yanked:
            return "yanked from the index"
        if self.requires_python:
            try:
                if sys.version.split()[0] not in SpecifierSet(self.requires_python):
                    return f"requires Python {self.requires_python}, not {here}"
            except InvalidSpecifier:
                pass
        if not self.wheel_here:
            kinds = sorted({tag_of(f) for f in self.files})
            return f"no wheel for {here} on this platform (the index has: {', '.join(kinds) or 'nothing'})"
        return ""


def tag_of(filename: str) -> str:
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return "-".join(parts[-3:-1])
    return "source only"


class _Links(HTMLParser):
    """The anchors of a PEP 503 project page, with their data-* attributes."""

    def __init__(self):
        super().__init__()
        self.files: list[dict] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            a = dict(attrs)
            href = a.get("href") or ""
            name = urllib.parse.unquote(href.split("#")[0].rsplit("/", 1)[-1])
            self.files.append({"filename": name, "requires-python": a.get("data-requires-python") or "",
                               "yanked": "data-yanked" in a})


def _project_page(base: str, name: str) -> list[dict]:
    if base.startswith("file://"):  # a folder laid out as a simple index, or of files
        folder = Path(urllib.parse.urlparse(base).path) / name
        if (folder / "index.html").is_file():
            links = _Links()
            links.feed((folder / "index.html").read_text("utf-8", "replace"))
            return links.files
        return _find_links_files(str(folder))
    url = f"{base.rstrip('/')}/{name}/"
    request = urllib.request.Request(url, headers={"Accept": ACCEPT, "User-Agent": "reducer-bisect"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        kind = response.headers.get("Content-Type", "")
        body = response.read().decode("utf-8", "replace")
    if "json" in kind:
        return json.loads(body).get("files", [])
    links = _Links()
    links.feed(body)
    return links.files


def _find_links_files(location: str) -> list[dict]:
    path = Path(urllib.parse.urlparse(location).path if location.startswith("file://") else location)
    if not path.is_dir():
        return []
    return [{"filename": p.name} for p in path.iterdir() if p.suffix in (".whl", ".gz", ".zip")]


def _version_of(filename: str, name: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            project, version, _, _ = parse_wheel_filename(filename)
        else:
            project, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return version if canonicalize_name(project) == name else None


def _installs_here(filename: str) -> bool:
    if not filename.endswith(".whl"):
        return False
    try:
        tags = parse_wheel_filename(filename)[3]
    except (InvalidWheelFilename, InvalidVersion):
        return False
    return not tags.isdisjoint(_here_tags())


@functools.lru_cache(maxsize=1)
def _here_tags() -> frozenset:
    return frozenset(sys_tags())


@functools.lru_cache(maxsize=32)
def releases(package: str) -> tuple[Release, ...]:
    """Every release of `package` on the configured index, oldest first.

    An index that cannot be reached is one line of error (exit 3) unless another index has the package.
    """
    settings = pip_settings()
    name = canonicalize_name(package)
    files: list[dict] = []
    problems = []
    for base in (settings.index_url, *settings.extra_index_urls):
        try:
            files += _project_page(base, name)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                problems.append(f"{base}: HTTP {exc.code}")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            problems.append(f"{base}: {getattr(exc, 'reason', exc)}")
    for location in settings.find_links:
        files += _find_links_files(location)
    by_version: dict[Version, Release] = {}
    for f in files:
        version = _version_of(f.get("filename", ""), name)
        if version is None:
            continue
        release = by_version.setdefault(version, Release(version, yanked=True))
        release.files.append(f["filename"])
        release.wheel_here |= _installs_here(f["filename"])
        release.yanked &= bool(f.get("yanked"))  # yanked when every file is
        if _installs_here(f["filename"]) or not release.requires_python:  # the wheel that would install decides
            release.requires_python = f.get("requires-python") or release.requires_python
        stamp = f.get("upload-time")
        if stamp:
            when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            release.uploaded = min(release.uploaded, when) if release.uploaded else when
            release.completed = max(release.completed, when) if release.completed else when
    if not by_version:
        where = "; ".join(problems) if problems else f"not on {settings.index_url}"
        if problems:
            raise ReducerError(f"cannot list the releases of {package}: the package index is unreachable ({where})",
                               NOT_FOUND)
        raise ReducerError(f"{package}: no such package on the package index ({where})", USAGE)
    return tuple(sorted(by_version.values(), key=lambda r: r.version))


def release(package: str, version: str) -> Release:
    """The release `version` of `package`; a version the index does not have is a one-line error."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        raise ReducerError(f"{package} {version!r}: not a version number", USAGE) from None
    known = releases(package)
    for r in known:
        if r.version == wanted:
            return r
    near = ", ".join(str(r.version) for r in known[-5:])
    raise ReducerError(f"{package} {version}: no such release on the package index (the newest: {near})", USAGE)


def installed_version(package: str) -> str | None:
    import importlib.metadata as md

    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return None


def choose_versions(package: str, spec: str | None, months: int = 12) -> list[str]:
    """The versions to try, oldest first.

    `A..B`: every release from A to B (both must exist); `A,B,C`: those releases; none: the installed
    version and the releases uploaded in the last `months` months. Pre-releases only when named.
    """
    known = releases(package)
    if spec and ".." in spec:
        low, _, high = (part.strip() for part in spec.partition(".."))
        first = release(package, low).version if low else known[0].version
        last = release(package, high).version if high else known[-1].version
        if first > last:
            raise ReducerError(f"--versions {spec}: {low} is newer than {high}", USAGE)
        chosen = [r for r in known if first <= r.version <= last and (not r.version.is_prerelease or r.version in
                                                                     (first, last))]
    elif spec:
        names = [v.strip() for v in spec.split(",") if v.strip()]
        if not names:
            raise ReducerError(f"--versions {spec!r}: no versions named", USAGE)
        chosen = sorted({release(package, v).version: release(package, v) for v in names}.values(),
                        key=lambda r: r.version)
    else:
        since = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=round(months * 30.44))
        mine = installed_version(package)
        chosen = [r for r in known if not r.version.is_prerelease and
                  ((r.uploaded and r.uploaded >= since) or (mine and r.version == Version(mine)))]
        if not any(r.uploaded for r in known):  # an index without upload times: the newest releases
            chosen = [r for r in known if not r.version.is_prerelease][-months:]
    return [str(r.version) for r in chosen]
