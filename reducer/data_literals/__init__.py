"""A standalone reproducer: the data files the reduced program still reads, written into it.

After the reduction, the program is run once more under a recorder (`python -m
reducer.data_literals SCRIPT OUTDIR`, in a scratch folder with its data files, as candidates run)
that wraps the loaders a program reads data with (`numpy.load`, `numpy.loadtxt`,
`numpy.genfromtxt`, `numpy.fromfile`, `json.load`, `pickle.load`, `safetensors.numpy.load_file`,
`pathlib.Path.read_text` / `read_bytes`) and `open`. Each call made from the program's own code is
recorded with where it is (the call's exact span, from the frame's code positions), the file it
read, and what came out. `rewrite` then replaces each such call in the source by what it returned:

- an array of at most `LITERAL_ELEMENTS` elements as a literal, `np.array([...], dtype=np.float32)`;
  a larger one as `_repro_data['a0']`, read from `repro_data.npz` beside the reproducer;
- dicts, lists and tuples of these, numbers, strings (a `.npz` file's arrays become a dict);
- an `open(...)` whose file object is no longer read (`with open(p) as f:` around a rewritten
  `json.load(f)`) goes; one still read becomes `io.StringIO(...)` / `io.BytesIO(...)` of the file's
  text when that is small.

A call that returned something else (a pickled object of the program's own class), returned
different things on different runs through it, or read a large file through `open`, is kept, and
its file stays beside the reproducer. `make_standalone` checks that the rewritten program fails the
same way with only the files it still needs; if not, the reduced program and its files are kept as
they were, and the report says so.

The package, in the order the job goes through it:

- `recorder`: the recorder, which runs in the candidate's interpreter (`__main__` starts it), and
  `record`, which runs it on a program in a scratch folder and reads back what it recorded;
- `writeback`: `rewrite`, the program's source with the recorded calls replaced by what they returned;
- `standalone`: the job's step, `make_standalone` (record, rewrite, check the rewritten program still
  fails the same way, and choose the files that go beside it), and what the job calls around it.

Here: the limits and names the three share.
"""

#: arrays up to this many elements are written as literals in the reproducer
LITERAL_ELEMENTS = 64
#: a file read through `open` is written into the reproducer up to this many bytes
LITERAL_FILE_BYTES = 16 * 1024
#: the file larger arrays go into, beside repro.py
DATA_NPZ = "repro_data.npz"
