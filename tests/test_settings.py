"""`[tool.reducer]` in pyproject.toml (reducer/settings.py): which file is read, what it may hold,
and that `reducer reduce` / `reducer check` take it as their options' defaults, the command line
winning. The CLI cases stop before any program runs (a value refused at once, or no such script)."""
from pathlib import Path

import pytest

from conftest import reducer_cli
from reducer import errors, settings
from reducer.cli import cli_keys


def project(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(body)
    return path


def test_the_nearest_pyproject_above_the_input_is_read(tmp_path):
    project(tmp_path, '[tool.reducer]\nmax-time = 50\n')
    inner = tmp_path / "pkg" / "tests"
    inner.mkdir(parents=True)
    assert settings.find_pyproject(inner) == tmp_path / "pyproject.toml"
    assert settings.load(inner).values == {"max-time": 50}
    # a nearer pyproject.toml without the table is the project's: no settings, the outer one is not read
    project(tmp_path / "pkg", '[project]\nname = "pkg"\n')
    found = settings.load(inner)
    assert found.path == tmp_path / "pkg" / "pyproject.toml" and found.values == {}


def test_where_the_search_starts(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    monkeypatch.chdir(tmp_path)
    assert settings.start_for("t/test_x.py::test_a[1]") == tmp_path / "t"
    assert settings.start_for(tmp_path / "t" / "s.py") == tmp_path / "t"
    assert settings.start_for("nowhere/x.py") == tmp_path and settings.start_for(None) == tmp_path


@pytest.mark.parametrize("body, words", [
    ("[tool.reducer]\ncolour = 1\n", "unknown key 'colour' in [tool.reducer]"),
    ("[tool.reducer]\nmax-time = 1\n[tool.reducer.oracle]\nname = 1\n", "[tool.reducer] oracle must be a value"),
    ("[tool.reducer.reduce]\njobs = 1\n", "unknown key 'reduce' in [tool.reducer]"),
    ("[tool]\nreducer = 3\n", "tool.reducer must be a table"),
    ("[tool.reducer\nmax-time = 1\n", "cannot read it for [tool.reducer]"),
])
def test_bad_settings_name_the_file_and_the_key(tmp_path, body, words):
    path = project(tmp_path, body)
    with pytest.raises(errors.ReducerError) as info:
        settings.load(tmp_path, known=cli_keys())
    assert info.value.status == errors.USAGE
    assert str(info.value).startswith(f"{path}: ") and words in str(info.value)


def test_the_keys_are_the_commands_long_options():
    keys = cli_keys()
    assert {"max-time", "oracle", "timeout", "platform", "jobs", "runs", "stall", "memory-mb", "hangs", "cold",
            "runner", "pass-order", "levels", "quiet", "json", "bisect"} <= keys
    assert not keys & {"out", "resume", "o", "j", "help", "junit", "budget"}


def test_the_cli_takes_its_defaults_from_pyproject(tmp_path):
    project(tmp_path, "[tool.reducer]\nmax-time = -1\n")
    done = reducer_cli("reduce", "missing.py", cwd=tmp_path)
    assert done.returncode == errors.USAGE and "--max-time a positive number" in done.stderr, done.stderr
    # the command line wins
    done = reducer_cli("reduce", "missing.py", "--max-time", "5", cwd=tmp_path)
    assert done.returncode == errors.NOT_FOUND and "missing.py: no such file" in done.stderr, done.stderr
    # a key of another command's option is passed over by a command without it
    done = reducer_cli("check", "missing.py", cwd=tmp_path)
    assert "no such file" in done.stderr and "max-time" not in done.stderr, done.stderr


def test_the_file_above_the_input_not_the_working_directory(tmp_path):
    project(tmp_path / "proj", "[tool.reducer]\nruns = 0\n")
    project(tmp_path / "here", "[tool.reducer]\nmax-time = 10\n")
    done = reducer_cli("reduce", tmp_path / "proj" / "missing.py", cwd=tmp_path / "here")
    assert done.returncode == errors.USAGE and "--jobs and --runs must be at least 1" in done.stderr, done.stderr
    done = reducer_cli("reduce", tmp_path / "proj" / "missing.py", "--runs", "2", cwd=tmp_path / "here")
    assert done.returncode == errors.NOT_FOUND, done.stderr


@pytest.mark.parametrize("body, words, commands", [
    ("[tool.reducer]\ncolour = 1\n", "unknown key 'colour' in [tool.reducer] (known: bisect, cold, hangs, jobs",
     ("reduce", "check")),
    ('[tool.reducer]\nplatform = "tpu"\n', "[tool.reducer] platform = 'tpu': Invalid value for '--platform'",
     ("reduce", "check")),
    ('[tool.reducer]\njobs = "many"\n', "[tool.reducer] jobs = 'many': ", ("reduce",)),  # check has no --jobs
])
def test_bad_settings_are_one_line_and_exit_2(tmp_path, body, words, commands):
    path = project(tmp_path, body)
    for command in commands:
        done = reducer_cli(command, "missing.py", cwd=tmp_path)
        assert done.returncode == errors.USAGE, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"reducer: {path}: ") and words in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def test_no_settings_change_nothing(tmp_path):
    project(tmp_path, '[project]\nname = "x"\n')
    done = reducer_cli("reduce", "missing.py", cwd=tmp_path)
    assert done.returncode == errors.NOT_FOUND and "no such file" in done.stderr
