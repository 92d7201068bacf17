"""Quantise ADC sensor readings to whole counts before calibrating them.

The readings arrive as float32 voltages scaled to counts; the firmware rounds
them to the nearest count with the classic "magic number" trick (add and
subtract 1.5 * 2**23), which is exact in float32 for |x| < 2**22.  We check the
jitted preprocessing against the NumPy version used by the data team.
"""
import jax
import jax.numpy as jnp
import numpy as np

MAGIC = np.float32(1.5 * 2 ** 23)
GAIN = np.float32(0.0125)


def to_counts(volts):
    scaled = volts / GAIN
    return (scaled + MAGIC) - MAGIC


def calibrate(volts, offset):
    counts = to_counts(volts)
    return counts * GAIN + offset


def calibrate_np(volts, offset):
    scaled = (volts / GAIN).astype(np.float32)
    counts = (scaled + MAGIC).astype(np.float32) - MAGIC
    return counts * GAIN + offset


def main():
    rng = np.random.default_rng(3)
    volts = rng.uniform(-2.0, 2.0, size=256).astype(np.float32)
    offset = np.float32(0.1)
    got = np.asarray(jax.jit(calibrate)(volts, offset))
    want = calibrate_np(volts, offset)
    print("max abs diff", np.abs(got - want).max())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    print("calibration OK")


if __name__ == "__main__":
    main()
