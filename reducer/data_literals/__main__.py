"""`python -m reducer.data_literals SCRIPT OUTDIR`: run SCRIPT (as the harness runs candidates) with
the loaders it reads data with recorded into OUTDIR (`reducer.data_literals.recorder`)."""
import sys

from reducer.data_literals.recorder import record_main

if __name__ == "__main__":
    record_main(sys.argv[1:])
