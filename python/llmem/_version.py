# SPDX-License-Identifier: MIT
"""The version of the libllmem API this package was written for.

It follows the library's LLMEM_VERSION_* (include/llmem.h); the test suite
checks that the two agree. At import the package refuses a library of
another major version, or one older than this MAJOR.MINOR (which would lack
functions it binds).
"""

__version__ = "0.2.0"
MAJOR, MINOR = (int(part) for part in __version__.split(".")[:2])
# The oldest library with every function the package binds (as
# llmem_version_number() counts): MAJOR.MINOR.0.
MINIMUM_NUMBER = MAJOR * 10000 + MINOR * 100
