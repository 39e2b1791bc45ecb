#!/usr/bin/env python3
"""Side by side: gpuforge's probes (gpuforge.probe/v1 lines) and the PyTorch reference
(bench/gpu/torch_ref.py's JSON), with each quantity held to its target.

    python3 bench/gpu/compare.py --gpuforge FILE.jsonl --torch FILE.json [--out DIR]
        [--nccl-sizes 67108864,268435456,1073741824] [--no-gpuforge REASON]
        [--topo-rc N] [--validate-rc N] [--validate-json FILE] [--validate-note TEXT]
        [--env FILE]

Prints the table (Markdown) and writes table.md and table.json to --out (default: the
directory of --gpuforge).

Rows, gpuforge / PyTorch (ratio = gpuforge / PyTorch):
  HBM copy      gpu.copy gpu0 bandwidth (read+write, 2 x bytes per copy)   ratio >= 0.95
  h2d, d2h      gpu.h2d / gpu.d2h gpu0 bandwidth (bytes once)             ratio >= 0.95
  GEMM          gpu.gemm gpu0 bf16_tflops (2 x dim^3 per multiply)         ratio >= 0.90
  NCCL          nccl.allreduce "out-of-place SIZE" algbw, every SIZE >= 64 MiB,
                0.95 <= ratio <= 1.05, against ncclAllReduce called directly on PyTorch's
                libnccl (falling back to torch.distributed copy+all_reduce where that is
                missing, which the row then says)
  NCCL wrong    nccl.allreduce "allreduce" wrong_total must be 0
and, without targets: the HBM copy counted once, NCCL in-place time, torch.distributed
copy+all_reduce algbw, gpu.health's outcome, nccl_topo_check.sh's exit status, and validate's
state from its JSON (--validate-json; the exit status only when there is none): an all-SKIP
run is SKIP, never PASS.

A probe that was skipped shows as SKIP (never as a number), one that failed as ERROR, one
that never ran (no binary, no such probe) as absent. Each run of a probe counts: the value is
the median of the runs whose outcome is ok; other runs are listed under Problems.

Exit status: 0 every target met; 1 a target missed (or could not be judged while others
could); 77 nothing could be compared (no GPU, probes skipped, no gpuforge, or no reference).
"""

import argparse
import json
import math
import os
import statistics
import sys

MIB = 1 << 20
DEFAULT_NCCL_SIZES = (64 * MIB, 256 * MIB, 1024 * MIB)


def size_text(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return str(int(v))
    a = abs(v)
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.4g}"


def load_gpuforge(path):
    """Probe lines by probe key, in file order. Bad lines become ERROR results."""
    by_probe = {}
    if not path or not os.path.exists(path):
        return by_probe
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
                if not isinstance(r, dict) or "probe" not in r:
                    raise ValueError("not a probe result")
            except ValueError as e:
                r = {"probe": "?", "outcome": "error", "code": "bad_line",
                     "reason": f"{path}:{i}: {e}", "measurements": []}
            by_probe.setdefault(r.get("probe", "?"), []).append(r)
    return by_probe


def load_torch(path):
    if not path or not os.path.exists(path):
        return {"available": False, "reason": f"no reference file ({path or 'none given'})",
                "measurements": [], "errors": [], "env": {}}
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        return {"available": False, "reason": f"{path} is not JSON ({e}): torch_ref.py died?",
                "measurements": [], "errors": [], "env": {}}
    doc.setdefault("measurements", [])
    doc.setdefault("errors", [])
    doc.setdefault("env", {})
    return doc


def find(measurements, entity, metric):
    for m in measurements or []:
        if m.get("entity") == entity and m.get("metric") == metric:
            return m
    return None


class Side:
    """One side's answer for one quantity: a number, or a state with a reason."""

    def __init__(self, value=None, state="", detail="", runs=None, code=""):
        self.value = value      # float or None
        self.state = state      # "" (a number), SKIP, ERROR, absent
        self.code = code        # the SKIP's or ERROR's code
        self.detail = detail    # code: reason, or a note beside a number
        self.runs = runs or []  # per-run values

    def cell(self):
        if self.value is not None:
            return fmt(self.value)
        return f"{self.state or 'absent'} {self.code}".strip()


def gpuforge_side(results, probe, entity, metric, no_gpuforge, match=None):
    runs = [r for r in results.get(probe, []) if match is None or match(r)]
    if not runs:
        why = no_gpuforge or "the probe did not run"
        return Side(state="absent", detail=why, code="not_run" if not no_gpuforge else "")
    values, other = [], []
    for r in runs:
        outcome = r.get("outcome", "error")
        if outcome == "ok":
            m = find(r.get("measurements"), entity, metric)
            v = m.get("value") if m else None
            if isinstance(v, (int, float)) and math.isfinite(v):
                values.append(float(v))
            else:
                other.append(("ERROR", "no_measurement",
                              f"the result has no finite {entity} {metric}"))
        else:
            other.append(("SKIP" if outcome == "skip" else "ERROR", r.get("code", ""),
                          r.get("reason", "")))
    if values:
        note = ""
        if other:
            note = f"{len(values)} of {len(runs)} runs ok; others: " + "; ".join(
                f"{s} {c}" for s, c, _ in other)
        return Side(statistics.median(values), detail=note, runs=values)
    state = "SKIP" if all(s == "SKIP" for s, _, _ in other) else "ERROR"
    first = next(o for o in other if o[0] == state)
    return Side(state=state, detail=f"{first[1]}: {first[2]}", code=first[1])


def torch_side(doc, probe, entity, metric, match=None):
    if not doc.get("available"):
        return Side(state="absent", detail=doc.get("reason", "no reference"))
    m = None
    for x in doc["measurements"]:
        if x.get("probe") == probe and x.get("entity") == entity and x.get("metric") == metric \
                and (match is None or match(x)):
            m = x
    if m is not None and isinstance(m.get("value"), (int, float)):
        return Side(float(m["value"]), runs=m.get("samples") or [])
    errs = [e for e in doc["errors"] if e.get("probe") == probe]
    if errs:
        return Side(state="ERROR", detail=f"{errs[0].get('code')}: {errs[0].get('reason')}",
                    code=str(errs[0].get("code", "")))
    return Side(state="absent", detail="the reference has no such measurement (cut short?)")


class Row:
    def __init__(self, quantity, unit, gf, ref, lo=None, hi=None, target_text="", note="",
                 exact_zero=False):
        self.quantity, self.unit, self.gf, self.ref = quantity, unit, gf, ref
        self.lo, self.hi, self.target_text, self.note = lo, hi, target_text, note
        self.exact_zero = exact_zero
        self.ratio = None
        self.met = None  # True, False, or None (no target)
        self.judged = False  # both numbers there
        if exact_zero:
            self.judged = gf.value is not None
            self.met = gf.value == 0 if self.judged else False
        elif lo is not None or hi is not None:
            if gf.value is not None and ref.value is not None and ref.value > 0:
                self.ratio = gf.value / ref.value
                self.judged = True
                self.met = (lo is None or self.ratio >= lo) and (hi is None or self.ratio <= hi)
            else:
                self.met = False
        elif gf.value is not None and ref.value is not None and ref.value > 0:
            self.ratio = gf.value / ref.value

    @property
    def targeted(self):
        return self.exact_zero or self.lo is not None or self.hi is not None

    def met_text(self):
        if not self.targeted:
            return ""
        if self.met:
            return "yes"
        return "NO" if self.judged else "not judged"

    def as_dict(self):
        return {
            "quantity": self.quantity, "unit": self.unit,
            "gpuforge": self.gf.value, "gpuforge_state": self.gf.state or "value",
            "gpuforge_detail": self.gf.detail, "gpuforge_runs": self.gf.runs,
            "pytorch": self.ref.value, "pytorch_state": self.ref.state or "value",
            "pytorch_detail": self.ref.detail, "pytorch_runs": self.ref.runs,
            "ratio": self.ratio, "target": self.target_text, "targeted": self.targeted,
            "met": self.met if self.targeted else None, "judged": self.judged, "note": self.note,
        }


def nccl_sizes(results, doc, expected):
    sizes = set(expected)
    for r in results.get("nccl.allreduce", []):
        for m in r.get("measurements") or []:
            ent = str(m.get("entity", ""))
            if ent.startswith("out-of-place "):
                try:
                    sizes.add(int(ent.split()[-1]))
                except ValueError:
                    pass
    return sorted(s for s in sizes if s >= 64 * MIB)


def gemm_dim_of(d, key="dim"):
    """The GEMM dimension a gpuforge run (params "dim") or a reference measurement (info
    "m_n_k", "8192x8192x8192") was made with; 8192, the probe's default, when not given."""
    v = (d or {}).get(key)
    if v is None or v == "":
        return 8192
    try:
        return int(str(v).split("x")[0])
    except ValueError:
        return -1


def gemm_dims(results, doc):
    dims = set()
    for r in results.get("gpu.gemm", []):
        dims.add(gemm_dim_of(r.get("params")))
    for x in doc.get("measurements", []):
        if x.get("probe") == "gpu.gemm":
            dims.add(gemm_dim_of(x.get("info"), "m_n_k"))
    return sorted(d for d in dims if d > 0) or [8192]


def fma_peak(results):
    """(peak TFLOP/s, its basis) from gpu.compute's info, the first ok run that states one."""
    for r in results.get("gpu.compute", []):
        m = find(r.get("measurements"), "gpu0", "fp32_tflops")
        info = (m or {}).get("info") or {}
        try:
            peak = float(info.get("peak_tflops", ""))
        except ValueError:
            continue
        if peak > 0 and math.isfinite(peak):
            return peak, info.get("peak_basis", "")
    return None


def read_nccl_tests(path):
    """nccl-tests all_reduce_perf output (one or several runs in one file): {size: [out-of-place
    algbw per run]}. Data lines are `size count type redop root time algbw busbw #wrong time
    algbw busbw #wrong` (nccl-tests src/util.cu, writeResultHeader); a line with a wrong
    element count is not a measurement."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) < 13 or not w[0].isdigit():
                continue
            try:
                size, algbw, wrong = int(w[0]), float(w[6]), w[8]
            except ValueError:
                continue
            if wrong in ("0", "N/A") and math.isfinite(algbw):
                out.setdefault(size, []).append(algbw)
    return out


def read_checks(path):
    """node_checks.sh's checks.jsonl: [{"check", "state", "detail", "expect"}]."""
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path, errors="replace") as f:
        for i, line in enumerate(f, 1):
            try:
                c = json.loads(line)
                if not isinstance(c, dict) or "check" not in c:
                    raise ValueError("not a check line")
            except ValueError as e:
                c = {"check": f"{path}:{i}", "state": "ERROR", "detail": str(e)}
            out.append(c)
    return out


def build_rows(results, doc, args):
    no_gf = args.no_gpuforge
    rows = []

    def pair(probe, entity, metric, ref_entity=None):
        return (gpuforge_side(results, probe, entity, metric, no_gf),
                torch_side(doc, probe, ref_entity or entity, metric))

    gf, ref = pair("gpu.copy", "gpu0", "bandwidth")
    rows.append(Row("HBM copy 1 GiB, read+write (gpu.copy)", "GB/s", gf, ref, lo=0.95,
                    target_text=">= 0.95"))
    gf, ref = pair("gpu.h2d", "gpu0", "bandwidth")
    rows.append(Row("host to device 256 MiB, pinned (gpu.h2d)", "GB/s", gf, ref, lo=0.95,
                    target_text=">= 0.95"))
    gf, ref = pair("gpu.d2h", "gpu0", "bandwidth")
    rows.append(Row("device to host 256 MiB, pinned (gpu.d2h)", "GB/s", gf, ref, lo=0.95,
                    target_text=">= 0.95"))
    for dim in gemm_dims(results, doc):
        gf = gpuforge_side(results, "gpu.gemm", "gpu0", "bf16_tflops", no_gf,
                           match=lambda r, d=dim: gemm_dim_of(r.get("params")) == d)
        ref = torch_side(doc, "gpu.gemm", "gpu0", "bf16_tflops",
                         match=lambda x, d=dim: gemm_dim_of(x.get("info"), "m_n_k") == d)
        rows.append(Row(f"bf16 GEMM {dim}^3 (gpu.gemm)", "TFLOP/s", gf, ref, lo=0.90,
                        target_text=">= 0.90"))
    if "gpu.compute" in results:
        gf = gpuforge_side(results, "gpu.compute", "gpu0", "fp32_tflops", no_gf)
        peak = fma_peak(results)
        ceiling = (Side(peak[0], detail=peak[1]) if peak else
                   Side(state="absent", detail="gpu.compute gave no peak_tflops"))
        rows.append(Row("fp32 FMA (gpu.compute) against its ceiling: SMs x fp32 lanes x 2 x "
                        "max SM clock (the PyTorch column holds the ceiling)", "TFLOP/s", gf,
                        ceiling, lo=0.90, target_text=">= 0.90 of the ceiling"))

    for size in nccl_sizes(results, doc, args.nccl_sizes):
        ent = f"out-of-place {size}"
        gf = gpuforge_side(results, "nccl.allreduce", ent, "algbw", no_gf)
        ref = torch_side(doc, "nccl.allreduce", ent, "algbw")
        note = ""
        if ref.value is None and doc.get("available"):
            fb = torch_side(doc, "nccl.allreduce", f"torch.distributed copy+all_reduce {size}",
                            "algbw")
            if fb.value is not None:
                ref, note = fb, "reference: torch.distributed copy+all_reduce (no direct NCCL)"
        rows.append(Row(f"NCCL all-reduce {size_text(size)} out-of-place algbw, 1 rank",
                        "GB/s", gf, ref, lo=0.95, hi=1.05, target_text="0.95 .. 1.05",
                        note=note))

    tests = read_nccl_tests(args.nccl_tests)
    for size in sorted(tests):
        gf = gpuforge_side(results, "nccl.allreduce", f"out-of-place {size}", "algbw", no_gf)
        vals = tests[size]
        ref = Side(statistics.median(vals), runs=vals)
        rows.append(Row(f"NCCL all-reduce {size_text(size)} out-of-place algbw, 1 rank, against "
                        "nccl-tests all_reduce_perf (the PyTorch column holds nccl-tests)",
                        "GB/s", gf, ref, lo=0.95, hi=1.05, target_text="0.95 .. 1.05"))

    gf = gpuforge_side(results, "nccl.allreduce", "allreduce", "wrong_total", no_gf)
    wrong_ref = [m.get("value") for m in doc.get("measurements", [])
                 if m.get("probe") == "nccl.allreduce" and m.get("metric") == "wrong"]
    ref = (Side(float(sum(wrong_ref))) if wrong_ref
           else torch_side(doc, "nccl.allreduce", "-", "wrong"))
    rows.append(Row("NCCL all-reduce wrong elements (all sizes)", "count", gf, ref,
                    target_text="gpuforge = 0", exact_zero=True))

    # Without targets: for the reader.
    gf, ref = pair("gpu.copy", "gpu0", "copy_bandwidth")
    rows.append(Row("HBM copy 1 GiB, bytes once (gpu.copy copy_bandwidth)", "GB/s", gf, ref))
    for size in nccl_sizes(results, doc, args.nccl_sizes):
        gf = gpuforge_side(results, "nccl.allreduce", f"in-place {size}", "time_us", no_gf)
        ref = torch_side(doc, "nccl.allreduce", f"in-place {size}", "time_us")
        rows.append(Row(f"NCCL all-reduce {size_text(size)} in-place time (a no-op on 1 rank)",
                        "us", gf, ref))
    for size in nccl_sizes(results, doc, args.nccl_sizes):
        gf = gpuforge_side(results, "nccl.allreduce", f"out-of-place {size}", "algbw", no_gf)
        ref = torch_side(doc, "nccl.allreduce", f"torch.distributed copy+all_reduce {size}",
                         "algbw")
        rows.append(Row(f"NCCL {size_text(size)}: gpuforge out-of-place vs torch.distributed "
                        "copy+all_reduce", "GB/s", gf, ref))
    return rows


def health_row(results, no_gf):
    runs = results.get("gpu.health", [])
    if not runs:
        return {"quantity": "GPU health (gpu.health)", "state": "absent",
                "detail": no_gf or "did not run"}
    r = runs[-1]
    state = {"ok": "OK", "skip": "SKIP"}.get(r.get("outcome"), "ERROR")
    if state != "OK":
        state = f"{state} {r.get('code', '')}".strip()
    detail = (f"{len(r.get('measurements') or [])} measurements" if state == "OK"
              else r.get("reason", ""))
    return {"quantity": "GPU health (gpu.health)", "state": state, "detail": detail}


def exit_text(rc, meanings):
    if rc is None or rc == "":
        return "not run"
    try:
        n = int(rc)
    except ValueError:
        return str(rc)
    return f"{meanings.get(n, 'exit')} ({n})"


def problems_of(results, doc):
    out = []
    for probe, runs in results.items():
        seen = {}  # the same SKIP or ERROR in several runs is one line
        for i, r in enumerate(runs, 1):
            if r.get("outcome") != "ok":
                state = "SKIP" if r.get("outcome") == "skip" else "ERROR"
                key = (state, r.get("code", ""), r.get("reason", ""))
                seen.setdefault(key, []).append(str(i))
        for (state, code, reason), which in seen.items():
            runs_text = f"run {which[0]}" if len(which) == 1 else f"runs {', '.join(which)}"
            out.append(f"gpuforge {probe} {runs_text} of {len(runs)}: {state} {code}: {reason}")
    if not doc.get("available"):
        out.append(f"PyTorch reference absent: {doc.get('reason', '')}")
    for e in doc.get("errors", []):
        out.append(f"PyTorch {e.get('probe')}: ERROR {e.get('code')}: {e.get('reason')}")
    return out


def validate_state(path, rc):
    """validate's state and detail from its JSON (gpuforge.validate/v1): the results' states
    counted, never the exit status alone, since an all-SKIP run exits 0 and proved nothing."""
    if not path or not os.path.exists(path):
        return exit_text(rc, {0: "PASS", 1: "FAIL", 2: "ERROR"}), "no JSON output; exit status only"
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError:
        return "ERROR", "its output is not JSON"
    results = doc.get("results") if isinstance(doc, dict) else None
    if doc.get("schema") != "gpuforge.validate/v1" or not isinstance(results, list):
        return "ERROR", "its JSON is not gpuforge.validate/v1 with a results list"
    counts = {}
    for r in results:
        s = r.get("state") if isinstance(r, dict) else None
        if isinstance(s, str):
            counts[s] = counts.get(s, 0) + 1
    measured = counts.get("PASS", 0) + counts.get("WARN", 0) + counts.get("FAIL", 0) + \
        counts.get("ERROR", 0)
    if counts.get("ERROR"):
        state = "ERROR"
    elif counts.get("FAIL"):
        state = "FAIL"
    elif measured == 0:
        state = "SKIP"
    elif counts.get("WARN"):
        state = "WARN"
    else:
        state = "PASS"
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no results"
    if doc.get("verdict"):
        detail = f"{doc['verdict']}; {detail}"
    return state, detail


def render(rows, extra, problems, verdict, env, notes):
    lines = ["# gpuforge probes against PyTorch on this GPU", ""]
    for k, v in env.items():
        if v:
            lines.append(f"- {k}: {v}")
    lines += ["", "| quantity | gpuforge | PyTorch | ratio | target | met? |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.quantity} [{r.unit}] | {r.gf.cell()} | {r.ref.cell()} | "
                     f"{'' if r.ratio is None else f'{r.ratio:.3f}'} | {r.target_text} | "
                     f"{r.met_text()} |")
    for e in extra:
        lines.append(f"| {e['quantity']} | {e['state']} | | | | |")
    lines += ["", f"**Verdict: {verdict}**", ""]
    details = []
    for r in rows:
        for side, s in (("gpuforge", r.gf), ("PyTorch", r.ref)):
            if s.detail and s.value is not None:
                details.append(f"- {r.quantity}, {side}: {s.detail}")
        if r.note:
            details.append(f"- {r.quantity}: {r.note}")
    for e in extra:
        if e.get("detail"):
            details.append(f"- {e['quantity']}: {e['state']}: {e['detail']}")
    if details:
        lines += ["Details:", ""] + details + [""]
    if problems:
        lines += ["Problems (SKIP, ERROR, absent):", ""] + [f"- {p}" for p in problems] + [""]
    lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


NOTES = [
    "Each gpuforge probe ran in its own process, several times; its value is the median of "
    "the runs whose outcome was ok (each run itself the median of its timed rounds). "
    "PyTorch's value is the median of as many runs in one process, each measured the same way.",
    "Copies: CUDA events around `iters` copies on one non-blocking stream, after `warmup`, "
    "median of `repeats` rounds. gpu.copy's bandwidth counts read+write (2 x bytes per copy), "
    "h2d and d2h the bytes once; host memory pinned on both sides.",
    "GEMM: bf16 A, B and D with fp32 accumulation, 2 x dim^3 FLOPs per multiply; gpuforge "
    "calls cuBLASLt directly, PyTorch torch.matmul (its own choice of cuBLAS/cuBLASLt "
    "algorithm), both on inputs drawn from {-2, -1, -0.5, 0.5, 1, 2}.",
    "Timing, NCCL: both sides time on a host clock around the loop, as nccl-tests does "
    "(gpuforge: std::chrono::steady_clock from the first ncclAllReduce to the end of the wait "
    "on every stream; PyTorch reference: time.perf_counter from the first call to the end of "
    "stream.synchronize()). Copies and GEMM: CUDA events on both sides.",
    "NCCL: one rank, float32 sum. With one rank an out-of-place all-reduce is a device copy "
    "of SIZE bytes and an in-place one does nothing, so busbw is 0 and algbw = SIZE / time is "
    "the figure compared. The reference is ncclAllReduce called directly (ctypes) on the "
    "libnccl PyTorch loaded, the same call the probe makes; torch.distributed cannot issue an "
    "out-of-place all-reduce, and its copy+all_reduce stand-in adds the process group's "
    "per-call host work, so it is shown without a target.",
    "ratio = gpuforge / PyTorch. A SKIP, ERROR or absent value is never a number and never "
    "meets a target.",
]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpuforge", required=True, help="gpuforge.probe/v1 lines, one per run")
    p.add_argument("--torch", required=True, help="torch_ref.py's JSON")
    p.add_argument("--out", default="", help="directory for table.md and table.json")
    p.add_argument("--nccl-sizes", default=",".join(map(str, DEFAULT_NCCL_SIZES)),
                   help="NCCL sizes expected (bytes, comma-separated)")
    p.add_argument("--no-gpuforge", default="", help="why there is no gpuforge binary")
    p.add_argument("--topo-rc", default="", help="exit status of nccl_topo_check.sh")
    p.add_argument("--validate-rc", default="", help="exit status of gpuforge validate")
    p.add_argument("--validate-json", default="", help="gpuforge validate's JSON output")
    p.add_argument("--validate-note", default="", help="why validate did not run")
    p.add_argument("--env", default="", help="KEY=VALUE lines to show above the table")
    p.add_argument("--checks", default="", help="node_checks.sh's checks.jsonl")
    p.add_argument("--nccl-tests", default="", help="all_reduce_perf output, one or more runs")
    args = p.parse_args(argv)
    args.nccl_sizes = [int(s) for s in args.nccl_sizes.split(",") if s.strip()]

    results = load_gpuforge(args.gpuforge)
    doc = load_torch(args.torch)
    rows = build_rows(results, doc, args)

    extra = [health_row(results, args.no_gpuforge)]
    if args.topo_rc != "":
        extra.append({"quantity": "NCCL accepts the rendered topology file (nccl_topo_check.sh)",
                      "state": exit_text(args.topo_rc, {0: "PASS", 1: "FAIL", 77: "SKIP"}),
                      "detail": ""})
    vstate, vdetail = validate_state(args.validate_json, args.validate_rc)
    if args.validate_note:
        vdetail = args.validate_note
    extra.append({"quantity": "gpuforge validate --local --checks gpu,nccl", "state": vstate,
                  "detail": vdetail})

    checks = read_checks(args.checks)
    for c in checks:
        extra.append({"quantity": f"node check {c.get('check')}", "state": str(c.get("state")),
                      "detail": str(c.get("detail", ""))})
    bad_checks = [c.get("check") for c in checks if c.get("state") in ("FAIL", "ERROR")]

    targeted = [r for r in rows if r.targeted]
    # Something was compared: a ratio row with both numbers (the wrong-elements row alone, a
    # count on gpuforge's side, compares nothing).
    judged = [r for r in targeted if r.judged and not r.exact_zero]
    if not judged:
        verdict, code = "could not run: nothing to compare (see Problems)", 77
    elif all(r.met for r in targeted):
        verdict, code = f"all {len(targeted)} targets met", 0
    else:
        missed = [r.quantity for r in targeted if not r.met]
        verdict, code = f"{len(missed)} of {len(targeted)} targets missed: " + "; ".join(missed), 1
    if checks:
        counts = {}
        for c in checks:
            counts[c.get("state")] = counts.get(c.get("state"), 0) + 1
        verdict += "; node checks: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        if bad_checks:
            verdict += " (" + ", ".join(map(str, bad_checks)) + ")"
            if code == 0:
                code = 1

    env = {}
    if args.env and os.path.exists(args.env):
        with open(args.env) as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k.strip()] = v.strip()
    tenv = doc.get("env", {})
    for k in ("device", "torch", "torch_cuda", "nccl_torch", "nccl_direct", "cublaslt_library"):
        if tenv.get(k):
            env.setdefault(f"pytorch {k}", tenv[k])
    for r in (results.get("gpu.gemm") or []):
        for m in r.get("measurements") or []:
            if m.get("info", {}).get("library"):
                env.setdefault("gpuforge cuBLASLt", m["info"]["library"])

    problems = problems_of(results, doc)
    table = render(rows, extra, problems, verdict, env, NOTES)
    print(table)
    out_dir = args.out or os.path.dirname(os.path.abspath(args.gpuforge))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(out_dir, "table.json"), "w") as f:
        json.dump({"schema": "gpuforge.bench.gpu_table/v1", "verdict": verdict, "exit": code,
                   "rows": [r.as_dict() for r in rows], "other": extra, "problems": problems,
                   "env": env, "notes": NOTES}, f, indent=1)
        f.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
