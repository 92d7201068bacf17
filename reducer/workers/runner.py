"""The long-lived runner: a child of the fork server that runs candidates one after another.

A child forked per candidate pays, every time, for starting the XLA backend and for a first compile
that is slower than later ones in the same process. The runner pays that once: it is forked like
any candidate child, then keeps its initialised interpreter and runs each new candidate in it, of
whatever level (`reducer.workers.requests`), a script exactly as `reducer.harness` would run it in a
fresh child (own scratch folder, environment, output files, `__main__`, and only the modules its
own imports load: `reducer.workers.imports`). Between candidates it puts back what a script can
change: the working directory, `sys.argv`, `sys.path`, the environment, warning filters, every
`jax.config` option (global, and per thread: what a `with jax.debug_nans(False):` block leaves
behind), the script's own modules (those loaded from its scratch folder), and JAX's
caches; processes the candidate started in the runner's process group are killed.

When the interpreter can no longer be trusted (a config option that cannot be reset), when its
address space has grown past most of the candidates' memory limit, or after `RECYCLE_AFTER`
candidates, the runner retires after its reply and the fork server forks a new one. A crash, a
hang the client kills, or `os._exit` in a candidate ends the runner like any child; the fork server
reports its status and starts a new runner next time.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
import warnings

from reducer.workers import requests
from reducer.workers.requests import ScriptFile

RECYCLE_AFTER = 200
PER_CANDIDATE = ("HOME", "TMPDIR", "REDUCER_HARNESS_OUT")


def reuse_key(envelope: dict) -> str:
    """Candidates with the same key may share a runner, whatever their kind: the same environment
    apart from the variables that name the candidate's own scratch folder (so the same limits)."""
    env = {k: v for k, v in envelope["env"].items() if k not in PER_CANDIDATE}
    return json.dumps(sorted(env.items()))


class Baseline:
    """The interpreter's state before the first candidate, to return to after each one."""

    def __init__(self):
        self.cwd = os.getcwd()
        self.argv = list(sys.argv)
        self.path = list(sys.path)
        self.modules = set(sys.modules)
        self.environ = dict(os.environ)
        self.filters = list(warnings.filters)
        self.config = self._config()

    @staticmethod
    def _config() -> dict:
        jax = sys.modules.get("jax")
        return dict(jax.config.values) if jax is not None else {}

    def restore(self, scratch: str, clear_caches: bool = True) -> bool:
        """Undo what the last candidate changed (JAX's caches too, with `clear_caches`); False when
        the interpreter cannot be trusted."""
        os.chdir(self.cwd)
        sys.argv[:] = self.argv
        sys.path[:] = self.path
        os.environ.clear()
        os.environ.update(self.environ)
        warnings.filters[:] = self.filters
        warnings._filters_mutated()
        root = os.path.realpath(scratch) + os.sep
        for name in set(sys.modules) - self.modules:
            origin = getattr(sys.modules.get(name), "__file__", None) or ""
            if origin and os.path.realpath(origin).startswith(root):
                del sys.modules[name]
        jax = sys.modules.get("jax")
        if jax is None:
            return True
        now = jax.config.values
        try:
            for name, value in self.config.items():
                if now.get(name) != value:
                    jax.config.update(name, value)
        except Exception:
            return False
        if not _unset_thread_values():
            return False
        if not self.config:  # the first candidate imported jax: from now on, keep its defaults
            self.config = self._config()
        if clear_caches:
            jax.clear_caches()
        return True


def _unset_thread_values() -> bool:
    """Unset every per-thread value of JAX's options, and of the states their hooks keep (the NaN
    check's: JAX 0.10.2 leaves it off after a `with jax.debug_nans(False):` block, though the option
    reads True again); False when they cannot be read or unset."""
    try:
        from jax._src import api, config

        states = [s for s in config.config._value_holders.values() if hasattr(s, "swap_local")]
        for state in [*states, api._post_hook_state]:
            if state.get_local() is not config.config_ext.unset:
                state.swap_local(config.config_ext.unset)
    except Exception:
        return False
    return True


def _redirect(stdout: str, stderr: str) -> None:
    """Point descriptors 1 and 2 at these files, after flushing what is buffered for the old ones."""
    sys.stdout.flush()
    sys.stderr.flush()
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)


def run_one(envelope: dict) -> int:
    """Run one candidate in this interpreter, as the fork server's one-shot child would:
    `envelope` is `{"scratch", "env", "request"}`, the request as `reducer.workers.requests.wire`
    wrote it."""
    import tempfile

    scratch = envelope["scratch"]
    os.chdir(scratch)
    _redirect(os.path.join(scratch, ".reducer-stdout"), os.path.join(scratch, ".reducer-stderr"))
    os.environ.clear()
    os.environ.update(envelope["env"])
    tempfile.tempdir = None
    return requests.from_wire(envelope["request"]).run()


def serve(incoming, replies, first: dict) -> None:
    """The runner's loop (in the forked child): run `first`, then each request read from
    `incoming`, answering `{"code", "retire"}` on `replies` after each; never returns.

    JAX's caches are cleared after each script, and before a script that follows other requests:
    those (traced programs, IR modules) are reducer's own making and keep the caches between them,
    since a captured program compiles for seconds and its candidates share most of it."""
    baseline = Baseline()
    request, done, filled = first, 0, False
    while request is not None:
        script = request["request"]["kind"] == ScriptFile.kind
        if script and filled and "jax" in sys.modules:
            sys.modules["jax"].clear_caches()
        code = run_one(request)
        done += 1
        if script:  # other levels' requests run reducer's own code, which starts no process
            kill_strays()
        try:
            trusted = baseline.restore(request["scratch"], clear_caches=script)
        except Exception:
            trusted = False
        filled = not script
        retire = not trusted or done >= RECYCLE_AFTER or near_memory_limit()
        _redirect(os.devnull, os.devnull)
        replies.write(json.dumps({"code": code, "retire": retire}) + "\n")
        replies.flush()
        if retire:
            break
        line = incoming.readline()
        request = json.loads(line) if line else None
    os._exit(0)


def near_memory_limit(share: float = 0.6) -> bool:
    """Whether the runner's address space has grown past `share` of the candidates' limit: the
    next candidate would have less room than in a child of its own."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return False
    try:
        with open("/proc/self/status") as fh:
            size_kb = next(int(line.split()[1]) for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return False
    return size_kb * 1024 > share * limit


def kill_strays() -> None:
    """Kill the processes a candidate left in the runner's process group, as the client kills a
    one-shot child's whole group when it ends, and reap them."""
    me, group = os.getpid(), os.getpgid(0)
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, IndexError, ValueError):
            continue
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def main(argv: list[str]) -> int:
    """`python -m reducer.workers.runner REQUEST.json`: run one request in a fresh interpreter (the
    cold path for requests that are not scripts), in the current folder and environment."""
    with open(argv[0], encoding="utf-8") as fh:
        return requests.from_wire(json.load(fh)).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
