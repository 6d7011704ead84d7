# SPDX-License-Identifier: MIT
"""MIG profiles, fitting and packing (llmem.mig_profiles, llmem.fit,
llmem.pack and their handles): each answer compared with what `llmem gpus
--mig`, `llmem fit` and `llmem pack` print for the same request; bad input
raises the library's exception with its message; the handles live and die
like the others."""
import dataclasses
import gc
import json
import os
import re
import subprocess
import threading

import pytest

import llmem

GIB = 2 ** 30


def _cli(*args, expect=(0, 3), raw=False):
    """Run `llmem ARGS`; exit 3 (a job does not fit) is an answer. The JSON
    object, or the text with ``raw``."""
    path = os.environ.get("LLMEM_TEST_CLI")
    if not path:
        pytest.skip("the llmem command is not built")
    proc = subprocess.run([path] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert proc.returncode in expect, proc.stderr
    return proc.stdout if raw else json.loads(proc.stdout)


# --- the catalog -------------------------------------------------------------

def _profile_json(p):
    """A MigProfile as `llmem gpus --mig --json` writes a profile."""
    return {"name": p.name, "resource": p.resource, "variant": p.variant,
            "usable_bytes": p.usable_bytes, "compute_slices": p.compute_slices,
            "slots": p.slots, "starts": list(p.starts), "max_count": p.max_count,
            "sms": p.sms, "memory_estimated": p.memory_estimated,
            "placements_inferred": p.placements_inferred, "source": p.source,
            "since_driver": p.since_driver,
            "driver_names": [dataclasses.asdict(d) for d in p.driver_names()]}


@pytest.mark.parametrize("driver", [0, 520, 535])
def test_profiles_are_the_commands_catalog(driver):
    listed = _cli("gpus", "--mig", "--json", "--driver", driver)
    mig_gpus = 0
    for gpu in listed:
        found = llmem.mig_profiles(gpu["name"], driver=driver)
        assert len(found) == gpu["mig_profiles"], gpu["name"]
        if not found:
            assert "mig" not in gpu
            continue
        mig_gpus += 1
        assert [_profile_json(p) for p in found] == gpu["mig"]["profiles"], gpu["name"]
        assert all(p.gpu == gpu["name"] and p.driver == driver for p in found)
        assert all(llmem.gpu(p.gpu).index == p.gpu_index for p in found)
    assert mig_gpus >= 8


def test_profile_by_any_name_a_driver_gives_it():
    a100 = llmem.mig_profile("A100-80GB", "3g.40gb")
    for name in ("3g.39gb", "3G.40GB", b"3g.39gb"):
        assert llmem.mig_profile("A100-80GB", name) == a100  # catalog names at driver 0
    on_535 = llmem.mig_profile("NVIDIA A100-SXM4-80GB", "3g.40gb", driver=535)
    assert (on_535.name, on_535.catalog_name, on_535.resource) == \
        ("3g.39gb", "3g.40gb", "nvidia.com/mig-3g.39gb")
    assert on_535.usable_bytes == a100.usable_bytes and on_535.index == a100.index
    assert [(d.name, d.first_driver, d.last_driver) for d in a100.driver_names()] == \
        [("3g.40gb", 0, 534), ("3g.39gb", 535, 545), ("3g.40gb", 546, None)]
    assert llmem.mig_profile(llmem.gpu("H100"), "1g.10gb+me").variant == "me"
    assert llmem.mig_profiles("T4") == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a100.name = "x"


def test_profile_misses_raise_the_librarys_message():
    with pytest.raises(llmem.NotFound) as info:
        llmem.mig_profile("H100", "9g.40gb")
    assert info.value.message == ("mig: H100-SXM has no profile '9g.40gb' (expected 1g.10gb|"
                                  "1g.10gb+me|1g.20gb|2g.20gb|3g.40gb|4g.40gb|7g.80gb)")
    with pytest.raises(llmem.NotFound, match="T4 has no MIG profiles"):
        llmem.mig_profile("T4", "1g.10gb")
    with pytest.raises(llmem.NotFound, match="unknown GPU 'Z100'"):
        llmem.mig_profiles("Z100")
    with pytest.raises(llmem.NotFound, match="driver branch 520 has no 1g.20gb .from R525 on."):
        llmem.mig_profile("A100-80GB", "1g.20gb", driver=520)
    with pytest.raises(llmem.OutOfRange, match="driver: 1000 out of range"):
        llmem.mig_profiles("H100", driver=1000)
    with pytest.raises(TypeError, match="driver: expected an int"):
        llmem.mig_profiles("H100", driver="535")
    with pytest.raises(TypeError, match="gpu: expected a GPU's name or a llmem.Gpu, got int"):
        llmem.mig_profiles(14)
    with pytest.raises(llmem.InvalidArgument, match="name: embedded NUL"):
        llmem.mig_profile("H100", "1g.10gb\0")


# --- fit -----------------------------------------------------------------------

# (gpu, bytes, level, margin %, min compute, driver, running): `llmem fit`'s flags.
FITS = [
    ("H100", 9 * GIB, "device", None, None, None, "4g.40gb@0,1g.10gb@4"),
    ("A100-80GB", 20 * GIB, "reserved", 10, None, None, None),
    ("A100-80GB", 30 * GIB, "device", None, None, 535, "3g.39gb@0"),
    ("A100-80GB", 30 * GIB, "device", 0, None, 535, None),
    ("A100-40GB", 8 * GIB, "device", None, 2, None, None),
    ("H100", 200 * GIB, "device", None, None, None, None),            # fits nowhere
    ("H100", 5 * GIB, "device", 2.5, None, None, ""),                 # an empty GPU
    ("T4", 10 * GIB, "reserved", None, None, None, None),             # no MIG
    ("A30", 5 * GIB, "device", None, None, None, "2g.12gb@0:2"),
    ("H100", 2 ** 64 - 1, "reserved", None, None, None, None),         # beyond 64 bits
    ("H100", 70 * GIB, "device", None, None, None, "1g.10gb@6"),      # whole GPU refused
]


def _fit_flags(gpu, nbytes, level, margin, compute, driver, running):
    args = ["fit", "--gpu", gpu, "--bytes", nbytes, "--bytes-level", level, "--json"]
    for flag, value in (("--margin", margin), ("--min-compute", compute),
                        ("--driver", driver), ("--running", running)):
        if value is not None:
            args += [flag, value]
    return args


def _option_json(o, running):
    found = {"name": o.name, "whole_gpu": o.whole_gpu, "resource": o.resource, "fits": o.fits,
             "usable_bytes": o.usable_bytes, "compute_slices": o.compute_slices,
             "margin_bytes": o.margin_bytes, "budget_bytes": o.budget_bytes,
             "headroom_bytes": o.headroom_bytes, "shortfall_bytes": o.shortfall_bytes}
    if running:
        found.update(placeable=o.placeable, start=o.start, starts=list(o.starts))
    return found


@pytest.mark.parametrize("case", FITS)
def test_fit_is_the_commands(case):
    gpu, nbytes, level, margin, compute, driver, running = case
    cli = _cli(*_fit_flags(*case))
    kw = {"level": level, "margin": margin, "min_compute": compute, "driver": driver}
    instances = [] if not running else running.split(",")
    result = llmem.fit(nbytes, gpu, running=instances, **kw)
    assert (result.gpu, result.level, result.margin_permille, result.need_bytes,
            result.required_bytes) == (cli["gpu"], cli["bytes_level"], cli["margin_permille"],
                                       cli["need_bytes"], cli["required_bytes"])
    with_running = running is not None
    assert [_option_json(o, with_running) for o in result.options] == cli["options"]
    assert (result.best.name if result.best else None) == cli["best"]
    assert (result.best.resource if result.best else None) == cli["resource"]
    assert result.fits == (cli["best"] is not None)
    if with_running:
        assert [{"name": r.name, "start": r.start} for r in result.running] == cli["running"]
        best = result.best
        assert (best.start if best and not best.whole_gpu else None) == cli["start"]
    for option in result.options:
        assert option.need_bytes == result.need_bytes
        assert (option.profile is None) == option.whole_gpu
        if option.profile is not None:
            assert option.profile.name == option.name
            assert option.profile.usable_bytes == option.usable_bytes


def test_fit_answers_every_verdict():
    verdicts = {llmem.fit(b, g, level=l, margin=m, min_compute=c, driver=d,
                          running=[] if not r else r.split(",")).fits
                for g, b, l, m, c, d, r in FITS}
    assert verdicts == {True, False}


def test_fit_takes_an_estimate_as_llmem_fit_estimates():
    cli = _cli("fit", "--gpu", "A100-80GB", "--model", "Qwen2.5-0.5B", "--method", "lora",
               "--batch", 8, "--seq", 1024, "--json")
    est = llmem.estimate("Qwen2.5-0.5B", method="lora", batch=8, seq=1024, gpu="A100-80GB")
    result = llmem.fit(est, "A100-80GB")
    assert result.need_bytes == est.peak_device == cli["need_bytes"]
    assert result.best.name == cli["best"] and result.best.resource == cli["resource"]
    with pytest.raises(llmem.InvalidArgument, match="peak_device is device-level"):
        llmem.fit(est, "A100-80GB", level="reserved")


def test_running_instances_as_pairs_and_text_are_one():
    text = llmem.fit(9 * GIB, "H100", running=["4g.40gb@0", "1g.10gb:4"])
    pairs = llmem.fit(9 * GIB, "H100", running=[("4g.40gb", 0), (b"1g.10gb", 4)])
    assert text == pairs
    assert [str(r) for r in text.running] == ["4g.40gb@0", "1g.10gb@4"]
    assert text.best.name == "1g.10gb" and text.best.start == 5 and text.best.starts == (5, 6)
    assert text.option("whole").placeable is False and text.option("whole").start is None
    on_535 = llmem.fit(9 * GIB, "A100-80GB", driver=535, running=["3g.40gb@4"])
    assert on_535.running[0].name == "3g.39gb"  # named as the branch names it


def test_a_fit_handle_is_reusable_and_configurable():
    with llmem.Fit(margin_permille=0, driver=535) as handle:
        assert (handle.margin_permille, handle.min_compute, handle.driver) == (0, 0, 535)
        first = handle.run(30 * GIB, "A100-80GB")
        assert first.best.name == "3g.39gb" and first.margin_permille == 0
        handle.min_compute = 4
        assert handle.run(30 * GIB, "A100-80GB").best.name == "4g.40gb"
        handle.set(min_compute=0, driver=0)
        again = handle.run(30 * GIB, "A100-80GB", running=["3g.40gb@0"])
        assert again.best.name == "3g.40gb" and again.best.start == 4
        assert handle.run(30 * GIB, "A100-80GB") == llmem.fit(30 * GIB, "A100-80GB", margin=0)
        assert handle.to_dict() == {"margin_permille": 0, "min_compute": 0, "driver": 0}


@pytest.mark.parametrize("running,error,message", [
    (["9g.40gb@0"], llmem.NotFound, "H100-SXM has no profile '9g.40gb'"),
    (["3g.40gb@2"], llmem.OutOfRange,
     "running instance 1 (3g.40gb@2): 3g.40gb starts at 0, 4 on H100-SXM, not 2"),
    (["4g.40gb@0", "2g.20gb@2"], llmem.InvalidArgument,
     "running instance 2 (2g.20gb@2): its slots 2-3 overlap running instance 1 (4g.40gb@0)"),
    (["1g.10gb+me@0", "1g.10gb+me@1"], llmem.InvalidArgument, "at most 1 1g.10gb+me"),
    (["3g.40gb"], llmem.InvalidArgument, "running[0] '3g.40gb': expected NAME@START"),
    (["3g.40gb@x"], llmem.InvalidArgument, "running[0] '3g.40gb@x'"),
    (["@4"], llmem.InvalidArgument, "running[0] '@4'"),
    (["1g.10gb@0", "3g.40gb@4:2"], llmem.InvalidArgument,
     "running[1] '3g.40gb@4:2': 3g.40gb occupies 4 slots, not 2"),
    ([("3g.40gb", -1)], llmem.OutOfRange, "running[0] 3g.40gb@-1"),
    ([("3g.40gb", "4")], TypeError, "running[0]: the start: expected an int, got str"),
    ([4], TypeError, "running[0]: expected \"NAME@START\" or a (name, start) pair, got int"),
    ("3g.40gb@4", TypeError, "running: expected a list"),
])
def test_bad_running_instances_are_refused_naming_them(running, error, message):
    with llmem.Fit() as handle:
        with pytest.raises(error, match=re.escape(message)):
            handle.run(9 * GIB, "H100", running=running)
        assert handle.run(9 * GIB, "H100").best.name == "1g.10gb"  # still usable


def test_running_on_a_gpu_or_branch_that_cannot_hold_it():
    with pytest.raises(llmem.NotFound, match="T4 has no MIG profiles"):
        llmem.fit(GIB, "T4", running=["1g.10gb@0"])
    with pytest.raises(llmem.InvalidArgument, match="driver branch 520 has no 1g.20gb"):
        llmem.fit(GIB, "A100-80GB", driver=520, running=["1g.20gb@0"])
    with pytest.raises(llmem.InvalidArgument, match="driver branch 470 refuses it"):
        llmem.fit(GIB, "A100-80GB", driver=470, running=["4g.40gb@0", "3g.40gb@4"])


def test_bad_fit_input_raises_the_right_exception():
    with pytest.raises(llmem.NotFound) as info:
        llmem.fit(GIB, "A100")
    assert "A100-40GB" in info.value.message and "A100-80GB" in info.value.message
    with pytest.raises(llmem.OutOfRange, match="fit: bytes 0: must be positive"):
        llmem.fit(0, "H100")
    for bad in (-1, 2 ** 64):
        with pytest.raises(llmem.OutOfRange, match="job: %d is outside" % bad):
            llmem.fit(bad, "H100")
    for bad in (True, 1.5e9, "9GiB", None):
        with pytest.raises(TypeError, match="job: expected bytes .an int. or a llmem.Result"):
            llmem.fit(bad, "H100")
    with pytest.raises(llmem.InvalidArgument, match="level 'allocated': expected device|reserved"):
        llmem.fit(GIB, "H100", level="allocated")
    with pytest.raises(TypeError, match="level"):
        llmem.fit(GIB, "H100", level=3)
    with pytest.raises(ValueError, match="margin 95"):
        llmem.fit(GIB, "H100", margin=95)
    with pytest.raises(ValueError, match="margin 89.96: .*rounds to 90.0%"):
        llmem.fit(GIB, "H100", margin=89.96)
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.fit(GIB, "H100", min_compute=8)
    assert (info.value.field, info.value.object) == ("min_compute", "fit")
    assert "8" in info.value.message
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.fit(GIB, "H100", driver=1000)
    assert (info.value.field, info.value.object) == ("driver", "fit")
    with pytest.raises(AttributeError, match="Fit has no field 'margin'"):
        llmem.Fit().margin = 5
    with pytest.raises(TypeError, match="min-compute: expected an int or a name, got float"):
        llmem.Fit(min_compute=2.0)


# --- pack ----------------------------------------------------------------------

JOBS_SMALL = [("a", 30 * GIB), ("b", 9 * GIB), ("c", 9 * GIB, 2), ("d", 18 * GIB),
              ("e", 4 * GIB), ("f", 60 * GIB), ("g", 35 * GIB), ("h", 8 * GIB)]

# (jobs, fleet as `--gpu`, fleet for pack(), settings)
PACKS = [
    (JOBS_SMALL, "A100-80GB", "A100-80GB", {}),
    (JOBS_SMALL + [("huge", 200 * GIB)], "A100-80GB:2,H100:1", {"A100-80GB": 2, "H100": 1},
     {"margin": 10}),
    (JOBS_SMALL, "A100-80GB", ["A100-80GB"], {"driver": 535, "gpus_per_node": 2}),
    ([("r%d" % i, 20 * GIB) for i in range(9)], "H100:2", [("H100", 2)], {"margin": 0}),
    ([llmem.PackJob("x", 9 * GIB, "reserved"), llmem.PackJob("y", 70 * GIB, min_compute=7)],
     "A30,A100-40GB", ["A30", "A100-40GB"], {"exact_limit": 0}),
]


def _jobs_file(tmp_path, jobs):
    entries = []
    for job in jobs:
        if isinstance(job, llmem.PackJob):
            entry = {"id": job.id, "memory_bytes": job.bytes, "memory_level": job.level}
            if job.min_compute:
                entry["min_compute"] = job.min_compute
        else:
            entry = {"id": job[0], "memory_bytes": job[1]}
            if len(job) == 3:
                entry["min_compute"] = job[2]
        entries.append(entry)
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(entries))
    return path


def _pack_flags(path, fleet, settings):
    args = ["pack", "--gpu", fleet, "--jobs", path]
    for key, flag in (("margin", "--margin"), ("driver", "--driver"),
                      ("gpus_per_node", "--gpus-per-node")):
        if key in settings:
            args += [flag, settings[key]]
    return args


def _job_json(j):
    found = {"id": j.id, "status": j.status, "need_bytes": j.need_bytes}
    if j.placed:
        found.update(gpu=j.gpu, gpu_type=j.gpu_type, profile=j.profile, start=j.start,
                     usable_bytes=j.usable_bytes, headroom_bytes=j.headroom_bytes,
                     resource=j.resource)
    elif j.status == "fits-nowhere":
        found.update(largest_gpu=j.largest_gpu, largest_option=j.largest_option,
                     shortfall_bytes=j.shortfall_bytes)
    return found


@pytest.mark.parametrize("case", range(len(PACKS)))
def test_pack_is_the_commands(tmp_path, case):
    jobs, fleet, gpus, settings = PACKS[case]
    path = _jobs_file(tmp_path, jobs)
    flags = _pack_flags(path, fleet, settings)
    if "exact_limit" in settings:  # the command has no flag for it: the default's answer
        settings = dict(settings, exact_limit=200000)
    cli = _cli(*flags, "--json")
    result = llmem.pack(jobs, gpus, config_name="fleet-a", **settings)
    assert (result.gpus_used, result.lower_bound, result.gap, result.optimal,
            result.jobs_placed, result.jobs_unplaced, result.jobs_bound) == \
        (cli["gpus_used"], cli["lower_bound"], cli["gap"], cli["optimal"], cli["jobs_placed"],
         cli["jobs_unplaced"], cli["jobs_bound"])
    assert dataclasses.asdict(result.bounds) == cli["bounds"]
    assert [dict(dataclasses.asdict(g), instances=[dataclasses.asdict(i) for i in g.instances])
            for g in result.gpus] == cli["gpus"]
    assert [_job_json(j) for j in result.jobs] == cli["jobs"]
    assert result.mig_parted == _cli(*flags, "--format", "mig-parted", "--config-name",
                                     "fleet-a", raw=True)
    assert result.nvidia_smi == _cli(*flags, "--format", "nvidia-smi", raw=True)
    assert result.config_name == "fleet-a"
    for job in result.jobs:
        assert result.job(job.id) is job
        assert isinstance(job.status, llmem.PackStatus)


def test_pack_answers_every_status():
    statuses = {j.status for jobs, _, gpus, settings in PACKS
                for j in llmem.pack(jobs, gpus, **settings).jobs}
    assert statuses == {llmem.PackStatus.PLACED, llmem.PackStatus.FITS_NOWHERE,
                        llmem.PackStatus.NO_ROOM}
    assert llmem.PackStatus.NO_ROOM == "no-room" and str(llmem.PackStatus.PLACED) == "placed"


def test_a_pack_handle_outputs_its_last_result():
    with llmem.Pack(margin_permille=50) as handle:
        handle.add_gpu("A100-80GB", 1).add_gpu(llmem.gpu("H100"))
        for job in JOBS_SMALL:
            handle.add_job(*job[:2], min_compute=job[2] if len(job) == 3 else 0)
        assert handle.job_count == len(JOBS_SMALL)
        result = handle.run()
        assert result.gpus[0].type == "A100-80GB" and result.gpus_used >= 2
        assert handle.mig_parted() == result.mig_parted and result.config_name == "llmem"
        assert handle.mig_parted("other").replace('"other"', '"llmem"') == result.mig_parted
        assert handle.nvidia_smi() == result.nvidia_smi
        handle.add_job("late", GIB)  # a change drops the result
        with pytest.raises(llmem.Inconsistent, match="no result .run it first."):
            handle.nvidia_smi()
        assert handle.run().job("late").placed
        handle.clear()
        assert handle.job_count == 0
        with pytest.raises(llmem.Inconsistent):
            handle.run()  # no GPU type
        handle.add_gpu("H100").add_job("a", GIB)  # the same id again, after clear()
        assert handle.run().job("a").profile == "1g.10gb"


def test_estimates_pack_as_their_device_peak():
    est = llmem.estimate("Qwen2.5-0.5B", method="lora", batch=8, seq=1024, gpu="A100-80GB")
    result = llmem.pack([("est", est), llmem.PackJob("obj", est)], "A100-80GB")
    assert [j.need_bytes for j in result.jobs] == [est.peak_device] * 2
    with pytest.raises(llmem.InvalidArgument, match="device-level"):
        llmem.pack([llmem.PackJob("r", est, "reserved")], "A100-80GB")


def test_bad_pack_input_raises_the_right_exception():
    with pytest.raises(llmem.NotFound, match="unknown GPU 'Z100'"):
        llmem.pack([("a", GIB)], "Z100")
    with pytest.raises(llmem.OutOfRange, match="pack: job 'zero': bytes 0: must be positive"):
        llmem.pack([("zero", 0)], "H100")
    with pytest.raises(llmem.OutOfRange, match="pack: job 'c': min compute 9 out of range"):
        llmem.pack([("c", GIB, 9)], "H100")
    with pytest.raises(llmem.InvalidArgument, match="job 'a': the same id"):
        llmem.pack([("a", GIB), ("a", 2 * GIB)], "H100")
    with pytest.raises(llmem.InvalidArgument, match="config-name '-x': must begin and end"):
        llmem.pack([("a", GIB)], "H100", config_name="-x")
    with pytest.raises(llmem.InvalidArgument, match="level 'allocated'"):
        llmem.pack([("a", GIB)], "H100", level="allocated")
    with pytest.raises(llmem.OutOfRange, match="count: -1 is outside"):
        llmem.pack([("a", GIB)], {"H100": -1})
    with pytest.raises(llmem.OutOfRange, match="pack: at most 8 GPU types"):
        llmem.pack([("a", GIB)], [g.name for g in llmem.gpus()])
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.pack([("a", GIB)], "H100", gpus_per_node=2000)
    assert (info.value.field, info.value.object) == ("gpus_per_node", "pack")
    with pytest.raises(llmem.Inconsistent, match="no result"):
        llmem.Pack().mig_parted()
    with pytest.raises(TypeError, match="jobs.1.: expected .id, bytes.*got int"):
        llmem.pack([("a", GIB), 5], "H100")
    with pytest.raises(TypeError, match="gpus.0.: expected a GPU's name"):
        llmem.pack([("a", GIB)], [5])
    with pytest.raises(TypeError, match="bytes: expected bytes"):
        llmem.pack([("a", "1GiB")], "H100")
    with pytest.raises(TypeError, match="id: expected a str or bytes"):
        llmem.pack([(1, GIB)], "H100")
    with pytest.raises(llmem.InvalidArgument, match="id: embedded NUL"):
        llmem.pack([("a\0b", GIB)], "H100")


def test_pack_job_ids_must_be_utf8():
    # Results give ids back as str: bytes that do not decode are refused before
    # the library sees them (not a UnicodeDecodeError after it packed them), and
    # two such ids cannot meet in the duplicate check as one.
    with pytest.raises(llmem.InvalidArgument, match=r"pack: job b'\\xff': id is not UTF-8"):
        llmem.pack([(b"\xff", GIB)], "H100")
    with pytest.raises(llmem.InvalidArgument, match=r"job b'\\xfe': id is not UTF-8"):
        llmem.pack([("a", GIB), (b"\xfe", GIB)], "H100")
    with llmem.Pack() as handle:
        with pytest.raises(llmem.InvalidArgument):
            handle.add_job(b"x\xff", GIB)
        assert handle.job_count == 0
    result = llmem.pack([("caf\u00e9".encode(), GIB), ("na\u00efve", GIB)], "H100")
    assert [j.id for j in result.jobs] == ["caf\u00e9", "na\u00efve"]


# --- lifetimes and threads -----------------------------------------------------

@pytest.mark.parametrize("kind,what", [(llmem.Fit, "fit"), (llmem.Pack, "pack")])
def test_closed_handles_refuse_use(kind, what):
    handle = kind()
    handle.close()
    handle.close()
    assert handle.closed
    with pytest.raises(ValueError, match="closed %s" % what):
        handle.driver
    with pytest.raises(ValueError, match="closed %s" % what):
        handle.run(GIB, "H100") if kind is llmem.Fit else handle.run()
    with kind() as inside:
        assert not inside.closed
    assert inside.closed


def test_closing_a_context_closes_fits_and_packs_and_results_survive():
    ctx = llmem.Context()
    fitter, packer = llmem.Fit(context=ctx), llmem.Pack(context=ctx)
    result = fitter.run(9 * GIB, "H100")
    packed = packer.add_gpu("H100").add_job("a", GIB).run()
    ctx.close()
    assert fitter.closed and packer.closed
    assert result.best.name == "1g.10gb" and packed.job("a").placed  # plain values
    with pytest.raises(ValueError, match="closed"):
        llmem.fit(GIB, "H100", context=ctx)
    with pytest.raises(ValueError, match="closed"):
        llmem.mig_profiles("H100", context=ctx)


def test_a_fit_keeps_its_context_alive_and_errors_land_there():
    ctx = llmem.Context()
    finalizer = ctx._finalizer
    fitter = llmem.Fit(context=ctx)
    del ctx
    gc.collect()
    assert finalizer.alive
    with pytest.raises(llmem.NotFound):
        fitter.run(GIB, "H100", running=["9g.40gb@0"])
    assert "9g.40gb" in fitter._context.last_error
    del fitter
    gc.collect()
    assert not finalizer.alive


def test_a_shared_fit_is_serialized_across_threads():
    ctx = llmem.Context()
    expected = llmem.fit(9 * GIB, "H100", running=["4g.40gb@0"])
    with llmem.Fit(context=ctx) as shared:
        found, failures = [], []

        def work():
            try:
                for _ in range(50):
                    found.append(shared.run(9 * GIB, "H100", running=["4g.40gb@0"]))
                    llmem.pack([("a", GIB)], "H100", context=ctx)
            except Exception as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == [] and len(found) == 200
    assert all(r == expected for r in found)
