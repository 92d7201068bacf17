"""The regression corpus: every case still shows its expected status (one test per case), and the
corpus commands (`corpus check`, `corpus add`, `report`) behave as documented, bad cases included."""
import json
import re
import shutil
import tomllib
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import HAS_ENZYME, TESTS, reducer_cli
from oracles import kinds
from oracles.base import Signature
from reducer import corpus, errors, filing

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
CASES = corpus.load_corpus(CORPUS) if CORPUS.is_dir() else []  # no corpus fails the count test below


def uses_enzyme(case: corpus.Case) -> bool:
    return "enzyme_ad" in case.repro.read_text()


def runnable(case: corpus.Case) -> bool:
    return HAS_ENZYME or not uses_enzyme(case)


def case_param(case):
    return pytest.param(case, id=case.folder.name,
                        marks=pytest.mark.skipif(not runnable(case), reason="enzyme-ad is not installed"))


@pytest.fixture(scope="session")
def corpus_outcomes(request):
    """Check the selected cases two at a time, once for the session; each test waits for its own."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_case_shows_its_expected_status"
                and runnable(item.callspec.params["case"])]
    pool = ThreadPoolExecutor(max_workers=2)
    yield {case.folder.name: pool.submit(corpus.check_case, case) for case in selected}
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.slow
@pytest.mark.parametrize("case", [case_param(c) for c in CASES])
def test_case_shows_its_expected_status(case, corpus_outcomes):
    outcome = corpus_outcomes[case.folder.name].result()
    assert outcome.status == case.expected, (
        f"{case.id}: expected {corpus.LABELS[case.expected]}, now {outcome.label}: {outcome.detail}")


@pytest.mark.slow
def test_every_case_is_judged_on_ray_as_it_is_here(corpus_outcomes):
    """Where a case runs never changes what it is judged to be: each case checked as a task of a local
    Ray instance shows the status and the failure the local check shows (a module case run as a
    script was once a wrong result read as an own check, and a segfault that lost its phase)."""
    pytest.importorskip("ray", reason="the test extra installs ray")
    from reducer.corpus.ray import check_cases_on_ray

    cases = [case for case in CASES if runnable(case)]
    on_ray = check_cases_on_ray(cases, None)
    alone = {o.case.folder.name: o for o in corpus.check_all([c for c in cases if c.folder.name not in corpus_outcomes])}
    differ = []
    for case, there in zip(cases, on_ray):
        here = alone.get(case.folder.name) or corpus_outcomes[case.folder.name].result()
        if (here.status, here.seen and here.seen.family) != (there.status, there.seen and there.seen.family):
            differ.append(f"{case.id}: here {here.label} ({here.seen}), on Ray {there.label} ({there.seen})")
    assert len(on_ray) == len(cases) >= 20 and not differ, "\n".join(differ)


def test_corpus_holds_at_least_20_distinct_real_bugs():
    assert CORPUS.is_dir(), f"the regression corpus is missing: {CORPUS}"
    # a program's own check failing names no bug (`kinds.identical`): two such cases differ by what they are
    signatures = {(c.signature.family, c.signature.fields, c.title if kinds.own_check(c.signature) else "")
                  for c in CASES}
    assert len(CASES) >= 20 and len(signatures) == len(CASES)
    for case in CASES:
        named = corpus.case_id(case.signature)
        assert case.folder.name == case.id
        assert case.id == named or kinds.own_check(case.signature) and re.fullmatch(re.escape(named) + r"-\d+", case.id)
        assert case.versions.get("jax") and case.versions.get("jaxlib") and case.date
        assert case.origin.get("script")
        if corpus.module_only(case.folder):  # reduced from a module: sizes in operations
            assert case.origin["original_ops"] > case.origin["reduced_ops"]
        else:
            assert case.origin.get("original_tokens", 0) > case.origin["reduced_tokens"]
        if case.origin.get("original"):
            assert (case.folder / case.origin["original"]).is_file()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.folder.name) for c in CASES])
def test_report_is_ready_for_the_tracker(case):
    report = (case.folder / "report.md").read_text()
    code = corpus.strip_header(case.repro.read_text()).strip()
    assert report.startswith(f"# {case.title}\n")
    if corpus.module_only(case.folder):  # the runner, with the header that says how to run it
        assert f"{code}\n```" in report, "the report's runner is not the case's repro.py"
    else:
        assert f"```python\n{code}\n```" in report, "the report's reproducer is not the case's repro.py"
    happens = report.split("## What happens", 1)[1].split("## What was expected", 1)[0]
    assert len(happens.strip().strip("`").strip()) > 20 and "(no output)" not in happens
    env = report.split("<summary>Environment</summary>", 1)[1]
    assert "jax:    " in env and "jaxlib: " in env and "python: " in env  # jax.print_environment_info()
    assert str(case.signature) in report
    if corpus.module_only(case.folder):  # reduced from a module: the module itself, as its maintainers run it
        assert "```mlir" in report and (case.folder / "repro.mlir").read_text().strip() in report
        if not (case.folder / "pipeline.txt").is_file():  # XLA alone: sent to XLA, not to Enzyme-JAX
            assert "openxla/xla" in report and "enzymexlamlir-opt" not in report
    elif (case.folder / "repro_xla.py").is_file():  # a script's module, as XLA compiled it, sent to XLA
        assert "<summary>The module XLA compiled for it (repro.mlir)</summary>" in report and "openxla/xla" in report
    elif (case.folder / "repro.mlir").is_file():  # what Enzyme-JAX's maintainers ask for
        assert "<summary>The module before AD, and its pipeline</summary>" in report and (case.folder / "pipeline.txt").read_text().strip() in report
    assert "/tmp/" not in report and str(Path.home()) + "/" not in report
    lines = report.splitlines()
    first_screen = lines[:next(k for k, line in enumerate(lines) if line.startswith("<details>"))]
    assert len(first_screen) <= 80 and "## Where to file" in first_screen
    top = "\n".join(line for line in first_screen if not line.startswith("- [")).replace(case.title, "")
    assert not re.search(r"<q>|<aval>|\bN\b", top), "a masked placeholder outside the signature line"
    filed = filing.read(report)
    assert filed.repo and filed.new_issue.startswith(f"https://github.com/{filed.repo}/issues/new?")


# -- check: fixed, changed, JUnit --------------------------------------------------------------------

def while_loop_case() -> corpus.Case:
    for case in CASES:
        if case.signature.get("op") == "while_loop" and case.signature.get("source") == "jax":
            return case
    pytest.fail("the corpus has lost its JAX while_loop case, which the corpus command tests copy")


def copy_case(case: corpus.Case, dest: Path, edit=None, expected=None) -> Path:
    shutil.copytree(case.folder, dest)
    if edit:
        old, new = edit
        text = (dest / "repro.py").read_text()
        assert old in text
        (dest / "repro.py").write_text(text.replace(old, new))
    if expected:
        moved = corpus.load_case(dest)
        moved.expected = expected
        moved.save()
    return dest


@pytest.mark.slow
def test_check_reports_fixed_and_changed(tmp_path):
    case = while_loop_case()
    root = tmp_path / "corpus"
    # fixed: the gradient is no longer taken, so the program runs cleanly
    copy_case(case, root / "a-fixed", ("jax.grad(", "("))
    # changed: vmap instead of grad, so the program fails, with another error
    copy_case(case, root / "b-changed", ("jax.grad(", "jax.vmap("))
    # a case kept after its fix: expected fixed, and fixed
    copy_case(case, root / "c-expected-fixed", ("jax.grad(", "("), expected=corpus.FIXED)
    junit = tmp_path / "junit.xml"
    done = reducer_cli("corpus", "check", "--corpus", root, "--junit", junit)
    assert done.returncode == 1, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith(("a-", "b-", "c-"))}
    assert "fixed  <-- differs" in rows["a-fixed"] and "runs cleanly" in rows["a-fixed"]
    assert "changed  <-- differs" in rows["b-changed"] and "fails differently: jax-error: library=jax type=ValueError" in rows["b-changed"]
    assert "<-- differs" not in rows["c-expected-fixed"]
    assert "3 cases: 0 still reproduce, 2 fixed, 1 changed; 2 differ from the expected status" in done.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    failures = {tc.get("name"): tc.find("failure") for tc in suite.iter("testcase")}
    assert failures["a-fixed"].get("message").startswith("expected still reproduces, got fixed: runs cleanly [signature: ")
    assert failures["a-fixed"].get("message").endswith(f"report: {root / 'a-fixed' / 'report.md'}]")
    assert failures["b-changed"].get("message").startswith("expected still reproduces, got changed: fails differently")
    assert failures["c-expected-fixed"] is None


@pytest.mark.slow
def test_a_reproducer_that_fails_without_the_bug_is_flagged(tmp_path):
    """A wrong-result case reduced before candidates had to run through with op-by-op evaluation: it
    still shows the miscompile, but its `assert jnp.allclose(1.0, …)` fails with `jit` off too, so a
    maintainer who fixed the bug would still see it fail. `corpus check` says so."""
    root = tmp_path / "corpus"
    shutil.copytree(TESTS / "data" / "unconditional", root)
    junit = tmp_path / "junit.xml"
    done = reducer_cli("corpus", "check", "--corpus", root, "--junit", junit)
    assert done.returncode == 1, done.stderr
    assert "fails without the bug  <-- differs" in done.stdout
    assert "still fails with `jit` replaced by op-by-op evaluation" in done.stdout
    assert "1 cases: 0 still reproduce, 0 fixed, 0 changed, 1 fail without the bug" in done.stdout
    failure = next(ET.parse(junit).getroot().iter("failure"))
    assert failure.get("message").startswith("expected still reproduces, got fails without the bug")


@pytest.mark.slow
def test_a_case_s_own_fix_is_taken_away_again(tmp_path):
    """A case whose family names no fix records the one its reduction held candidates to (`fix`):
    `gammainc` checked against SciPy's moved by 1 fails as the case does, and with `gammainc` computed
    by SciPy's too, so `corpus check` says it fails without the bug. Where the family names the fix
    (`jnp.modf`'s NaN, `fix=call-by-namesake`), the same move is another failure already."""
    modf = next(case for case in CASES if case.fixed_by == "numpy" and "jnp.modf" in case.title)
    folder = tmp_path / modf.id
    shutil.copytree(modf.folder, folder)
    repro = (folder / "repro.py").read_text()
    assert "numpy.modf(1.0)" in repro and modf.signature.get("fix") == "call-by-namesake"
    (folder / "repro.py").write_text(repro.replace("numpy.modf(1.0)", "numpy.modf(2.5)"))
    assert corpus.check_case(corpus.load_case(folder)).status == corpus.CHANGED
    gammainc = next(case for case in CASES if case.fixed_by == "numpy" and "gammainc" in case.title)
    folder = tmp_path / gammainc.id
    shutil.copytree(gammainc.folder, folder)
    repro = (folder / "repro.py").read_text()
    assert "ss.gammainc(a, x), 0.001" in repro
    (folder / "repro.py").write_text(repro.replace("ss.gammainc(a, x), 0.001", "ss.gammainc(a, x) + 1.0, 0.001"))
    case = corpus.load_case(folder)
    assert corpus.check_case(case).status == corpus.UNCONDITIONAL
    case.fixed_by = ""
    assert corpus.check_case(case).status == corpus.REPRODUCES  # the same failure, but not because of the bug


def test_a_case_names_only_a_fix_the_counterfactual_has(tmp_path):
    folder = tmp_path / "case"
    shutil.copytree(CASES[0].folder, folder)
    toml = (folder / "case.toml").read_text()
    (folder / "case.toml").write_text(toml.replace("\n[signature]", '\nfixed_by = "magic"\n\n[signature]', 1))
    with pytest.raises(errors.ReducerError, match="no fix 'magic'"):
        corpus.load_case(folder)


def test_junit_names_each_case_with_its_signature_and_report():
    """`corpus check --junit`: a testcase per case, named by it; a failing one's message carries the
    signature and its report.md's path, which every case also has as properties and in system-out."""
    from reducer.cli_corpus import junit_report

    first, second = CASES[0], CASES[1]
    outcomes = [corpus.Outcome(first, corpus.FIXED, "runs cleanly", 2.0),
                corpus.Outcome(second, corpus.REPRODUCES, str(second.signature), 1.0, second.signature)]
    suite = ET.fromstring(junit_report(outcomes))
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert list(cases) == [first.folder.name, second.folder.name]
    report = str(first.folder / "report.md")
    failure = cases[first.folder.name].find("failure")
    assert failure.get("message") == (f"expected still reproduces, got fixed: runs cleanly "
                                      f"[signature: {first.signature}; report: {report}]")
    assert cases[second.folder.name].find("failure") is None
    for tc, case in zip(cases.values(), (first, second)):
        props = {p.get("name"): p.get("value") for p in tc.find("properties")}
        assert props == {"case": case.id, "signature": str(case.signature), "report": str(case.folder / "report.md")}
        assert tc[0].tag == "properties"
        assert f"signature: {case.signature}\nreport: {case.folder / 'report.md'}" in tc.find("system-out").text


@pytest.mark.slow
def test_check_named_case_that_still_reproduces_exits_0(tmp_path):
    case = while_loop_case()
    copy_case(case, tmp_path / "corpus" / case.id)
    done = reducer_cli("corpus", "check", case.id, "--corpus", tmp_path / "corpus")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 cases: 1 still reproduce, 0 fixed, 0 changed; 0 differ" in done.stdout


def good_toml(root: Path) -> str:
    return (root / "good" / "case.toml").read_text()


@pytest.mark.parametrize("breakage, words", [
    ("missing", "not a corpus case: no case.toml"),
    ('id = "unterminated\n', "broken case.toml"),
    ('id = "x"\n', "missing key 'signature'"),
    ('id = "x"\nexpected = "gone"\n[signature]\nfamily = "crash"\n', "expected must be one of"),
    ("bad-oracle", "bad regular expression"),
    ("empty-repro", "unusable repro.py: the file is empty"),
])
def test_broken_case_one_line_and_bad_case_status(tmp_path, breakage, words):
    root = tmp_path / "corpus"
    copy_case(while_loop_case(), root / "good")
    (root / "broken").mkdir()
    shutil.copy(root / "good" / "repro.py", root / "broken" / "repro.py")
    if breakage == "bad-oracle":
        (root / "broken" / "case.toml").write_text(good_toml(root).replace('oracle = "adjoint-missing"',
                                                                           'oracle = "regex:("'))
    elif breakage == "empty-repro":
        (root / "broken" / "case.toml").write_text(good_toml(root))
        (root / "broken" / "repro.py").write_text("")
    elif breakage != "missing":
        (root / "broken" / "case.toml").write_text(breakage)
    done = reducer_cli("corpus", "check", "--corpus", root)
    assert done.returncode == errors.BAD_CASE
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not done.stdout, "a case was checked before the corpus was found broken"


# -- add ---------------------------------------------------------------------------------------------

def reduce_output_from(case: corpus.Case, out: Path) -> Path:
    """A `reducer reduce` output folder holding what the case was made from."""
    out.mkdir(parents=True)
    for name in ("repro.py", "report.md"):
        shutil.copy(case.folder / name, out / name)
    (out / "signature.json").write_text(case.signature.to_json() + "\n")
    (out / "env.json").write_text(json.dumps({"packages": {"jax": "0.10.2", "jaxlib": "0.10.2"}, "python": "3.11.7"}))
    return out


def test_add_refuses_a_duplicate_signature_unless_forced(tmp_path):
    case = while_loop_case()
    out = reduce_output_from(case, tmp_path / "reduced")
    original = case.folder / "original.py"
    root = tmp_path / "corpus"
    done = reducer_cli("corpus", "add", out, "--corpus", root, "--original", original, "--title", "While loops")
    assert done.returncode == 0, done.stderr
    added = corpus.load_case(root / case.id)
    assert added.signature == case.signature and added.title == "While loops"
    assert added.oracle == "adjoint-missing" and added.expected == corpus.REPRODUCES
    assert added.versions == {"jax": "0.10.2", "jaxlib": "0.10.2", "python": "3.11.7"}
    assert (root / case.id / "original.py").read_text() == original.read_text()
    assert (root / case.id / "report.md").read_text().startswith("# While loops\n")
    again = reducer_cli("corpus", "add", out, "--corpus", root)
    assert again.returncode == errors.DUPLICATE_CASE
    assert "already has a case with this signature" in again.stderr and "--force" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and "Traceback" not in again.stderr
    forced = reducer_cli("corpus", "add", out, "--corpus", root, "--force")
    assert forced.returncode == 0, forced.stderr
    assert corpus.load_case(root / f"{case.id}-2").signature == case.signature


def test_add_refuses_a_title_of_several_lines_and_writes_nothing(tmp_path):
    """A title is the reproducer's first comment line: a second line would be code, and break it."""
    case = while_loop_case()
    out = reduce_output_from(case, tmp_path / "reduced")
    root = tmp_path / "corpus"
    done = reducer_cli("corpus", "add", out, "--corpus", root, "--title", "While loops\nfail under grad")
    assert done.returncode == errors.USAGE and "--title must be one line" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not root.exists() or not any(root.iterdir())


def test_add_needs_a_reduce_output_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    done = reducer_cli("corpus", "add", tmp_path / "empty", "--corpus", tmp_path / "corpus")
    assert done.returncode == errors.NOT_FOUND and "not a `reducer reduce` output folder" in done.stderr


# -- report ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_report_rewrites_the_report_from_a_fresh_run(tmp_path):
    case = while_loop_case()
    folder = copy_case(case, tmp_path / case.id)
    (folder / "report.md").unlink()
    done = reducer_cli("report", folder)
    assert done.returncode == 0, done.stderr
    assert "still reproduces" in done.stdout
    report = (folder / "report.md").read_text()
    assert report.startswith(f"# {case.title}\n")
    assert "Reverse-mode differentiation does not work for lax.while_loop" in report
    assert "re-run by `reducer report`" in report and "jaxlib: 0.10.2" in report
    assert str(tmp_path) not in report


# -- the pieces ----------------------------------------------------------------------------------------

def test_toml_writer_round_trips():
    data = {"id": "a", "n": 3, "x": 1.5, "ok": True, "levels": ["source", "mlir"],
            "signature": {"family": "regex", "fields": {"pattern": 'a "quoted" \\d+\tand\nnewline é',
                                                        "program-exit": "x", "with.dot": "y"}}}
    assert tomllib.loads(corpus.dump_toml(data)) == data


def test_case_id_is_stable_and_readable():
    a = Signature("adjoint-missing", (("source", "enzyme"), ("op", "chlo.top_k")), "t")
    b = Signature("adjoint-missing", (("source", "enzyme"), ("op", "chlo.next_after")), "t")
    assert corpus.case_id(a) == corpus.case_id(Signature(a.family, a.fields, "another title"))
    assert corpus.case_id(a).startswith("adjoint-missing-enzyme-chlo-top-k-") and corpus.case_id(a) != corpus.case_id(b)


@pytest.mark.slow
def test_report_keeps_the_module_before_ad_and_the_pipeline(tmp_path):
    with_ir = [c for c in CASES if (c.folder / "repro.mlir").is_file()]
    assert with_ir, "the corpus has no case where the IR level ran"
    case = next((c for c in with_ir if runnable(c)), None)
    if case is None:
        pytest.skip("enzyme-ad is not installed")  # every such case runs Enzyme-JAX
    folder = copy_case(case, tmp_path / case.id)
    (folder / "report.md").unlink()
    done = reducer_cli("report", folder)
    assert done.returncode == 0, done.stderr
    report = (folder / "report.md").read_text()
    module = report.split("<summary>The module before AD, and its pipeline</summary>", 1)[1].split("<summary>Environment</summary>", 1)[0]
    assert "func.func @main" in module and (folder / "pipeline.txt").read_text().strip() in module
    assert "python repro_mlir.py" in module
