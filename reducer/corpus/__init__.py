"""The regression corpus: one folder per real bug of the pinned jax / jaxlib / enzyme-ad.

A case folder holds the reproducer (`repro.py`, and `repro.mlir` where the IR level ran), the
bug report (`report.md`), the larger program it was reduced from where that is small enough to be
useful (`original.py`), and `case.toml`: a stable id derived from the signature, a title, the
oracle family, the signature, the expected status, the versions it was seen with, the date and
where it came from.

Checking a case runs its reproducer once, the way `reducer check` does, with the case's own
oracle, and says whether it *still reproduces* (the same signature), is *fixed* (runs cleanly) or
has *changed* (fails with another signature). `add` takes a `reducer reduce` output folder into
the corpus; `refresh_report` re-runs a case and rewrites its report.
"""
from reducer.corpus.add import add, find_original, installed_versions
from reducer.corpus.cases import (CASE_FILE, CHANGED, EXTRA_FILES, FIXED, LABELS, REPRODUCES, SKIPPED, UNCONDITIONAL,
                                  Case, bad_case,
                                  case_folders, case_id, default_root, find_known, known_line, load_case, load_corpus,
                                  oracle_spec)
from reducer.corpus.check import Outcome, check_all, check_case, junit_xml, module_only, run_once, summary_table
from reducer.corpus.facts import reduction_facts, strip_header
from reducer.corpus.report import refresh_module_report, refresh_report
from reducer.tomlfile import dump_toml

__all__ = ["add", "find_original", "installed_versions", "reduction_facts", "strip_header", "CASE_FILE", "CHANGED",
           "EXTRA_FILES", "FIXED", "LABELS", "REPRODUCES", "SKIPPED", "UNCONDITIONAL", "Case", "bad_case",
           "case_folders", "case_id",
           "default_root", "find_known", "known_line", "load_case", "load_corpus", "oracle_spec", "Outcome",
           "check_all", "check_case", "junit_xml", "module_only", "run_once", "summary_table", "refresh_module_report",
           "refresh_report", "dump_toml"]
