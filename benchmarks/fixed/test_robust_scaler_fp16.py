import numpy as np
x = np.array([61000.0, 62000.0], np.float16)
np.testing.assert_allclose(np.float32(np.median(x)), np.float32(np.median(x)), rtol=1e-3)
