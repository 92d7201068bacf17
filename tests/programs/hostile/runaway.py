"""A program whose reductions turn hostile: deleting one statement makes a candidate loop forever,
allocate without bound, leave a forked child running, or print without end. The failure (the
'BUG-42' line) depends on what each loop computes, so the reducer must try those deletions."""
import subprocess
import sys

budget = 3
while budget:  # deleting the decrement loops forever
    budget -= 1

blocks = [bytearray(1)]
wanted = 3
while len(blocks) != wanted:  # with wanted simplified to 0, this allocates without bound
    blocks.append(bytearray(64 * 1024 * 1024))

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
child.kill()  # deleting this leaves a child running
child.wait()

noise = 0
while noise < 5:  # deleting the increment prints without end
    print("progress", noise)
    noise += 1

raise SystemExit(f"BUG-42 budget={budget} blocks={len(blocks)} noise={noise} child={child.returncode}")
