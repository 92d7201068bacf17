"""Writing outputs safely: every file is written to a temporary name and renamed into place."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write `content` (text, or bytes such as an `.npz`) to `path` through a temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if isinstance(content, bytes) else "w") as fh:
            fh.write(content)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def scrub(text: str, *private: str) -> str:
    """Replace the user's home directory and other private paths in output meant for a report."""
    home = str(Path.home())
    for path in sorted({p for p in private if p}, key=len, reverse=True):
        text = text.replace(path, "<scratch>")
    import re

    text = re.sub(r"[^\s\"']*/(?:site|dist)-packages/", "<site-packages>/", text)
    text = re.sub(r"/tmp/[\w./-]*?/cand-\w+/", "", text)
    if home and home != "/":
        text = text.replace(home, "~")
    return text
