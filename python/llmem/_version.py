# SPDX-License-Identifier: MIT
"""The version of the libllmem API this package was written for.

It follows the library's LLMEM_VERSION_* (include/llmem.h); the test suite
checks that the two agree, and the package refuses at import a library whose
major version differs.
"""

__version__ = "0.1.0"
MAJOR = int(__version__.split(".")[0])
