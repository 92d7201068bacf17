import numpy as np
frac, _ = np.modf(np.float32(np.inf))
assert np.isfinite(frac), frac
