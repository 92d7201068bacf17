"""The architecture check (`benchmarks/architecture.py`) run in process: layers, sizes, duplicates;
and the checker itself tried on a small tree made for it."""
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("architecture", ROOT / "benchmarks" / "architecture.py")
architecture = sys.modules.setdefault("architecture", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(architecture)


def _fail_listing(found: list[str]) -> None:
    assert not found, f"{len(found)} architecture violation(s):\n" + "\n".join(found)


def test_no_import_goes_up_a_layer():
    _fail_listing(architecture.layer_violations(architecture.modules()))


def test_modules_and_functions_stay_small():
    _fail_listing(architecture.size_violations(architecture.modules()))


def test_no_block_is_written_twice():
    _fail_listing(architecture.duplicate_violations(architecture.modules()))


def test_no_line_is_longer_than_120_characters():
    _fail_listing(architecture.long_line_violations(architecture.modules()))


def test_a_failures_kind_is_asked_of_oracles():
    _fail_listing(architecture.family_violations(architecture.modules()))


def test_a_level_says_what_it_does_itself():
    _fail_listing(architecture.level_violations(architecture.modules()))


def test_no_import_circle():
    _fail_listing(architecture.circle_violations(architecture.modules()))


def test_run_settings_are_frozen_and_a_job_is_not_written_as_it_runs():
    _fail_listing(architecture.state_violations(architecture.modules()))


def test_a_setting_changed_in_place_or_a_job_written_as_it_runs_is_found(tmp_path):
    root = _tree(tmp_path, {
        "reducer/box.py": "from dataclasses import dataclass\n"
                          "@dataclass\nclass Sandbox:\n    data_files: tuple = ()\n"
                          "@dataclass(frozen=True)\nclass Limits:\n    timeout: float = 1.0\n"
                          "    def __post_init__(self):\n        object.__setattr__(self, 'timeout', 2.0)\n"
                          "def widen(limits):\n    object.__setattr__(limits, 'timeout', 9.0)\n",
        "reducer/job.py": "class Job:\n    def __init__(self):\n        self.xla = {}\n"
                          "    def run(self):\n        self.xla, n = {'on': 1}, 0\n",
        "reducer/passes.py": "def search(job):\n    job.xla = {}\n    other.xla = {}\n",
    })
    found = architecture.state_violations(architecture.modules(root), still=frozenset({("reducer.job", "kind")}))
    assert found == [
        "reducer/box.py:3: state: Sandbox holds a run's settings: a frozen dataclass",
        "reducer/box.py:11: state: object.__setattr__ in widen (make another with `replace`)",
        "reducer/job.py:5: state: self.xla assigned in Job.run (return what a run learns, or set it in the "
        "constructor)",
        "reducer/passes.py:2: state: a job's xla assigned outside its constructor (pass it per call, or return it)",
        "reducer/job.py:1: state: reducer.job:kind is no longer assigned: take it off STILL_ASSIGNED"]
    listed = frozenset({("reducer.job", "xla"), ("reducer.passes", "xla")})
    assert len(architecture.state_violations(architecture.modules(root), still=listed)) == 2


def test_an_import_circle_is_found_a_lazy_import_too(tmp_path):
    root = _tree(tmp_path, {
        "reducer/a.py": "from reducer import b\n",
        "reducer/b.py": "def f():\n    from reducer.c import g  # a lazy import counts\n",
        "reducer/c.py": "import reducer.a\n",
        "reducer/d.py": "from reducer import c\n",
    })
    mods = architecture.modules(root)
    ring = {"reducer.a", "reducer.b", "reducer.c"}
    assert architecture.circles(mods) == [ring]
    assert architecture.circle_violations(mods) == [
        "reducer/a.py:1: circle: reducer.a, reducer.b, reducer.c import one another (take the shared part into a "
        "module of its own)"]


def test_every_module_has_a_layer():
    assert [m.name for m in architecture.modules() if architecture.layer_of(m.name) is None] == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for package in ("reducer", "oracles"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


def test_the_checker_finds_what_it_is_for(tmp_path):
    body = "".join(f"    total = total + {i} * value\n" for i in range(8))
    root = _tree(tmp_path, {
        "reducer/workers/__init__.py": "",
        "reducer/workers/requests.py": "def run():\n    from reducer.levels.mlir import worker\n",
        "reducer/levels/__init__.py": "",
        "reducer/levels/mlir/__init__.py": "",
        "reducer/levels/mlir/worker.py": "from ..jaxpr import capture  # a level may import a level\n",
        "reducer/levels/jaxpr/__init__.py": "",
        "reducer/levels/jaxpr/capture.py": "import oracles\nok = event.level == 'jaxpr'  # a level knows the levels\n",
        "reducer/cli.py": "from reducer.levels.mlir import worker\nfrom reducer import job\n",
        "reducer/job.py": "def f(sig):\n    return sig.family == 'crash' or sig.family in ('a', 'b') or sig.family == x\n"
                          "def g(event, resume_at):\n    return event.level == 'source' or resume_at in ('jaxpr',)"
                          " or event.level == Level.name\n",
        "oracles/a.py": f'def a(value):\n    """Doc."""\n    total = 0\n{body}    return total\n',
        "oracles/b.py": f"def b(value):\n    # a comment\n    total = 0\n\n{body}    return total\n"
                        + "def long():\n" + "".join(f"    x{i} = {i}\n" for i in range(70)),
        "oracles/wide.py": f"# {'x' * 118}\n# {'x' * 128}\n",  # a line of 120 characters, then one of 130
    })
    mods = architecture.modules(root)
    layers = architecture.layer_violations(mods)
    assert [line.split(": layer:")[0] for line in layers] == ["reducer/cli.py:1", "reducer/workers/requests.py:2"]
    assert "a higher layer" in layers[1] and "may not import" in layers[0]
    sizes = architecture.size_violations(mods)
    assert sizes == ["oracles/b.py:14: size: function long of 71 lines (at most 60)"]
    families = architecture.family_violations(mods)
    assert families == ["reducer/job.py:2: family: a family's name compared outside oracles/ (ask oracles.kinds)"] * 2
    levels = architecture.level_violations(mods)
    assert levels == ["reducer/job.py:4: level: a level's name compared outside reducer/levels/ (ask the level)"] * 2
    wide = architecture.long_line_violations(mods)
    assert wide == ["oracles/wide.py:2: size: line of 130 characters (at most 120)"]
    dups = architecture.duplicate_violations(mods)
    assert dups == ["oracles/a.py:3: duplicate: lines 3-12 stand again at oracles/b.py:3-13"]


def test_the_script_prints_a_summary_when_clean(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(architecture, "violations", lambda root=None: [])
    assert architecture.main([]) == 0
    assert capsys.readouterr().out.startswith("architecture: ")
    monkeypatch.setattr(architecture, "violations", lambda root=None: ["x.py:1: size: y"])
    assert architecture.main([]) == 1
    assert capsys.readouterr().out == "x.py:1: size: y\n"


def test_workers_load_no_level_and_learn_a_kind_from_the_request():
    """The workers import no level; a request names the module that defines its kind, which the
    worker imports on reading it (as the fork server's runner does)."""
    code = textwrap.dedent("""
        import json, sys
        import reducer.workers.forkserver, reducer.workers.runner, reducer.workers.sandbox
        from reducer.workers import requests
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("reducer.levels"))))
        request = requests.from_wire({"kind": "jaxpr", "defined_in": "reducer.levels.jaxpr.worker", "spec": "{}"})
        print(type(request).__module__, request.spec)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded, made = done.stdout.splitlines()
    assert json.loads(loaded) == []
    assert made == "reducer.levels.jaxpr.worker {}"
