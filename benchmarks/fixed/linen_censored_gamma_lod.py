import numpy as n
from scipy.stats import gamma
assert n.isfinite(gamma.logcdf(1,40))
