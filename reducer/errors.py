"""User-facing errors: each has one line of text and its own exit status, never a traceback."""
from __future__ import annotations

#: exit statuses, once for the whole tool
USAGE = 2          # a bad option or oracle spec
NOT_FOUND = 3      # the input file is missing or unreadable
NOT_TEXT = 4       # the input is empty, binary or not UTF-8
SYNTAX = 5         # the script does not parse
NO_FAILURE = 6     # the script runs cleanly: nothing to reduce
OTHER_FAILURE = 7  # the script fails, but not in the way --oracle asks for
NEEDS_INPUT = 8    # the script needs command-line arguments or standard input
BAD_MLIR = 9       # a malformed .mlir module
BAD_CASE = 10      # a corpus case folder that cannot be read
NO_BACKEND = 11    # JAX cannot start the requested platform (no GPU for --platform gpu)
NO_RESUME = 12     # --resume DIR holds no interrupted run of this script
DUPLICATE_CASE = 13  # `corpus add`: the corpus already has a case with this signature (--force adds it)
NOT_VERIFIED = 14  # the reduced program does not show the failure in fresh interpreters
TOOL_BUG = 15      # an oracle or a pass raised an exception: a bug of reducer; the best program so far is kept
INTERRUPTED = 130


class ReducerError(Exception):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class FailsAfterEarlierTests(ReducerError):
    """A test that passes alone but fails after the tests before it in its module, as pytest runs
    them: the job to reduce it is made again with them (`reducer.readers.testcase.earlier_tests`)."""

    def __init__(self, message: str):
        super().__init__(message, NO_FAILURE)
