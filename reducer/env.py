"""The environment report: what a maintainer needs to know about where the failure happened.

It reuses `jax.print_environment_info()` (the text JAX's bug template asks for) and adds the
enzyme-ad version, Python, OS, CPU, and the GPU driver and CUDA versions where `nvidia-smi` answers.
The report is gathered in a fresh interpreter, the one candidates run in, so it describes them.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

PROBE = r'''
import importlib.metadata as md, json, os, platform, subprocess, sys
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
info = {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
        "os": platform.platform(), "machine": platform.machine(), "cpu": platform.processor() or "",
        "cpu_count": os.cpu_count(), "reducer": version("reducer")}
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            info["cpu"] = line.split(":", 1)[1].strip(); break
except OSError:
    pass
for name in ("jax", "jaxlib", "enzyme-ad", "numpy", "scipy", "jax-cuda12-plugin", "jax-cuda12-pjrt",
             "jax-cuda13-plugin", "jax-cuda13-pjrt"):
    v = version(name)
    if v:
        info.setdefault("packages", {})[name] = v
try:
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
    if out.returncode == 0:
        info["gpus"] = [line.strip() for line in out.stdout.splitlines() if line.strip()]
        head = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20).stdout
        for token in head.split("|"):
            if "CUDA Version" in token:
                info["cuda_driver_version"] = token.split("CUDA Version:")[1].strip()
except (OSError, subprocess.SubprocessError):
    pass
try:
    import jax
    info["jax_environment"] = jax.print_environment_info(return_string=True)
    try:
        info["devices"] = [str(d) for d in jax.devices()]
        info["default_backend"] = jax.default_backend()
    except Exception as exc:
        info["devices_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
except Exception as exc:
    info["jax_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(info))
'''


#: environment variables that change what JAX and XLA do: kept for every run, recorded in the report
JAX_VARIABLES = re.compile(r"^(JAX_\w+|XLA_\w+|TF_CPP_\w+|CUDA_VISIBLE_DEVICES|NVIDIA_TF32_OVERRIDE|ENABLE_PJRT_\w+)$")


def jax_variables(environ=None) -> dict:
    """The variables of `environ` (default: this process's) that change JAX, as the user set them."""
    import os

    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in sorted(environ) if JAX_VARIABLES.match(k)}


def collect(python: str = sys.executable, platform: str = "cpu", timeout: float = 120.0) -> dict:
    """Gather the environment report by running a probe in `python` with the given JAX platform."""
    import os

    env = dict(os.environ, JAX_PLATFORMS="cuda" if platform == "gpu" else "cpu")
    try:
        done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        info = {"error": f"environment probe failed: {exc}"}
    info["platform_requested"] = platform
    info["environment_variables"] = jax_variables()
    return info


def versions_line(info: dict) -> str:
    pk = info.get("packages", {})
    parts = [f"{n} {pk[n]}" for n in ("jax", "jaxlib", "enzyme-ad") if n in pk]
    parts.append(f"Python {info.get('python', '?')}")
    parts.append(f"{info.get('os', '?')}")
    return ", ".join(parts)


def render(info: dict) -> str:
    """The report as text: JAX's own environment block, then what it leaves out."""
    lines = []
    if info.get("jax_environment"):
        lines.append(info["jax_environment"].rstrip())
    pk = info.get("packages", {})
    for name, v in pk.items():
        if name not in ("jax", "jaxlib", "numpy"):
            lines.append(f"{name}: {v}")
    if "enzyme-ad" not in pk:
        lines.append("enzyme-ad: not installed")
    lines.append(f"os: {info.get('os', '?')}")
    lines.append(f"cpu: {info.get('cpu', '?')} ({info.get('cpu_count', '?')} cores)")
    if info.get("gpus"):
        lines.append("gpus: " + "; ".join(info["gpus"]))
        if info.get("cuda_driver_version"):
            lines.append(f"cuda (driver): {info['cuda_driver_version']}")
    if info.get("devices"):
        lines.append("jax devices: " + ", ".join(info["devices"]))
    for key in ("devices_error", "jax_error", "error"):
        if info.get(key):
            lines.append(f"{key.replace('_', ' ')}: {info[key]}")
    if info.get("reducer"):
        lines.append(f"reducer: {info['reducer']}")
    if info.get("environment_variables"):
        lines.append("environment: " + " ".join(f"{k}={v}" for k, v in info["environment_variables"].items()))
    return "\n".join(lines)
