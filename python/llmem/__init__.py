# SPDX-License-Identifier: MIT
"""libllmem from Python: the GPU memory of fine-tuning a large language model.

    >>> import llmem
    >>> est = llmem.estimate("meta-llama/Llama-3.1-8B", batch=4, seq=2048,
    ...                      attention="flash")
    >>> est.peak_allocated, est.peak_phase, est.terms["optimizer"].components
    >>> llmem.estimate("meta-llama/Llama-3.1-8B", timeline=True).timeline.peak

Pure ctypes over the C library, standard library only. The library is found
through LLMEM_LIBRARY, the build tree, or the system (see ``_library``); its
major version must be this package's. Field names, bounds and value names
come from the library: :data:`MODEL_FIELDS`, :data:`TRAIN_FIELDS`,
:data:`PARALLEL_FIELDS`, :data:`PLAN_FIELDS`, :data:`FIT_FIELDS`,
:data:`PACK_FIELDS`. MIG profiles, fitting and packing: :mod:`llmem.mig`.
"""
from ._library import PATH as library_path
from ._library import LIB as _LIB
from ._version import __version__
from .context import Context, default_context
from .errors import (BufferTooSmall, Error, Inconsistent, InvalidArgument, NotFound,
                     NotSupported, OutOfMemory, OutOfRange, Overflow, ParseError, ReadError)
from .estimate import (DEFAULT_MARGIN, LEVELS, PHASES, TERMS, Estimate, Gpu, Rank, Result, Term,
                       Timeline, TimelinePoint, estimate, gpu, gpus, largest_fitting, sweep)
from .fields import (ALIASES, FIT_FIELDS, MODEL_FIELDS, PACK_FIELDS, PARALLEL_FIELDS, PLAN_FIELDS,
                     TRAIN_FIELDS, Alias, Field)
from .mig import (Fit, FitOption, FitResult, MigDriverName, MigProfile, Pack, PackBounds,
                  PackedGpu, PackedInstance, PackedJob, PackJob, PackResult, PackStatus,
                  RunningInstance, fit, mig_profile, mig_profiles, pack)
from .model import Model, presets
from .parallel import Parallel
from .plan import Plan, PlannedLayout, PlanResult, Rejection, plan
from .train import Train
from .weights import DtypeTotal, Weights


def library_version() -> str:
    """The loaded library's version, "MAJOR.MINOR.PATCH"."""
    return _LIB.llmem_version_string().decode()


__all__ = [
    "__version__", "Alias", "ALIASES", "BufferTooSmall", "Context", "default_context",
    "DEFAULT_MARGIN", "DtypeTotal", "Error", "Estimate", "estimate", "Field", "Fit", "fit",
    "FIT_FIELDS", "FitOption", "FitResult", "Gpu", "gpu", "gpus", "Inconsistent",
    "InvalidArgument", "largest_fitting", "LEVELS", "library_path", "library_version",
    "MigDriverName", "MigProfile", "mig_profile", "mig_profiles", "Model", "MODEL_FIELDS",
    "NotFound", "NotSupported", "OutOfMemory", "OutOfRange", "Overflow", "Pack", "pack",
    "PACK_FIELDS", "PackBounds", "PackedGpu", "PackedInstance", "PackedJob", "PackJob",
    "PackResult", "PackStatus", "Parallel", "PARALLEL_FIELDS", "ParseError", "PHASES", "Plan",
    "plan", "PLAN_FIELDS", "PlannedLayout", "PlanResult", "presets", "Rank", "ReadError",
    "Rejection", "Result", "RunningInstance", "sweep", "Term", "TERMS", "Timeline",
    "TimelinePoint", "Train", "TRAIN_FIELDS", "Weights",
]
