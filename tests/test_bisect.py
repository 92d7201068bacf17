"""`reducer bisect`: the search, skips and verdicts without installs, the index and range parsing on a
local package index, the records it writes; and, where the package index is reachable, real bisects
over jax and enzyme-ad releases (marked `network`; their environments are cached)."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import HAS_ENZYME, PROGRAMS, recorded, reducer_cli
from oracles.crash import Crash
from reducer import corpus
from reducer.versions import envs as envmod, index, record
from reducer.versions.command import parse_versions_option
from reducer.versions.probe import FAILS, SKIPPED, WORKS, Probe, Reproducer, judge, run_in
from reducer.versions.search import bisect, middle_first, spread

ROOT = Path(__file__).resolve().parent.parent
V = [f"0.{i}.0" for i in range(1, 11)]  # 0.1.0 … 0.10.0, oldest first


def fake_world(outcomes: dict[str, str], log: list | None = None, delay: float = 0.0):
    """A probe over a known table of verdicts (what the real probe returns for each version)."""
    def probe(version: str) -> Probe:
        if log is not None:
            log.append((version, threading.get_ident()))
        time.sleep(delay)
        verdict = outcomes[version]
        return Probe(version, verdict, {"fails": "shows the signature", "works": "runs cleanly",
                                        "skipped": "fails to import: ImportError: x"}[verdict])
    return probe


def table(first_bad: int, last_bad: int | None = None, skipped=()) -> dict[str, str]:
    last_bad = len(V) - 1 if last_bad is None else last_bad
    return {v: SKIPPED if i in skipped else (FAILS if first_bad <= i <= last_bad else WORKS) for i, v in enumerate(V)}


# -- the search -------------------------------------------------------------------------------------

def test_regression_is_found_with_few_probes():
    log = []
    state = bisect("jax", V, fake_world(table(6), log), anchor=V[-1])
    assert (V[state.last_good], V[state.first_bad]) == ("0.6.0", "0.7.0")
    assert record.summary(state) == "fails since jax 0.7.0; worked in 0.6.0; still fails in 0.10.0, the newest tried"
    assert len(log) <= 6 < len(V)  # a binary search, not a scan


@pytest.mark.parametrize("first_bad", range(1, 10))
def test_every_boundary_position(first_bad):
    for jobs in (1, 3):
        state = bisect("jax", V, fake_world(table(first_bad)), jobs=jobs, anchor=V[-1])
        assert (state.last_good, state.first_bad) == (first_bad - 1, first_bad)


def test_skipped_versions_are_neither_good_nor_bad():
    state = bisect("jax", V, fake_world(table(6, skipped={5, 6})), anchor=V[-1])
    assert V[state.first_bad] == "0.8.0" and V[state.last_good] == "0.5.0"
    assert state.verdict(5) == SKIPPED or state.verdict(6) == SKIPPED
    text = record.summary(state)
    assert text.startswith("fails since jax 0.8.0 (or one of 0.6.0, 0.7.0 between, skipped); worked in 0.5.0")


def test_failure_that_reads_differently_in_older_releases():
    """Older releases fail differently (a message that changed): skipped, and named in the answer."""
    state = bisect("jax", V, fake_world(table(6, skipped=set(range(6)))), anchor=V[-1])
    assert record.summary(state) == ("fails in every jax release from 0.7.0 to 0.10.0; older releases skipped "
                                     "(0.1.0 to 0.6.0, 6 releases; 0.6.0: fails to import: ImportError: x)")


def test_fixed_release_and_still_failing_release():
    state = bisect("jax", V, fake_world(table(2, 5)), anchor="0.4.0")
    assert record.summary(state) == "fails since jax 0.3.0; worked in 0.2.0; fixed in 0.7.0 (last failing: 0.6.0)"
    state = bisect("jax", V, fake_world(table(0)), anchor=V[-1])
    assert record.summary(state) == "fails in every jax release from 0.1.0 to 0.10.0"
    state = bisect("jax", V, fake_world(table(4, 4)), anchor=None)  # found by the middle-first scan
    assert record.summary(state).startswith("fails since jax 0.5.0; worked in 0.4.0; fixed in 0.6.0")


def test_absent_everywhere_and_skipped_everywhere():
    state = bisect("jax", V, fake_world({v: WORKS for v in V}))
    assert record.summary(state) == "the failure shows in none of the 10 jax versions tried (0.1.0 to 0.10.0)"
    state = bisect("jax", V[:3], fake_world({v: SKIPPED for v in V}))
    assert "every one was skipped" in record.summary(state)


def test_known_verdicts_are_not_probed_and_newer_skips_are_named():
    log = []
    known = {"0.10.0": Probe("0.10.0", SKIPPED, "requires Python >=3.12, not Python 3.11")}
    state = bisect("jax", V, fake_world(table(8), log), anchor="0.9.0", known=known)
    assert "0.10.0" not in [v for v, _ in log]
    assert record.summary(state) == ("fails since jax 0.9.0; worked in 0.8.0; newer releases skipped (0.10.0; 0.10.0: "
                                     "requires Python >=3.12, not Python 3.11)")


def test_probes_run_jobs_at_a_time():
    log = []
    bisect("jax", V, fake_world(table(3), log, delay=0.05), jobs=3, anchor=V[-1])
    assert len({thread for _, thread in log}) > 1


def test_spread_and_middle_first():
    assert spread([1, 2, 3, 4, 5], 1) == [3]
    assert spread([1, 2], 3) == [1, 2]
    assert middle_first([0, 1, 2, 3, 4, 5, 6]) == [3, 1, 5, 0, 2, 4, 6]


# -- verdicts from real runs ---------------------------------------------------------------------

def repro_for(script: Path, wanted=None, runs: int = 1) -> Reproducer:
    return Reproducer(script=script, source=script.read_text(), oracle=Crash(), wanted=wanted, runs=runs, timeout=120)


def test_judge_recorded_runs():
    crash = recorded("segfault")
    wanted = Crash().classify(crash)
    repro = repro_for(PROGRAMS / "segfault.py", wanted)
    assert judge([crash], repro)[0] == FAILS
    assert judge([recorded("clean")], repro) == (WORKS, "runs cleanly")
    verdict, detail = judge([recorded("plain_error")], repro)
    assert verdict == SKIPPED and detail.startswith(("fails differently", "fails in another way"))
    flaky = judge([recorded("clean"), crash, recorded("clean")], repro_for(PROGRAMS / "segfault.py", wanted, 3))
    assert flaky == (FAILS, "shows the signature in 1 of 3 runs")


@pytest.mark.slow
def test_probe_runs_with_the_given_interpreter(tmp_path):
    """A real run in a real interpreter: a crash counts, a missing module is a skip, not a verdict."""
    wanted = Crash().classify(recorded("segfault"))
    assert run_in(Path(sys.executable), repro_for(PROGRAMS / "segfault.py", wanted))[0] == FAILS
    missing = tmp_path / "needs_module.py"
    missing.write_text("import jax\nimport no_such_module_anywhere\n")
    verdict, detail = run_in(Path(sys.executable), repro_for(missing, wanted))
    assert (verdict, detail) == (SKIPPED, "fails to import: ModuleNotFoundError: No module named "
                                          "'no_such_module_anywhere'")


# -- the index, ranges and errors, on a local index -------------------------------------------------

def local_index(tmp_path: Path) -> dict:
    """A PEP 503 index in a folder: jax 0.8.0 … 0.10.2 (0.11.0 needs Python 3.12), jaxlib alike."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for name in ("jax", "jaxlib"):
        folder = tmp_path / "simple" / name
        folder.mkdir(parents=True)
        links = []
        for version in ("0.8.0", "0.9.0", "0.10.0rc1", "0.10.1", "0.10.2", "0.11.0"):
            wheel = (f"{name}-{version}-py3-none-any.whl" if name == "jax"
                     else f"{name}-{version}-{tag}-{tag}-manylinux2014_x86_64.whl")
            needs = ' data-requires-python="&gt;=3.12"' if version == "0.11.0" else ""
            links.append(f'<a href="../../files/{wheel}"{needs}>{wheel}</a>')
        (folder / "index.html").write_text("<html><body>" + "\n".join(links) + "</body></html>")
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": (tmp_path / "simple").as_uri(),
            "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": ""}


@pytest.fixture
def offline_index(tmp_path, monkeypatch):
    settings = local_index(tmp_path)
    for k, v in settings.items():
        monkeypatch.setenv(k, v)
    index.pip_settings.cache_clear()
    index.releases.cache_clear()
    yield settings
    index.pip_settings.cache_clear()
    index.releases.cache_clear()


def test_ranges_lists_and_unknown_versions(offline_index):
    assert index.choose_versions("jax", "0.8.0..0.10.2") == ["0.8.0", "0.9.0", "0.10.1", "0.10.2"]
    assert index.choose_versions("jax", "0.10.2,0.9.0") == ["0.9.0", "0.10.2"]
    assert index.choose_versions("jax", "0.10.1..") == ["0.10.1", "0.10.2", "0.11.0"]
    assert index.release("jax", "0.11.0").why_not_installable().startswith("requires Python >=3.12")
    assert index.release("jax", "0.10.2").why_not_installable() == ""
    with pytest.raises(Exception, match=r"jax 0\.10\.3: no such release on the package index"):
        index.choose_versions("jax", "0.9.0..0.10.3")
    with pytest.raises(Exception, match="is newer than"):
        index.choose_versions("jax", "0.10.2..0.9.0")
    with pytest.raises(Exception, match="not a version number"):
        index.choose_versions("jax", "latest")
    with pytest.raises(Exception, match="no such package"):
        index.releases("no-such-package-here")


@pytest.mark.slow
def test_cli_unknown_version_is_one_line(offline_index, tmp_path):
    env = {**os.environ, **offline_index}
    done = reducer_cli("bisect", PROGRAMS / "segfault.py", "--oracle", "crash", "--versions", "0.9.0,0.10.7",
                       "--cache", tmp_path / "cache", env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "jax 0.10.7: no such release on the package index" in done.stderr and "Traceback" not in done.stderr
    done = reducer_cli("bisect", PROGRAMS / "segfault.py", env=env, timeout=120)
    assert done.returncode == 2 and "no signature.json beside it" in done.stderr
    done = reducer_cli("bisect", tmp_path / "nowhere", env=env, timeout=120)
    assert done.returncode == 3 and "no such file or folder" in done.stderr
    offline = {**env, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}  # nothing listens on port 9
    done = reducer_cli("bisect", PROGRAMS / "segfault.py", "--oracle", "crash", env=offline, timeout=120)
    assert done.returncode == 3 and "the package index is unreachable" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_target_of_a_case_checked_with_auto(tmp_path):
    """A case whose oracle is `auto` is judged by its signature's family; a script needs --oracle or signature.json."""
    from reducer.versions.command import target

    case_dir = tmp_path / "case"
    shutil.copytree(next((ROOT / "corpus").glob("adjoint-missing-jax-schur-jvp-*")), case_dir)
    text = (case_dir / "case.toml").read_text()
    (case_dir / "case.toml").write_text(re.sub(r'^oracle = ".*"$', 'oracle = "auto"', text, flags=re.M))
    found = target(case_dir, "auto", "cpu", 60.0, None)
    assert found.repro.oracle.name == "adjoint-missing" and found.repro.wanted.get("op") == "schur"
    assert found.folder == case_dir and found.repro.runs == 1
    out = tmp_path / "flaky"
    out.mkdir()
    shutil.copy(PROGRAMS / "segfault.py", out / "repro.py")
    (out / "signature.json").write_text(json.dumps(Crash().classify(recorded("segfault")).to_dict()))
    record.note_runs(out, 4, 0.5)  # as a reduction of a failure seen in half of its runs leaves it
    assert target(out, "auto", "cpu", 60.0, None).repro.runs == 4
    script = target(PROGRAMS / "segfault.py", "crash", "cpu", 60.0, 2)
    assert script.folder is None and script.repro.wanted is None and script.repro.runs == 2


def test_versions_option_of_corpus_check():
    assert parse_versions_option("jax=0.10.1,0.10.2") == ("jax", "0.10.1,0.10.2")
    with pytest.raises(Exception, match="expected PACKAGE=LIST"):
        parse_versions_option("0.10.1")


# -- the cache --------------------------------------------------------------------------------------

def test_cache_clear_size_and_refusal(tmp_path):
    cache = envmod.Environments(tmp_path / "cache")
    cache.prepare()
    blob = tmp_path / "cache" / "envs" / "a.bin"
    blob.write_bytes(b"x" * 4096)
    os.link(blob, tmp_path / "cache" / "envs" / "b.bin")  # a hard link counts once
    assert 4096 <= cache.size() < 2 * 4096
    assert cache.clear() >= 4096 and not (tmp_path / "cache").exists()
    envmod.Environments(tmp_path / "cache").prepare()
    done = reducer_cli("bisect", "--clear-cache", "--cache", tmp_path / "cache", timeout=120)
    assert done.returncode == 0 and "removed" in done.stderr and not (tmp_path / "cache").exists()
    other = tmp_path / "mine"
    other.mkdir()
    with pytest.raises(Exception, match="not a reducer bisect cache"):
        envmod.Environments(other).clear()
    assert other.is_dir()


def test_installer_reason_in_one_line():
    uv = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of jax==0.10.7 "
          "and you require jax==0.10.7, we can conclude that your requirements are unsatisfiable.\n")
    assert envmod.one_line(uv).startswith("Because there is no version of jax==0.10.7")
    assert envmod.one_line("ERROR: No matching distribution found for jax==9\n") == \
        "ERROR: No matching distribution found for jax==9"


# -- what is written ------------------------------------------------------------------------------

def test_record_goes_into_signature_report_and_case(tmp_path):
    source = next(p for p in sorted((ROOT / "corpus").iterdir()) if (p / "case.toml").is_file())
    case_dir = tmp_path / source.name
    shutil.copytree(source, case_dir)
    (case_dir / "signature.json").write_text(json.dumps(corpus.load_case(case_dir).signature.to_dict()))
    state = bisect("jax", V, fake_world(table(6)), anchor=V[-1])
    rec = record.to_record(state, cache="/cache")
    record.save(case_dir, rec)
    report = (case_dir / "report.md").read_text()
    assert report.count("<summary>Versions: where the bug starts</summary>") == 1 and "Fails since jax 0.7.0; worked in 0.6.0; still fails in 0.10.0, the newest tried." in report
    assert report.index("<summary>Versions: where the bug starts</summary>") < report.index("<summary>Environment</summary>")
    assert json.loads((case_dir / "signature.json").read_text())["versions"]["jax"]["first_failing"] == "0.7.0"
    (case_dir / "signature.json").unlink()
    case = corpus.load_case(case_dir)
    assert case.bisect["jax"]["last_working"] == "0.6.0"
    again = record.stored(case_dir)["jax"]
    assert again["tried"] == [{k: t[k] for k in ("version", "verdict", "detail")} for t in rec["tried"]]
    record.save(case_dir, {**rec, "package": "enzyme-ad", "summary": "fails in every enzyme-ad release tried"})
    report = (case_dir / "report.md").read_text()
    assert report.count("<summary>Versions: where the bug starts</summary>") == 1 and "Fails in every enzyme-ad release tried." in report


def test_corpus_add_keeps_the_answer(tmp_path):
    """A bisected reduce output folder taken into the corpus brings its answer into case.toml."""
    source = next((ROOT / "corpus").glob("adjoint-missing-jax-schur-jvp-*"))
    out = tmp_path / "reduced"
    out.mkdir()
    for name in ("repro.py", "report.md"):
        shutil.copy(source / name, out / name)
    (out / "signature.json").write_text(json.dumps(corpus.load_case(source).signature.to_dict()))
    record.save(out, record.to_record(bisect("jax", V, fake_world(table(5)), anchor=V[-1])))
    case = corpus.add(out, tmp_path / "corpus")
    assert corpus.load_case(case.folder).bisect["jax"]["first_failing"] == "0.6.0"
    assert "<summary>Versions: where the bug starts</summary>" in (case.folder / "report.md").read_text()


@pytest.mark.slow
def test_report_refresh_keeps_the_versions_section(tmp_path):
    """`reducer report` rewrites report.md from a fresh run; the bisect's answer stays in it."""
    case_dir = tmp_path / "case"
    shutil.copytree(next((ROOT / "corpus").glob("adjoint-missing-jax-schur-jvp-*")), case_dir)
    for leftover in ("signature.json",):
        (case_dir / leftover).unlink(missing_ok=True)
    state = bisect("jax", V, fake_world(table(3)), anchor=V[-1])
    record.save(case_dir, record.to_record(state))
    corpus.refresh_report(case_dir, timeout=120)
    report = (case_dir / "report.md").read_text()
    assert report.count("<summary>Versions: where the bug starts</summary>") == 1 and "Fails since jax 0.4.0; worked in 0.3.0" in report


def test_corpus_versions_table_and_junit():
    from reducer.corpus import versions as corpus_versions

    cases = corpus.load_corpus(ROOT / "corpus")[:2]
    results = {cases[0].id: {"0.10.1": ("reproduces", "shows the signature"), "0.10.2": ("fixed", "runs cleanly")},
               cases[1].id: {"0.10.1": ("skipped", "cannot install: x"), "0.10.2": ("changed", "fails differently: y")}}
    text = corpus_versions.table(cases, "jax", ["0.10.1", "0.10.2"], results)
    row = next(line for line in text.splitlines() if line.startswith(cases[0].folder.name))
    assert row.split()[-2:] == ["reproduces", "fixed"] and "jax 0.10.2" in text.splitlines()[0]
    main = corpus.junit_xml([corpus.Outcome(c, "reproduces", "", 1.0) for c in cases])
    xml = corpus_versions.junit_xml(main, cases, "jax", ["0.10.1", "0.10.2"], results)
    import xml.etree.ElementTree as ET

    root = ET.fromstring(xml.split("?>", 1)[1])
    suites = {s.get("name"): s for s in root}
    assert set(suites) == {"reducer corpus", "reducer corpus on jax 0.10.1", "reducer corpus on jax 0.10.2"}
    assert suites["reducer corpus on jax 0.10.2"].get("failures") == "2"
    assert suites["reducer corpus on jax 0.10.1"].get("skipped") == "1"
    assert corpus_versions.status_of(Probe("1", SKIPPED, "fails differently: crash")) == "changed"
    assert corpus_versions.status_of(Probe("1", SKIPPED, "fails to import: ImportError: x")) == "skipped"


@pytest.mark.skipif(not HAS_ENZYME, reason="enzyme-ad is not installed")
def test_what_a_reproducer_needs_installed():
    from reducer.versions.packages import imported_distributions

    source = "import os\nimport jax.numpy as jnp\nfrom enzyme_ad.jax import enzyme_jax_ir\nimport reducer\n"
    assert imported_distributions(source) == ["enzyme-ad", "jax", "jaxlib"]
    assert imported_distributions("import numpy as np\n") == ["numpy"]


# -- real installs --------------------------------------------------------------------------------

def index_reachable() -> bool:
    index.pip_settings.cache_clear()
    url = index.pip_settings().index_url.rstrip("/") + "/jax/"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5):
            return True
    except OSError:
        return False


network = pytest.mark.network  # and slow: each installs (the first time) and runs several releases


@pytest.fixture
def online():
    """Skip (in a few seconds at most) when the package index cannot be reached, or REDUCER_OFFLINE is set."""
    if os.environ.get("REDUCER_OFFLINE") or not index_reachable():
        pytest.skip("the package index is not reachable (or REDUCER_OFFLINE is set)")


@network
@pytest.mark.slow
def test_rank7_segfault_bisects_to_jax_0_10_2(tmp_path, online):
    """jax-ml/jax#40412: the rank-7 reduction under jit segfaults since jax 0.10.2; 0.10.1 runs it."""
    script = tmp_path / "rank7.py"
    shutil.copy(PROGRAMS / "rank7_sum_segfault.py", script)
    done = reducer_cli("bisect", script, "--oracle", "crash", "--versions", "0.10.0..0.10.2", "--json",
                       timeout=1800)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["last_working"], answer["first_failing"]) == ("0.10.1", "0.10.2"), answer
    assert answer["summary"] == "fails since jax 0.10.2; worked in 0.10.1"


@network
@pytest.mark.slow
def test_enzyme_releases_bisected_with_incompatible_ones_skipped(tmp_path, online):
    case = next((ROOT / "corpus").glob("adjoint-missing-enzyme-stablehlo-tan-*"))
    shutil.copytree(case, tmp_path / case.name)
    # three releases keep the installs bounded (about four environments on a cold cache); the whole range,
    # 0.0.6..0.0.16, is recorded in the corpus case itself
    done = reducer_cli("bisect", tmp_path / case.name, "--package", "enzyme-ad", "--versions", "0.0.8..0.0.10",
                       "--json", timeout=3000)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    tried = {t["version"]: t for t in answer["tried"]}
    assert tried["0.0.10"]["verdict"] == SKIPPED and "requires Python ==3.10" in tried["0.0.10"]["detail"]
    # enzyme-ad 0.0.8 (with the jax of its time, 0.4.31) differentiates tan; 0.0.9 has no adjoint for it
    assert (answer["last_working"], answer["first_failing"]) == ("0.0.8", "0.0.9"), answer["summary"]
    assert "jax==0.4.31" in tried["0.0.8"]["environment"]
    assert "<summary>Versions: where the bug starts</summary>" in (tmp_path / case.name / "report.md").read_text()


@pytest.mark.slow
@network
def test_companions_follow_the_version_under_test(tmp_path, online):
    """enzyme-ad brings the jax its metadata allows, with jaxlib at the same version; pip resolves the same."""
    from reducer.versions.packages import pins_for

    cache = envmod.Environments(tmp_path / "cache")
    pins, why = pins_for("enzyme-ad", "0.0.16", ["enzyme-ad", "jax", "jaxlib"], cache)
    assert pins and pins["enzyme-ad"] == "0.0.16" and pins["jax"] == pins["jaxlib"], why
    pins, why = pins_for("jax", "0.10.1", ["jax", "jaxlib"], cache)
    assert (pins["jax"], pins["jaxlib"]) == ("0.10.1", "0.10.1"), why
    by_pip = envmod.Environments(tmp_path / "pip-cache", use_uv=False).resolve(["jax==0.10.1", "jaxlib==0.10.1"])[0]
    assert by_pip and by_pip["jaxlib"] == "0.10.1" and by_pip["jax"] == "0.10.1"
