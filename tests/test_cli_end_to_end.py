"""The README's flags end to end, through the `reducer` command as a user runs it (a real subprocess):
`reduce --hangs`, `--runner trust|confirm|off`, `--bisect PACKAGE`, `corpus check --versions`, and
`hunt` reducing its new findings. Outcomes are judged (exit status, the files written, the signature,
the log's own words, the reproducer failing in a fresh interpreter), never wall clocks: `--max-time`
only bounds a run that goes wrong.

The bisect tests install the installed jax (and what it needs) into an environment of their own,
from a package index made in a temporary folder of wheels downloaded with pip from the configured
index: they are marked `network` (a local mirror serves them offline) and skip when pip cannot get
the wheels."""
from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROGRAMS, needs_enzyme, reducer_cli
from reducer import errors

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def code_of(text: str) -> str:
    """A program without its comment lines (repro.py's header) and blank lines."""
    return "\n".join(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def summary(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def run_fresh(path: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """The reproducer in a fresh interpreter of its own, as a user runs it."""
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=path.parent,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=env)


# -- --hangs ------------------------------------------------------------------------------------------

def test_hangs_makes_a_program_that_never_ends_the_failure(tmp_path):
    out = tmp_path / "out"
    # --timeout: each hanging candidate costs this long; 5 s is ample for the few that end. --runs 1:
    # the program hangs every time, and each run of the original costs the whole timeout
    result = summary(reducer_cli("reduce", PROGRAMS / "hang.py", "--hangs", "--timeout", "5", "--out", out,
                                 "--jobs", "2", "--runs", "1", "--max-time", "240", "--json"))
    assert result["verified"].startswith("yes"), result
    assert result["signature"]["family"] == "crash" and result["signature"]["fields"]["how"] == "hang", result
    signature = json.loads((out / "signature.json").read_text())
    assert signature["fields"]["how"] == "hang"
    repro = (out / "repro.py").read_text()
    assert "while" in code_of(repro) and "jnp" not in code_of(repro), repro  # the loop alone
    assert result["final_tokens"] < result["original_tokens"]
    assert (out / "report.md").read_text().startswith("# ")
    # it still hangs, in an interpreter of its own (no jax left to import: a repro that ends does so at once)
    with pytest.raises(subprocess.TimeoutExpired):
        run_fresh(out / "repro.py", timeout=8)

    # without --hangs, a program that never ends shows no failure to reduce (it times out whatever the --timeout)
    done = reducer_cli("reduce", PROGRAMS / "hang.py", "--timeout", "2", "--out", tmp_path / "plain", "--jobs", "2",
                       "--runs", "1", "--max-time", "120")
    assert done.returncode == errors.OTHER_FAILURE, done.stderr
    assert "timed out" in done.stderr and not (tmp_path / "plain").exists()


# -- --runner trust | confirm | off ------------------------------------------------------------------
# tests/programs/runner_leak.py fails through a function it leaves on `builtins`: in a long-lived runner
# a candidate without the definition still fails (the earlier runs left it there); in a process of its
# own it does not. Each run that gets that far writes its process id to $REDUCER_TEST_PIDS.

def reduce_leak(tmp_path: Path, *runner: str) -> tuple[dict, Path, list[str], str]:
    pids = tmp_path / "pids.txt"
    out = tmp_path / "out"
    # --jobs 1: one runner, which has run the original when the first candidate comes
    done = reducer_cli("reduce", PROGRAMS / "runner_leak.py", *runner, "--out", out, "--jobs", "1",
                       "--max-time", "180", "--json", env={**os.environ, "REDUCER_TEST_PIDS": str(pids)})
    result = summary(done)
    return result, out, pids.read_text().split(), (out / "reduce.log").read_text()


def leak_still_fails_alone(out: Path, tmp_path: Path) -> None:
    repro = (out / "repro.py").read_text()
    assert re.search(r"builtins\.reducer_test_leak\s*=", repro), repro  # the definition it needs stays
    rerun = run_fresh(out / "repro.py", env={**os.environ, "REDUCER_TEST_PIDS": str(tmp_path / "rerun.txt")})
    assert rerun.returncode != 0 and "ConcretizationTypeError" in rerun.stderr, rerun.stderr[-2000:]


def test_runner_trust_goes_back_when_the_result_does_not_fail_alone(tmp_path):
    """The default: one long-lived runner; its result is checked in a child of its own, and when it does not
    fail there the reduction goes back to the last accepted program that does and goes on confirming."""
    result, out, pids, log = reduce_leak(tmp_path)
    assert len(pids) > len(set(pids)), pids  # runs shared a process: the long-lived runner
    assert "does not fail in a child of its own: an earlier candidate left something behind" in log, log
    assert "with interesting verdicts confirmed" in log
    assert result["verified"].startswith("yes"), result
    leak_still_fails_alone(out, tmp_path)


def test_runner_confirm_checks_every_interesting_verdict_in_a_child(tmp_path):
    result, out, pids, log = reduce_leak(tmp_path, "--runner", "confirm")
    assert "the runner's verdict did not hold in a child of its own" in log, log
    unconfirmed = re.search(r"long-lived runner: (\d+) interesting verdicts not confirmed", log)
    assert unconfirmed and int(unconfirmed[1]) >= 1, log
    assert "does not fail in a child of its own" not in log  # no misled result to go back from
    assert result["verified"].startswith("yes"), result
    assert result["final_tokens"] < result["original_tokens"]
    leak_still_fails_alone(out, tmp_path)


def test_runner_off_runs_each_candidate_in_a_forked_child(tmp_path):
    result, out, pids, log = reduce_leak(tmp_path, "--runner", "off")
    assert len(pids) >= 3 and len(pids) == len(set(pids)), pids  # a process of its own for every run
    assert "did not hold" not in log and "does not fail in a child of its own" not in log, log
    assert "long-lived runner" not in log
    assert result["verified"].startswith("yes"), result
    assert result["final_tokens"] < result["original_tokens"]
    leak_still_fails_alone(out, tmp_path)


# -- --bisect PACKAGE and corpus check --versions (real installs, from a local index) -----------------

@pytest.fixture(scope="module")
def jax_index(tmp_path_factory):
    """Settings for a package index that has the installed jax, jaxlib and their dependencies and nothing
    else (wheels pip downloads from the configured index into a find-links folder), and a bisect cache
    of this module's own (removed afterwards: an environment is about 0.5 GB)."""
    root = tmp_path_factory.mktemp("jax-index")
    wanted = [f"{name}=={md.version(name)}" for name in ("jax", "jaxlib", "ml_dtypes", "numpy", "opt_einsum", "scipy")]
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                          "-d", str(root / "wheels"), *wanted], capture_output=True, text=True, timeout=900)
    if got.returncode != 0:
        pytest.skip(f"pip cannot download {', '.join(wanted)}: {got.stderr.strip()[-300:]}")
    (root / "simple").mkdir()  # an index with no projects: every release comes from the wheels folder
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": (root / "simple").as_uri(),
           "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": str(root / "wheels"),
           "REDUCER_BISECT_CACHE": str(root / "cache")}
    yield env
    shutil.rmtree(root / "cache", ignore_errors=True)


@pytest.mark.network
def test_reduce_bisect_records_which_releases_fail(tmp_path, jax_index):
    out = tmp_path / "out"
    done = reducer_cli("reduce", PROGRAMS / "leaked_tracer.py", "--bisect", "jax", "--out", out, "--jobs", "2",
                       "--max-time", "180", env=jax_index)
    assert done.returncode == 0, done.stderr[-3000:]
    jax = md.version("jax")
    line = f"versions: fails in jax {jax}, the only version that could run it"
    assert line in done.stderr, done.stderr[-3000:]  # said on the terminal (no --quiet) …
    assert line in (out / "reduce.log").read_text()  # … and in the log
    answer = json.loads((out / "signature.json").read_text())["versions"]["jax"]
    assert answer["first_failing"] == answer["last_failing"] == jax
    [tried] = answer["tried"]
    assert tried["verdict"] == "fails" and f"jax=={jax}" in tried["environment"], tried
    report = (out / "report.md").read_text()
    assert report.count("<summary>Versions: where the bug starts</summary>") == 1 and f"Fails in jax {jax}" in report
    assert json.loads((out / "signature.json").read_text())["family"] == "jax-error"
    assert "UnexpectedTracerError" in run_fresh(out / "repro.py").stderr


@pytest.mark.network
def test_corpus_check_versions_runs_every_case_under_each_release(tmp_path, jax_index):
    case = next((ROOT / "corpus").glob("adjoint-missing-jax-schur-jvp-*"))
    corpus = tmp_path / "corpus"
    shutil.copytree(case, corpus / case.name)
    fixed = corpus / (case.name + "-fixed")  # the same case, its reproducer no longer failing
    shutil.copytree(case, fixed)
    (fixed / "repro.py").write_text("import jax.numpy as jnp\nprint(jnp.ones(2).sum())\n")
    toml = (fixed / "case.toml").read_text()  # a case of its own: its own id
    (fixed / "case.toml").write_text(re.sub(r'^id = "(.*)"$', r'id = "\1-fixed"', toml, count=1, flags=re.M))
    jax = md.version("jax")
    junit = tmp_path / "corpus.xml"
    done = reducer_cli("corpus", "check", "--corpus", corpus, "--versions", f"jax={jax}", "--junit", junit,
                       env=jax_index)
    assert done.returncode == 1, done.stdout + done.stderr  # the installed versions' status: one case differs
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith(case.name)}
    header = next(line for line in done.stdout.splitlines() if line.startswith("case") and f"jax {jax}" in line)
    assert header.split()[-2:] == ["jax", jax], done.stdout
    assert rows[case.name].endswith("still reproduces  still reproduces"), done.stdout
    assert rows[fixed.name].rstrip().endswith("fixed"), done.stdout
    import xml.etree.ElementTree as ET

    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    assert set(suites) == {"reducer corpus", f"reducer corpus on jax {jax}"}
    assert suites[f"reducer corpus on jax {jax}"].get("failures") == "1"


# -- hunt reduces what it finds ---------------------------------------------------------------------

@needs_enzyme
def test_hunt_reduces_its_new_findings(tmp_path):
    """A finding the corpus does not have is reduced by `reducer reduce`; the folder is ready for `corpus add`."""
    corpus = tmp_path / "empty-corpus"
    corpus.mkdir()
    done = reducer_cli("hunt", "--ops", r"^lax\.top_k$", "--modes", "grad", "--through", "enzyme", "--dtypes",
                       "float32", "--corpus", corpus, "--reduce-time", "120", "--out", tmp_path / "hunt",
                       "--jobs", "2", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    hunt = json.loads((tmp_path / "hunt" / "hunt.json").read_text())
    [finding] = hunt["findings"]
    assert finding["signature"]["family"] == "adjoint-missing"
    assert finding["signature"]["fields"] == {"source": "enzyme", "op": "chlo.top_k"}
    assert not finding.get("known")
    folder = tmp_path / "hunt" / finding["folder"]
    program = (folder / "program.py").read_text()
    repro = (folder / "repro.py").read_text()
    assert len(code_of(repro)) < len(code_of(program)), (program, repro)
    assert "verified: yes" in (folder / "reduce.log").read_text()
    assert "Enzyme-JAX: no adjoint for `chlo.top_k`" in (folder / "report.md").read_text()
    table = (tmp_path / "hunt" / "hunt.md").read_text()
    row = next(line for line in table.splitlines() if "chlo.top_k" in line)
    assert "| new |" in row and re.search(r"\d+ -> \d+ tokens", row), row
    rerun = run_fresh(folder / "repro.py")
    assert "could not compute the adjoint" in rerun.stderr, rerun.stderr[-2000:]
    added = reducer_cli("corpus", "add", folder, "--corpus", corpus)
    assert added.returncode == 0, added.stderr
