# SPDX-License-Identifier: MIT
"""Loading the library: where it is found, and the version check."""
import ctypes.util
import os

import pytest

import llmem
from llmem import _library
from conftest import run_python


def test_package_version_is_the_project_version():
    assert llmem.__version__ == os.environ["LLMEM_TEST_PROJECT_VERSION"]


def test_loaded_library_is_the_one_built():
    assert os.path.realpath(llmem.library_path) == \
        os.path.realpath(os.environ["LLMEM_TEST_BUILD_LIBRARY"])
    assert llmem.library_version() == os.environ["LLMEM_TEST_PROJECT_VERSION"]


def test_build_tree_copy_finds_the_built_library_without_the_variable():
    env = dict(os.environ)
    del env["LLMEM_LIBRARY"]
    rc, out, err = run_python("import llmem; print(llmem.library_path)", env)
    assert rc == 0, err
    assert os.path.realpath(out.strip()) == \
        os.path.realpath(os.environ["LLMEM_TEST_BUILD_LIBRARY"])


def test_the_variable_is_the_only_place_tried_when_set(tmp_path):
    env = dict(os.environ, LLMEM_LIBRARY=str(tmp_path / "libmissing.so"))
    rc, _, err = run_python("import llmem", env)
    assert rc != 0
    assert "ImportError" in err and "LLMEM_LIBRARY" in err and "libmissing.so" in err


def test_a_library_that_is_not_libllmem_is_refused():
    # The C math library loaded, then its missing llmem_version_number was an
    # AttributeError.
    other = ctypes.util.find_library("m")
    if other is None:
        pytest.skip("no C math library to load")
    env = dict(os.environ, LLMEM_LIBRARY=other)
    rc, _, err = run_python("import llmem", env)
    assert rc != 0 and "AttributeError" not in err
    assert ("ImportError: llmem: the library at %s is not libllmem (missing symbol "
            "llmem_version_number)" % other) in err


class _FakeLibrary:
    """Answers llmem_version_number/llmem_version_string like another major."""

    def __init__(self, number):
        self.llmem_version_number = lambda: number
        self.llmem_version_string = lambda: b"%d.%d.%d" % (
            number // 10000, number // 100 % 100, number % 100)


def test_another_major_or_an_older_library_is_refused():
    from llmem import _version
    with pytest.raises(ImportError, match="major version"):
        _library._check_version(_FakeLibrary((_version.MAJOR + 1) * 10000), "fake.so")
    with pytest.raises(ImportError, match="older than"):
        _library._check_version(_FakeLibrary(_version.MINIMUM_NUMBER - 1), "fake.so")
    _library._check_version(_FakeLibrary(_version.MINIMUM_NUMBER), "fake.so")
    _library._check_version(_FakeLibrary(_version.MAJOR * 10000 + 99 * 100 + 7), "fake.so")
