# SPDX-License-Identifier: MIT
"""Finding and loading libllmem, and the C prototypes the package calls.

Lookup order: the environment variable LLMEM_LIBRARY (a path; when set, it is
the only place tried), the library of the build tree this copy of the package
was configured in (``_configured.py``, written by Meson next to the package in
the build directory), then the system's linker paths through
``ctypes.util.find_library("llmem")``.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import List, Optional, Tuple

from . import _version

ENV_VARIABLE = "LLMEM_LIBRARY"

_c_char_p_p = ctypes.POINTER(ctypes.c_char_p)
_i64_p = ctypes.POINTER(ctypes.c_int64)
_u64_p = ctypes.POINTER(ctypes.c_uint64)
_int_p = ctypes.POINTER(ctypes.c_int)
_vp_p = ctypes.POINTER(ctypes.c_void_p)
_size_p = ctypes.POINTER(ctypes.c_size_t)

# name: (restype, argtypes). Handles travel as c_void_p.
_PROTOTYPES = {
    "llmem_version_number": (ctypes.c_uint, []),
    "llmem_version_string": (ctypes.c_char_p, []),
    "llmem_status_str": (ctypes.c_char_p, [ctypes.c_int]),
    "llmem_ctx_new": (ctypes.c_int, [_vp_p, ctypes.c_void_p]),
    "llmem_ctx_free": (None, [ctypes.c_void_p]),
    "llmem_ctx_error": (ctypes.c_char_p, [ctypes.c_void_p]),
    "llmem_ctx_error_field": (ctypes.c_int, [ctypes.c_void_p, _int_p, _int_p]),
    "llmem_model_new": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _vp_p]),
    "llmem_model_new_preset": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _vp_p]),
    "llmem_model_new_hf_config": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _vp_p]),
    "llmem_model_new_hf_config_json": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                      ctypes.c_size_t, _vp_p]),
    "llmem_model_free": (None, [ctypes.c_void_p]),
    "llmem_model_set_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]),
    "llmem_model_set_str": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    "llmem_model_get_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _i64_p]),
    "llmem_model_set_double": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_double]),
    "llmem_model_get_double": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_double)]),
    "llmem_model_field_is_real": (ctypes.c_int, [ctypes.c_int]),
    "llmem_model_field_info": (ctypes.c_int, [ctypes.c_int, _c_char_p_p, _i64_p, _i64_p]),
    "llmem_model_value_name": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_int64]),
    "llmem_model_choice": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_size_t, _i64_p]),
    "llmem_model_validate": (ctypes.c_int, [ctypes.c_void_p]),
    "llmem_model_param_count": (ctypes.c_int, [ctypes.c_void_p, _u64_p]),
    "llmem_preset_count": (ctypes.c_size_t, []),
    "llmem_preset_name": (ctypes.c_char_p, [ctypes.c_size_t]),
    "llmem_weights_open": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _vp_p]),
    "llmem_weights_open_buffer": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                 ctypes.c_size_t, _vp_p]),
    "llmem_weights_free": (None, [ctypes.c_void_p]),
    "llmem_weights_get_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _u64_p]),
    "llmem_weights_dtype_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_weights_dtype": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, _c_char_p_p,
                                           _u64_p, _u64_p]),
    "llmem_train_new": (ctypes.c_int, [ctypes.c_void_p, _vp_p]),
    "llmem_train_free": (None, [ctypes.c_void_p]),
    "llmem_train_set_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]),
    "llmem_train_set_double": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_double]),
    "llmem_train_set_str": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    "llmem_train_get_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _i64_p]),
    "llmem_train_get_double": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                              ctypes.POINTER(ctypes.c_double)]),
    "llmem_train_field_info": (ctypes.c_int, [ctypes.c_int, _c_char_p_p, _i64_p, _i64_p,
                                              _int_p]),
    "llmem_train_value_name": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_int64]),
    "llmem_train_choice": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_size_t, _i64_p]),
    "llmem_train_unread": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]),
    "llmem_train_lora_modules": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                                ctypes.c_size_t,
                                                ctypes.POINTER(ctypes.c_size_t)]),
    "llmem_parallel_unread": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]),
    "llmem_parallel_new": (ctypes.c_int, [ctypes.c_void_p, _vp_p]),
    "llmem_parallel_free": (None, [ctypes.c_void_p]),
    "llmem_parallel_set_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]),
    "llmem_parallel_set_str": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    "llmem_parallel_get_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _i64_p]),
    "llmem_parallel_field_info": (ctypes.c_int, [ctypes.c_int, _c_char_p_p, _i64_p, _i64_p]),
    "llmem_parallel_value_name": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_int64]),
    "llmem_parallel_choice": (ctypes.c_char_p, [ctypes.c_int, ctypes.c_size_t, _i64_p]),
    "llmem_parallel_gpus": (ctypes.c_uint64, [ctypes.c_void_p]),
    "llmem_parallel_step": (ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int]),
    "llmem_estimate_max": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                          ctypes.c_uint64, _i64_p]),
    "llmem_estimate_sweep": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_void_p, _i64_p, _i64_p, ctypes.c_size_t,
                                            ctypes.c_int, _u64_p]),
    "llmem_gpu_get_u64": (ctypes.c_int, [ctypes.c_size_t, ctypes.c_int, _u64_p]),
    "llmem_gpu_count": (ctypes.c_size_t, []),
    "llmem_gpu_name": (ctypes.c_char_p, [ctypes.c_size_t]),
    "llmem_gpu_find": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_size_t)]),
    "llmem_gpu_get_str": (ctypes.c_char_p, [ctypes.c_size_t, ctypes.c_int]),
    "llmem_mig_profile_name": (ctypes.c_char_p, [ctypes.c_size_t, ctypes.c_size_t]),
    "llmem_mig_profile_resource": (ctypes.c_char_p, [ctypes.c_size_t, ctypes.c_size_t]),
    "llmem_mig_profile_source": (ctypes.c_char_p, [ctypes.c_size_t, ctypes.c_size_t]),
    "llmem_mig_profile_get_u64": (ctypes.c_int, [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int,
                                                 _u64_p]),
    "llmem_mig_profile_driver_name": (ctypes.c_char_p, [ctypes.c_size_t, ctypes.c_size_t,
                                                        ctypes.c_int64]),
    "llmem_mig_profile_driver_resource": (ctypes.c_char_p, [ctypes.c_size_t, ctypes.c_size_t,
                                                            ctypes.c_int64]),
    "llmem_mig_profile_find": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                              _size_p]),
    "llmem_fit_new": (ctypes.c_int, [ctypes.c_void_p, _vp_p]),
    "llmem_fit_free": (None, [ctypes.c_void_p]),
    "llmem_fit_set_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]),
    "llmem_fit_set_str": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    "llmem_fit_get_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _i64_p]),
    "llmem_fit_field_info": (ctypes.c_int, [ctypes.c_int, _c_char_p_p, _i64_p, _i64_p]),
    "llmem_fit_add_running": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]),
    "llmem_fit_clear_running": (ctypes.c_int, [ctypes.c_void_p]),
    "llmem_fit_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64,
                                     ctypes.c_int]),
    "llmem_fit_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_fit_best": (ctypes.c_int, [ctypes.c_void_p, _size_p]),
    "llmem_fit_get_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, _u64_p]),
    "llmem_fit_name": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
    "llmem_pack_new": (ctypes.c_int, [ctypes.c_void_p, _vp_p]),
    "llmem_pack_free": (None, [ctypes.c_void_p]),
    "llmem_pack_set_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]),
    "llmem_pack_set_str": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]),
    "llmem_pack_get_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _i64_p]),
    "llmem_pack_field_info": (ctypes.c_int, [ctypes.c_int, _c_char_p_p, _i64_p, _i64_p]),
    "llmem_pack_add_gpu": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]),
    "llmem_pack_add_job": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64,
                                          ctypes.c_int, ctypes.c_int64]),
    "llmem_pack_clear": (None, [ctypes.c_void_p]),
    "llmem_pack_run": (ctypes.c_int, [ctypes.c_void_p]),
    "llmem_pack_get_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _u64_p]),
    "llmem_pack_job_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_pack_job_id": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
    "llmem_pack_job_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, _u64_p]),
    "llmem_pack_job_resource": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
    "llmem_pack_gpu_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, _u64_p]),
    "llmem_pack_mig_parted": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.c_size_t, _size_p]),
    "llmem_pack_nvidia_smi": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                             _size_p]),
    "llmem_plan_new": (ctypes.c_int, [ctypes.c_void_p, _vp_p]),
    "llmem_plan_free": (None, [ctypes.c_void_p]),
    "llmem_plan_set_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]),
    "llmem_plan_get_int": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _i64_p]),
    "llmem_plan_field_info": (ctypes.c_int, [ctypes.c_int, _c_char_p_p, _i64_p, _i64_p]),
    "llmem_plan_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
    "llmem_plan_result_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_plan_result_get_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                 _u64_p]),
    "llmem_plan_result_layout": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                ctypes.c_void_p]),
    "llmem_plan_rejected_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_plan_rejected": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, _c_char_p_p, _u64_p,
                                           _c_char_p_p]),
    "llmem_phase_name": (ctypes.c_char_p, [ctypes.c_int]),
    "llmem_term_name": (ctypes.c_char_p, [ctypes.c_int]),
    "llmem_estimate_new": (ctypes.c_int, [ctypes.c_void_p, _vp_p]),
    "llmem_estimate_free": (None, [ctypes.c_void_p]),
    "llmem_estimate_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
    "llmem_estimate_run_parallel": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p,
                                                   ctypes.c_void_p, ctypes.c_void_p]),
    "llmem_estimate_rank_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_estimate_peak_rank": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_estimate_rank_get_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                   ctypes.c_int, _u64_p]),
    "llmem_estimate_rank_phase_bytes": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                       ctypes.c_int, _u64_p]),
    "llmem_estimate_rank_term": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                ctypes.c_int, _vp_p]),
    "llmem_estimate_timeline": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]),
    "llmem_estimate_timeline_count": (ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_size_t]),
    "llmem_estimate_timeline_peak": (ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_size_t]),
    "llmem_estimate_timeline_point": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                     ctypes.c_size_t, _int_p, _c_char_p_p,
                                                     _i64_p, _u64_p, _u64_p, _u64_p, _u64_p]),
    "llmem_estimate_get_u64": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _u64_p]),
    "llmem_estimate_phase_bytes": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _u64_p]),
    "llmem_estimate_term": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _vp_p]),
    "llmem_term_bytes_at_peak": (ctypes.c_uint64, [ctypes.c_void_p]),
    "llmem_term_max_bytes": (ctypes.c_uint64, [ctypes.c_void_p]),
    "llmem_term_component_count": (ctypes.c_size_t, [ctypes.c_void_p]),
    "llmem_term_component": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, _c_char_p_p,
                                            _u64_p]),
}

def _configured_path() -> Optional[str]:
    try:
        from . import _configured  # type: ignore[attr-defined]
    except ImportError:
        return None
    return str(_configured.LIBRARY)


def candidates() -> List[Tuple[str, str]]:
    """The places tried, in order, as (where, path) pairs."""
    env = os.environ.get(ENV_VARIABLE)
    if env:
        return [(ENV_VARIABLE, env)]
    found = []
    configured = _configured_path()
    if configured is not None:
        found.append(("build tree", configured))
    system = ctypes.util.find_library("llmem")
    if system is not None:
        found.append(("ctypes.util.find_library", system))
    return found


def _open() -> Tuple[ctypes.CDLL, str]:
    tried = []
    for where, path in candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as exc:
            tried.append("%s (%s): %s" % (path, where, exc))
    raise ImportError("llmem: libllmem not found; set %s to its path. Tried: %s"
                      % (ENV_VARIABLE, "; ".join(tried) if tried else "nothing found"))


def _bind(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError("llmem: %s lacks %s (too old for this package)"
                              % (lib._name, name)) from None
        fn.restype = restype
        fn.argtypes = argtypes


def _check_version(lib: ctypes.CDLL, path: str) -> None:
    number = lib.llmem_version_number()
    found = lib.llmem_version_string().decode()
    if number // 10000 != _version.MAJOR:
        raise ImportError("llmem: %s is libllmem %s, but this package needs major version %d"
                          % (path, found, _version.MAJOR))
    if number < _version.MINIMUM_NUMBER:
        raise ImportError("llmem: %s is libllmem %s, older than this package (%s) needs"
                          % (path, found, _version.__version__))


def load() -> Tuple[ctypes.CDLL, str]:
    """Open libllmem, check its version and declare its prototypes."""
    lib, path = _open()
    for name in ("llmem_version_number", "llmem_version_string"):
        try:
            fn = getattr(lib, name)
        except AttributeError:  # another shared library (LLMEM_LIBRARY=libm.so.6)
            raise ImportError("llmem: the library at %s is not libllmem (missing symbol %s)"
                              % (path, name), path=path) from None
        fn.restype, fn.argtypes = _PROTOTYPES[name]
    _check_version(lib, path)
    _bind(lib)
    return lib, path


LIB, PATH = load()
