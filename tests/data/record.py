"""Re-record the real outputs the oracle tests read: `python tests/data/record.py [NAME ...]`.

Each program in tests/programs is run once through the sandbox, exactly as a candidate runs
(harness, gradient checks on), and its RunResult is saved as outputs/NAME.json.
"""
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from reducer.workers.sandbox import Limits, Sandbox  # noqa: E402


def main(names):
    programs = sorted((HERE.parent / "programs").glob("*.py"))
    for prog in programs:
        if names and prog.stem not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            box = Sandbox(Path(tmp), script_name=prog.name, check_gradients=True)
            run = box.run(prog.read_text(), Limits(timeout=120))
        data = dataclasses.asdict(run)
        for key in ("stdout", "stderr"):
            data[key] = data[key].replace(tmp, "/tmp/reducer-XXXX")
        (HERE / "outputs" / f"{prog.stem}.json").write_text(json.dumps(data, indent=1) + "\n")
        print(prog.stem, run.returncode)


if __name__ == "__main__":
    main(sys.argv[1:])
