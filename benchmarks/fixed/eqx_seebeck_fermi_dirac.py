import numpy
from scipy.special import spence
assert numpy.isfinite((spence(1.5+1e-6)-spence(1.5))/1e-6)
