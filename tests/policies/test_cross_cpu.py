"""The torch fits are the same on another x86 CPU: a seeded DQN and REINFORCE fit natively and
under qemu-user emulating an AMD EPYC-Milan (AVX2, no AVX-512) give the same weights bit for
bit. Before mirage.policies pinned the code paths (MKL_CBWR, ATEN_CPU_CAPABILITY, fused Adam)
they did not, and a CI machine of another CPU type failed the default run's expected values."""

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("cross_cpu_fit.py")
CPU = "EPYC-Milan"
PINS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY")


def qemu() -> str:
    exe = shutil.which("qemu-x86_64")
    if exe is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "qemu-user"],
                       capture_output=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        exe = shutil.which("qemu-x86_64")
    if exe is None:
        why = "qemu-x86_64 not found (Debian package qemu-user; installed here only as root)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return exe


def digests(cmd: list[str], env: dict) -> dict[str, str]:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(line.split() for line in out.stdout.splitlines() if line.strip())


@pytest.mark.slow
def test_torch_fits_agree_bit_for_bit_on_another_cpu():
    if platform.machine() != "x86_64":
        pytest.skip("an x86-64 check")
    emulator = qemu()
    env = {k: v for k, v in os.environ.items() if k not in PINS}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    native = digests([sys.executable, str(SCRIPT)], env)
    # qemu runs the interpreter's ELF file itself, not the venv's symlink to it
    emulated = digests([emulator, "-cpu", CPU, os.path.realpath(sys.executable), str(SCRIPT)], env)
    assert {k: native[k] for k in ("dqn", "pg")} == {k: emulated[k] for k in ("dqn", "pg")}
    if "avx512f" in Path("/proc/cpuinfo").read_text():
        # the check has teeth: this machine's vector math takes another path than the
        # emulated CPU's (torch's own sqrt differs), yet the fits agree
        assert native["control_sqrt"] != emulated["control_sqrt"]
