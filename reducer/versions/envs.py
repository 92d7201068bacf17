"""One Python environment per set of package versions, kept in a cache folder and reused.

An environment is made with `uv` (`uv venv` and `uv pip install`, with uv's wheel cache inside the
cache folder, so that environments share each wheel through hard links), or with `venv` and pip
where uv is missing. Which versions go together is asked of the resolver first (`uv pip compile`,
or `pip install --dry-run --report`), which reads each release's requirement metadata: a set that
cannot be installed together is a reason to skip that version, never a failure. Once made, an
environment is marked ready and a second bisect over the same versions installs nothing.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from packaging.utils import canonicalize_name

from reducer.errors import USAGE, ReducerError
from reducer.files import write_atomic
from reducer.versions.index import IndexSettings, pip_settings

CACHE_VARIABLE = "REDUCER_BISECT_CACHE"
READY = ".reducer-env.json"
TAG = "CACHEDIR.TAG"
INSTALL_TIMEOUT = 1800


def default_cache() -> Path:
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reducer" / "bisect"


def find_uv() -> str | None:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() else shutil.which("uv")


def one_line(text: str) -> str:
    """The installer's reason, in one line: uv's `Because …` explanation, else its last line."""
    lines = [line.strip(" ╰─▶│×") .strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if line and not line.startswith(("Using ", "Resolved ", "hint:"))]
    because = [line for line in lines if line.startswith(("Because", "No solution", "ERROR:"))]
    picked = because[-1] if because else (lines[-1] if lines else "the installer gave no reason")
    return picked[:300]


def disk_usage(root: Path) -> int:
    """Bytes under `root`, each hard-linked file counted once."""
    seen, total = set(), 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


class Environments:
    """The cache folder: environments under envs/, the installer's wheel cache, resolutions."""

    def __init__(self, root: Path | None = None, settings: IndexSettings | None = None, use_uv: bool = True):
        self.root = Path(root) if root else default_cache()
        self.settings = settings or pip_settings()
        self.uv = find_uv() if use_uv else None
        self.installed_now: list[str] = []

    # -- the folder ---------------------------------------------------------------------------
    def prepare(self) -> None:
        (self.root / "envs").mkdir(parents=True, exist_ok=True)
        tag = self.root / TAG
        if not tag.exists():
            tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# reducer bisect: environments per "
                           "package version; remove with `reducer bisect --clear-cache`\n")

    def clear(self) -> int:
        """Remove the cache folder; returns the bytes it held."""
        if not self.root.exists():
            return 0
        if not (self.root / TAG).is_file():
            raise ReducerError(f"{self.root}: not a reducer bisect cache (no {TAG}); not removed", USAGE)
        size = disk_usage(self.root)
        shutil.rmtree(self.root)
        return size

    def size(self) -> int:
        return disk_usage(self.root) if self.root.exists() else 0

    @contextmanager
    def _lock(self, key: str):
        (self.root / "locks").mkdir(parents=True, exist_ok=True)
        with open(self.root / "locks" / f"{key}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update(UV_CACHE_DIR=str(self.root / "uv-cache"), UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1",
                   PIP_CACHE_DIR=str(self.root / "pip-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")
        for name in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_CONSTRAINT", "UV_CONSTRAINT"):
            env.pop(name, None)
        return env

    def _run(self, command: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(command, input=stdin, capture_output=True, text=True, env=self._env(),
                              timeout=INSTALL_TIMEOUT)

    # -- resolving ----------------------------------------------------------------------------
    def resolve(self, requirements: list[str], before: str | None = None) -> tuple[dict[str, str] | None, str]:
        """Every package (and version) that `requirements` install, or None and the reason. `before`
        (an ISO date) leaves out every release uploaded after it (uv only; pip ignores it)."""
        self.prepare()
        key = hashlib.sha1(json.dumps([sorted(requirements), sys.version, self.settings.installer_args(), before])
                           .encode()).hexdigest()[:16]
        memo = self.root / "resolved" / f"{key}.json"
        if memo.is_file():
            data = json.loads(memo.read_text())
            return data.get("pins"), data.get("reason", "")
        if self.uv:
            done = self._run([self.uv, "pip", "compile", "-", "--python", sys.executable, "--no-header",
                              "--no-annotate", "--quiet", *self.settings.installer_args(),
                              *(["--exclude-newer", before] if before else [])],
                             stdin="\n".join(requirements) + "\n")
            pins = {canonicalize_name(n): v for n, _, v in (line.strip().partition("==")
                                                           for line in done.stdout.splitlines())
                    if v and not n.startswith("#")}
        else:
            done = self._run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                              "--report", "-", *self.settings.installer_args(uv=False), *requirements])
            pins = {}
            if done.returncode == 0:
                for item in json.loads(done.stdout or "{}").get("install", []):
                    meta = item.get("metadata", {})
                    pins[canonicalize_name(meta.get("name", ""))] = meta.get("version", "")
        result = (pins, "") if done.returncode == 0 and pins else (None, one_line(done.stderr or done.stdout))
        if done.returncode == 0 or "No solution" in done.stderr or "ResolutionImpossible" in done.stderr \
                or "Because" in done.stderr:  # a network failure is not remembered
            write_atomic(memo, json.dumps({"pins": result[0], "reason": result[1]}))
        return result

    # -- environments -------------------------------------------------------------------------
    def path_for(self, pins: dict[str, str]) -> Path:
        named = "-".join(f"{n}-{v}" for n, v in sorted(pins.items()) if n in ("jax", "jaxlib", "enzyme-ad"))
        digest = hashlib.sha1(json.dumps([sorted(pins.items()), sys.version]).encode()).hexdigest()[:10]
        return self.root / "envs" / f"{named or 'env'}-{digest}"

    def python(self, pins: dict[str, str]) -> tuple[Path | None, str]:
        """The interpreter of the environment holding exactly `pins`, made if needed; or None and why not."""
        self.prepare()
        path = self.path_for(pins)
        with self._lock(path.name):
            if (path / READY).is_file():
                return path / "bin" / "python", ""
            shutil.rmtree(path, ignore_errors=True)  # a half-made one from an interrupted run
            start = time.monotonic()
            reason = self._create(path, pins)
            if reason:
                shutil.rmtree(path, ignore_errors=True)
                return None, reason
            write_atomic(path / READY, json.dumps({"pins": pins, "python": sys.version,
                                                   "seconds": round(time.monotonic() - start, 1)}, indent=1))
            self.installed_now.append(path.name)
        return path / "bin" / "python", ""

    def _create(self, path: Path, pins: dict[str, str]) -> str:
        requirements = [f"{n}=={v}" for n, v in sorted(pins.items())]
        if self.uv:
            steps = [[self.uv, "venv", "--quiet", "--python", sys.executable, str(path)],
                     [self.uv, "pip", "install", "--quiet", "--python", str(path / "bin" / "python"),
                      *self.settings.installer_args(), *requirements]]
        else:
            steps = [[sys.executable, "-m", "venv", str(path)],
                     [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                      *self.settings.installer_args(uv=False), *requirements]]
        for step in steps:
            try:
                done = self._run(step)
            except subprocess.TimeoutExpired:
                return f"installing took over {INSTALL_TIMEOUT} s"
            if done.returncode != 0:
                return "cannot install: " + one_line(done.stderr or done.stdout)
        return ""
