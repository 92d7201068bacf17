"""Filing in one step (reducer/filing.py): every report says whose bug it is, and gives the owning
tracker's new-issue link (title and body filled in, within what a link carries) and a search link;
the links are run through a URL parser. The report's first screen ends where its collapsed sections
(<details>) begin."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from oracles.base import Signature
from reducer import bug_report, counterfactual, filing
from reducer.levels.mlir import module_report
from reducer.levels.mlir.run_module import ENZYME, XLA

SUMMARY = bug_report.ReductionSummary("train.py", 400, 40, 30.0, 100, 10, 5, "yes (3/3 runs)")
ADJOINT = Signature("adjoint-missing", (("source", "enzyme"), ("op", "stablehlo.tan")),
                    "Enzyme-JAX: no adjoint for `stablehlo.tan`")
EXCERPT = "could not compute the adjoint for this operation %0 = \"stablehlo.tan\"(%arg0)"


def parts(link: str) -> tuple[str, dict]:
    url = urlparse(link)
    assert (url.scheme, url.netloc) == ("https", "github.com")
    return url.path, {k: v[0] for k, v in parse_qs(url.query).items()}


def report(sig: Signature, excerpt: str = EXCERPT, code: str = "import jax\n", **kw) -> str:
    return bug_report.report(code, sig, excerpt, {}, SUMMARY, **kw)


def test_a_report_files_itself_with_the_project_that_owns_the_bug():
    text = report(ADJOINT)
    found = filing.read(text)
    assert (found.project, found.repo) == ("Enzyme-JAX", "EnzymeAD/Enzyme-JAX")
    path, query = parts(found.new_issue)
    assert path == "/EnzymeAD/Enzyme-JAX/issues/new"
    assert query["title"] == "Enzyme-JAX: no adjoint for `stablehlo.tan`"
    assert query["body"].startswith("Differentiating the program") and "```python\nimport jax\n```" in query["body"]
    assert "<summary>Environment</summary>" in query["body"]  # short enough to carry the whole report
    path, query = parts(found.search)
    assert path == "/EnzymeAD/Enzyme-JAX/issues" and query["q"] == "is:issue stablehlo.tan"


def test_the_first_screen_ends_where_the_collapsed_sections_begin():
    text = report(ADJOINT, mlir="module {\n}\n", pipeline="enzyme-wrap", versions="## Versions\n\nFails since 0.0.9.\n")
    lines = text.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("<details>")))
    assert first <= 80 and "## Where to file" in lines[:first]
    summaries = [line for line in lines if line.startswith("<details>")]
    assert summaries == ["<details><summary>The module before AD, and its pipeline</summary>",
                         "<details><summary>Versions: where the bug starts</summary>",
                         "<details><summary>Environment</summary>", "<details><summary>How this reproducer was made</summary>"]
    assert lines.count("</details>") == 4 and "## Versions" not in lines


def test_a_reproducer_longer_than_a_screen_is_attached_collapsed_and_the_first_screen_stays_a_screen():
    """A reduction stopped short (an Enzyme case beside a second load: 684 tokens, 78 lines) made a
    report of 107 lines above its collapsed sections."""
    code = "\n".join(f"x{k} = jax.numpy.ones(3)" for k in range(78)) + "\n"
    lines = report(ADJOINT, code=code).splitlines()
    first = lines.index(next(line for line in lines if line.startswith("<details>")))
    assert first <= 80 and "## Where to file" in lines[:first] and "x0 = jax.numpy.ones(3)" not in lines[:first]
    assert "78 lines long" in "\n".join(lines[:first])
    assert lines[first] == "<details><summary>repro.py (78 lines)</summary>" and "x77 = jax.numpy.ones(3)" in lines
    short = report(ADJOINT, code="import jax\nx = jax.numpy.ones(3)\n").splitlines()
    assert "x = jax.numpy.ones(3)" in short[:short.index("## What happens")]


def test_a_body_longer_than_a_link_carries_is_cut_and_says_so():
    code = "\n".join(f"x{k} = jax.numpy.ones(3)  # a line of a long reproducer" for k in range(400)) + "\n"
    found = filing.read(report(ADJOINT, code=code))
    assert len(found.new_issue) <= filing.MAX_URL
    _, query = parts(found.new_issue)
    assert query["body"].endswith(filing.REST) and query["body"].startswith("Differentiating")


def test_each_family_goes_to_its_own_tracker():
    owners = {
        Signature("adjoint-missing", (("source", "jax"), ("rule", "jvp"), ("op", "schur"))): "jax-ml/jax",
        Signature("pipeline-error", (("message", "x"),)): "EnzymeAD/Enzyme-JAX",
        Signature("activity-mismatch", (("kind", "numeric"), ("op", "digamma"))): "EnzymeAD/Enzyme-JAX",
        Signature("wrong-result", (("op", "sub"),)): "openxla/xla",
        Signature("crash", (("how", "signal"), ("detail", "SIGSEGV in jax/_src/interpreters/pxla.py:__call__"))):
            "openxla/xla",
        Signature("crash", (("how", "internal-error"), ("detail", "AttributeError in flax/linen/module.py:x"))):
            "google/flax",
        Signature("crash", (("how", "signal"), ("detail", "SIGSEGV in enzyme_ad/jax/primitives.py:lowering"))):
            "EnzymeAD/Enzyme-JAX",
        Signature("crash", (("how", "signal"), ("detail", "SIGSEGV in ctypes/__init__.py:string_at"))): None,
        Signature("crash", (("how", "xla-status"), ("detail", "INTERNAL: x"))): "openxla/xla",
        Signature("jax-error", (("library", "optax"), ("type", "TypeError"))): "google-deepmind/optax",
        Signature("jax-error", (("library", "jax"), ("type", "TypeError"))): "jax-ml/jax",
    }
    for sig, repo in owners.items():
        assert filing.read(report(sig)).repo == repo, sig


def test_a_value_bug_of_the_program_s_own_code_has_no_tracker_and_says_what_fixed_it():
    nan = Signature("nonfinite", (("value", "nan"), ("in", "grad"), ("op", "sqrt"), ("fix", "inner-where")))
    text = report(nan)
    found = filing.read(text)
    assert found.repo is None and found.new_issue is None and "program's own code" in found.project
    assert "`sqrt` evaluated at a safe point" in text.split("## Where to file")[1]
    rises = Signature("own-check", (("type", "AssertionError"), ("check", "assert"), ("reads", "order")))
    text = report(rises, fixed_by="Optax's learning rates taken positive", owner="program")
    assert filing.read(text).repo is None and "With Optax's learning rates taken positive, the" in text
    enzyme = report(rises, fixed_by="Enzyme-JAX's derivative replaced by JAX's AD", owner="enzyme-jax")
    assert filing.read(enzyme).repo == "EnzymeAD/Enzyme-JAX"
    nan_check = Signature("own-check", (("type", "AssertionError"), ("check", "raise"), ("reads", "nonfinite")))
    text = report(nan_check, fixed_by=counterfactual.WHAT["nan-check"], owner=counterfactual.OWNERS["nan-check"],
                  expected=counterfactual.EXPECTED["nan-check"])
    assert filing.read(text).repo == "jax-ml/jax"
    expected = text.split("## What was expected")[1].split("##")[0]
    assert "raises `FloatingPointError`" in expected and "mathematics" not in expected


def test_the_report_says_the_message_as_printed_not_masked():
    sig = Signature("jax-error", (("library", "jaxlib"), ("type", "NotImplementedError"),
                                  ("raised-in", "jaxlib/lapack.py:build"), ("message", "Unsupported dtype <q>")),
                    "jaxlib: `NotImplementedError` raised in `jaxlib/lapack.py:build`")
    text = report(sig, excerpt="NotImplementedError: Unsupported dtype bfloat16.")
    top = text.split("<details>")[0]
    assert "Unsupported dtype bfloat16." in top and "<q>" not in top
    own = Signature("own-check", (("type", "AssertionError"), ("check", "raise"), ("reads", "nonfinite"),
                                  ("message", "a NaN got through: <array>")))
    excerpt = ("    raise AssertionError(f'a NaN got through: {value}')\n"
               "AssertionError: a NaN got through: [nan nan]\n")
    assert bug_report.as_printed(own, excerpt) == "a NaN got through: [nan nan]"  # not the source line's f-string


def test_a_module_report_goes_to_xla_or_enzyme_jax_by_what_ran_it():
    summary = module_report.ModuleSummary("m.mlir", XLA, 10, 2, 0, 0, 5.0, 20, 3, 1, "yes")
    crash = Signature("crash", (("how", "signal"), ("detail", "SIGSEGV in x")), "XLA: SIGSEGV")
    text = module_report.report("module {\n}\n", None, "print(1)\n", crash, "Fatal Python error", {}, summary)
    assert filing.read(text).repo == "openxla/xla"
    assert text.splitlines().index("<details><summary>Environment</summary>") <= 80
    enzyme = module_report.ModuleSummary("m.mlir", ENZYME, 10, 2, 3, 1, 5.0, 20, 3, 1, "yes")
    text = module_report.report("module {\n}\n", "enzyme-wrap", "print(1)\n", ADJOINT, EXCERPT, {}, enzyme)
    assert filing.read(text).repo == "EnzymeAD/Enzyme-JAX"
    made = module_report.made_lines(text)
    assert made[0].startswith("Reduced automatically") and "</details>" not in made


def test_what_happens_reads_as_a_run_of_repro_py_not_of_the_tools_runner():
    printed = ('Traceback (most recent call last):\n'
               '  File "<frozen runpy>", line 98, in _run_module_code\n'
               '  File "/somewhere/reducer/harness.py", line 196, in _run_main\n'
               '    exec(code, namespace)\n'
               '  File "gain.py", line 2, in <module>\n'
               '    assert jnp.isfinite(g)\n'
               'AssertionError')
    shown = bug_report.as_run_of_repro(printed, "gain.py", 6)
    assert shown.splitlines() == ["Traceback (most recent call last):", '  File "repro.py", line 8, in <module>',
                                  "    assert jnp.isfinite(g)", "AssertionError"]
    assert bug_report.as_run_of_repro("boom", "gain.py", 6) == "boom"


def test_a_scripts_culprit_pass_is_searched_for_with_its_operation():
    from reducer import xla_culprit

    jit = Signature("wrong-result", (("source", "jit"), ("reference", "op-by-op"), ("op", "sub")),
                    "`jit` result disagrees with op-by-op evaluation (`sub`)")
    sig, fixed_by, owner = xla_culprit.named(jit, "algsimp", "", None)
    found = filing.read(report(sig, fixed_by=fixed_by, owner=owner))
    path, query = parts(found.search)
    assert found.repo == "openxla/xla" and query["q"] == "is:issue algsimp sub"
    _, query = parts(found.new_issue)
    assert query["title"].endswith("(XLA pass `algsimp`)")
