"""`ast.parse` from several threads at once (`reducer.threadsafe_ast`): CPython 3.11 shares the
recursion depth of its tree conversion between threads, and a reduction under load stopped as "bug
in reducer" with `SystemError: AST constructor recursion depth mismatch`. The stress below fails
that way within a second without the lock (run it with `IMPORT=` to see), and never with it."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STRESS = """
import ast, os, sys, threading, time
if os.environ.get("IMPORT", "reducer"):
    import reducer
source = open(sys.argv[1]).read() * 2
errors = []


class Finalized:
    def __del__(self):
        time.sleep(0)  # Python code run by the collector: the GIL may pass to another thread


def work():
    for _ in range(40):
        for _ in range(200):
            cycle = Finalized()
            cycle.me = cycle
        try:
            ast.parse(source)
        except SystemError as exc:
            errors.append(str(exc))
            return


sys.setswitchinterval(1e-6)
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), errors[:1])
"""


def test_parsing_from_several_threads_at_once_never_raises():
    done = subprocess.run([sys.executable, "-c", STRESS, str(ROOT / "reducer" / "levels" / "jaxpr" / "as_script.py")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.split()[0] == "0", done.stdout + done.stderr[-2000:]


def test_the_lock_is_installed_once_with_the_package():
    import ast

    import reducer.threadsafe_ast as threadsafe_ast

    first = ast.parse
    threadsafe_ast.install()
    assert ast.parse is first and first.behind_a_lock and ast.parse("x = 1").body[0].targets[0].id == "x"
