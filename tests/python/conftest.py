# SPDX-License-Identifier: MIT
"""Fixtures of the Python package's tests (run by meson test; see meson.build).

The environment names what the build made: LLMEM_LIBRARY (the library under
test), LLMEM_TEST_CLI (the llmem command, when built), LLMEM_TEST_HF_CONFIGS
(tests/hf/configs) and LLMEM_TEST_HFCONFIG (1 when the library reads JSON).
"""
import json
import os
import subprocess
import sys

import pytest


@pytest.fixture
def cli():
    """Run `llmem estimate ARGS --json` and return its JSON object."""
    path = os.environ.get("LLMEM_TEST_CLI")
    if not path:
        pytest.skip("the llmem command is not built")

    def run(*args):
        proc = subprocess.run([path, "estimate"] + [str(a) for a in args] + ["--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    return run


@pytest.fixture
def hf_configs():
    if os.environ.get("LLMEM_TEST_HFCONFIG") != "1":
        pytest.skip("the library is built without its Hugging Face readers")
    return os.environ["LLMEM_TEST_HF_CONFIGS"]


def run_python(code, env=None):
    """Run `python -c code` with this interpreter; (returncode, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                          env=env)
    return proc.returncode, proc.stdout, proc.stderr
