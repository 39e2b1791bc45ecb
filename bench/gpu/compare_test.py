#!/usr/bin/env python3
"""Checks compare.py's arithmetic and target logic on made-up results; plain python3, no pytest.

    python3 bench/gpu/compare_test.py      # prints one line per case, exits 1 on a failure
"""

import contextlib
import io
import json
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

MIB = 1 << 20
SIZES = (64 * MIB, 256 * MIB, 1024 * MIB)
FAILED = []


def probe_line(probe, outcome="ok", measurements=(), code="", reason=""):
    return {"schema": "gpuforge.probe/v1", "probe": probe, "outcome": outcome, "code": code,
            "reason": reason, "params": {}, "seconds": 1.0, "log": [],
            "measurements": [dict(m, samples=[m["value"]], info={}) for m in measurements]}


def m(entity, metric, value, unit="GB/s"):
    return {"entity": entity, "metric": metric, "value": value, "unit": unit}


def gf_runs(copy=(4100, 4000, 4200), h2d=(54, 54, 54), d2h=(53, 53, 53), gemm=(700, 690, 710),
            nccl=((2000, 2010, 1990),) * 3, wrong=0):
    """Three runs of every probe, as run.sh writes them (round by round)."""
    lines = [probe_line("gpu.health", measurements=[m("gpu0", "temperature", 40, "C")])]
    for i in range(3):
        lines.append(probe_line("gpu.copy", measurements=[
            m("gpu0", "bandwidth", copy[i]), m("gpu0", "copy_bandwidth", copy[i] / 2)]))
        lines.append(probe_line("gpu.h2d", measurements=[m("gpu0", "bandwidth", h2d[i])]))
        lines.append(probe_line("gpu.d2h", measurements=[m("gpu0", "bandwidth", d2h[i])]))
        lines.append(probe_line("gpu.gemm", measurements=[
            m("gpu0", "bf16_tflops", gemm[i], "TFLOP/s")]))
        ms = []
        for size, vals in zip(SIZES, nccl):
            ms += [m(f"out-of-place {size}", "algbw", vals[i]),
                   m(f"out-of-place {size}", "time_us", size / 1e3 / vals[i], "us"),
                   m(f"out-of-place {size}", "busbw", 0), m(f"out-of-place {size}", "wrong", 0, ""),
                   m(f"in-place {size}", "time_us", 0.5, "us")]
        ms += [m("allreduce", "wrong_total", wrong, ""), m("allreduce", "ranks", 1, "")]
        lines.append(probe_line("nccl.allreduce", measurements=ms))
    return lines


def ref_doc(copy=4258.0, h2d=55.1, d2h=55.1, gemm=760.0, nccl=(2050.0,) * 3, direct=True,
            available=True):
    doc = {"schema": "gpuforge.bench.torch_ref/v1", "available": available,
           "reason": "" if available else "PyTorch is absent: no module named torch",
           "env": {"torch": "2.11.0", "device": "NVIDIA H200"}, "measurements": [],
           "errors": []}
    if not available:
        return doc

    def add(probe, entity, metric, value, unit="GB/s"):
        doc["measurements"].append({"probe": probe, "entity": entity, "metric": metric,
                                    "value": value, "unit": unit, "samples": [value] * 3,
                                    "info": {}})

    add("gpu.copy", "gpu0", "bandwidth", copy)
    add("gpu.copy", "gpu0", "copy_bandwidth", copy / 2)
    add("gpu.h2d", "gpu0", "bandwidth", h2d)
    add("gpu.d2h", "gpu0", "bandwidth", d2h)
    add("gpu.gemm", "gpu0", "bf16_tflops", gemm, "TFLOP/s")
    for size, v in zip(SIZES, nccl):
        if direct:
            add("nccl.allreduce", f"out-of-place {size}", "algbw", v)
            add("nccl.allreduce", f"out-of-place {size}", "wrong", 0, "count")
            add("nccl.allreduce", f"in-place {size}", "time_us", 0.6, "us")
        add("nccl.allreduce", f"torch.distributed copy+all_reduce {size}", "algbw", v * 0.9)
        add("nccl.allreduce", f"torch.distributed copy+all_reduce {size}", "wrong", 0, "count")
    return doc


def run(lines, doc, *extra):
    """compare.main on the given inputs: (exit code, table.json, table.md)."""
    d = tempfile.mkdtemp(prefix="compare-test.")
    jsonl = os.path.join(d, "gpuforge.jsonl")
    with open(jsonl, "w") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    ref = os.path.join(d, "torch_ref.json")
    if doc is not None:
        with open(ref, "w") as f:
            json.dump(doc, f)
    with contextlib.redirect_stdout(io.StringIO()):
        code = compare.main(["--gpuforge", jsonl, "--torch", ref, "--out", d, *extra])
    with open(os.path.join(d, "table.json")) as f:
        table = json.load(f)
    with open(os.path.join(d, "table.md")) as f:
        md = f.read()
    return code, table, md


def row(table, start):
    hits = [r for r in table["rows"] if r["quantity"].startswith(start)]
    assert len(hits) == 1, f"{len(hits)} rows start with {start!r}"
    return hits[0]


def check(name, cond, detail=""):
    if not cond:
        FAILED.append(name)
    print(f"{'ok  ' if cond else 'FAIL'} {name}{'' if cond else ': ' + detail}")


def close(a, b):
    return a is not None and b is not None and abs(a - b) < 1e-9


def main():
    # 1. Everything met: medians of three runs, ratios gpuforge / PyTorch.
    code, t, md = run(gf_runs(), ref_doc())
    check("all met: exit 0", code == 0, f"exit {code}, {t['verdict']}")
    r = row(t, "HBM copy 1 GiB, read+write")
    check("copy: median of runs (4100, 4000, 4200) is 4100", r["gpuforge"] == 4100, str(r))
    check("copy: ratio 4100 / 4258", close(r["ratio"], 4100 / 4258), str(r["ratio"]))
    check("copy: met at >= 0.95", r["met"] is True and r["target"] == ">= 0.95")
    r = row(t, "bf16 GEMM")
    check("gemm: median 700, ratio 700 / 760", r["gpuforge"] == 700 and close(r["ratio"], 700 / 760))
    r = row(t, "NCCL all-reduce 64 MiB out-of-place")
    check("nccl 64 MiB: ratio 2000 / 2050, met", close(r["ratio"], 2000 / 2050) and r["met"])
    check("three NCCL sizes, each targeted",
          len([x for x in t["rows"] if "out-of-place algbw" in x["quantity"] and x["targeted"]]) == 3)
    r = row(t, "NCCL all-reduce wrong elements")
    check("wrong elements 0: met", r["gpuforge"] == 0 and r["met"] is True)
    r = row(t, "HBM copy 1 GiB, bytes once")
    check("copy_bandwidth shown without a target", not r["targeted"] and close(r["ratio"], 2050 / 2129))
    check("table.md has the header", "| quantity | gpuforge | PyTorch | ratio | target | met? |" in md)

    # 2. GEMM at 0.89 of the reference misses its 0.90.
    code, t, _ = run(gf_runs(gemm=(676.4, 676.4, 676.4)), ref_doc(gemm=760.0))
    r = row(t, "bf16 GEMM")
    check("gemm 0.89: exit 1", code == 1, f"exit {code}")
    check("gemm 0.89: missed", r["met"] is False and r["judged"] and close(r["ratio"], 676.4 / 760))
    check("gemm 0.89: copy still met", row(t, "HBM copy 1 GiB, read+write")["met"] is True)
    check("verdict names the missed row", "bf16 GEMM" in t["verdict"])

    # 3. The NCCL band: 1.05 is in, 1.06 and 0.94 are out.
    code, t, _ = run(gf_runs(nccl=((1050,) * 3, (1060,) * 3, (940,) * 3)),
                     ref_doc(nccl=(1000.0, 1000.0, 1000.0)))
    check("nccl 1.05: met (the band is inclusive)", row(t, "NCCL all-reduce 64 MiB out-of")["met"] is True)
    check("nccl 1.06: missed", row(t, "NCCL all-reduce 256 MiB out-of")["met"] is False)
    check("nccl 0.94: missed", row(t, "NCCL all-reduce 1 GiB out-of")["met"] is False)
    check("nccl band: exit 1", code == 1)

    # 4. No GPU: every probe SKIPs, PyTorch absent: SKIP never a number, exit 77.
    skip = [probe_line(p, "skip", code="no_cuda_driver", reason="libcuda.so.1: cannot open")
            for p in ("gpu.health", "gpu.copy", "gpu.h2d", "gpu.d2h", "gpu.gemm", "nccl.allreduce")
            for _ in range(3)]
    code, t, md = run(skip, ref_doc(available=False))
    check("all SKIP: exit 77", code == 77, f"exit {code}")
    r = row(t, "HBM copy 1 GiB, read+write")
    check("SKIP has no number", r["gpuforge"] is None and r["gpuforge_state"] == "SKIP"
          and r["ratio"] is None and r["met"] is False and not r["judged"])
    check("SKIP shown as SKIP with its code", "| SKIP no_cuda_driver | absent |" in md)
    check("SKIP reason listed under Problems", "SKIP no_cuda_driver: libcuda.so.1: cannot open" in md)
    check("absent reference listed", "PyTorch reference absent" in md)

    # 5. One run of three fails: the median of the two good ones, the failure reported.
    lines = gf_runs(copy=(4000, 0, 4200))
    copies = [i for i, x in enumerate(lines) if x["probe"] == "gpu.copy"]
    lines[copies[1]] = probe_line("gpu.copy", "error", code="cuda_error", reason="cuMemAlloc failed")
    code, t, md = run(lines, ref_doc())
    r = row(t, "HBM copy 1 GiB, read+write")
    check("2 of 3 ok: median of 4000 and 4200", r["gpuforge"] == 4100, str(r["gpuforge"]))
    check("2 of 3 ok: noted", "2 of 3 runs ok" in r["gpuforge_detail"])
    check("2 of 3 ok: error under Problems", "gpu.copy run 2 of 3: ERROR cuda_error" in md)

    # 6. No nccl.allreduce in this gpuforge: its rows are ERROR, the others still judged.
    lines = [x for x in gf_runs() if x["probe"] != "nccl.allreduce"]
    lines += [probe_line("nccl.allreduce", "error", code="no_such_probe",
                         reason="this gpuforge has no probe nccl.allreduce")] * 3
    code, t, md = run(lines, ref_doc())
    r = row(t, "NCCL all-reduce 1 GiB out-of")
    check("no probe: NCCL row ERROR, not met", r["gpuforge_state"] == "ERROR" and r["met"] is False)
    check("no probe: exit 1", code == 1)
    check("no probe: GEMM still met", row(t, "bf16 GEMM")["met"] is True)

    # 7. No direct NCCL in the reference: torch.distributed copy+all_reduce, said so.
    code, t, _ = run(gf_runs(), ref_doc(direct=False))
    r = row(t, "NCCL all-reduce 256 MiB out-of")
    check("fallback reference used", close(r["pytorch"], 2050 * 0.9) and "torch.distributed" in r["note"])

    # 8. Wrong elements fail even when the bandwidth is fine.
    code, t, _ = run(gf_runs(wrong=3), ref_doc())
    r = row(t, "NCCL all-reduce wrong elements")
    check("wrong 3: missed, exit 1", r["met"] is False and code == 1)

    # 9. No gpuforge binary at all: nothing to compare, exit 77, the reason shown.
    lines = [probe_line(p, "error", code="no_gpuforge", reason="could not be built")
             for p in ("gpu.copy", "gpu.h2d", "gpu.d2h", "gpu.gemm", "nccl.allreduce")]
    code, t, md = run(lines, ref_doc(), "--no-gpuforge", "could not be built")
    check("no gpuforge: exit 77", code == 77, f"exit {code}")
    check("no gpuforge: PyTorch numbers still shown", row(t, "bf16 GEMM")["pytorch"] == 760)

    # 10. A garbled line and a reference cut short do not crash the table.
    lines = gf_runs() + ["{not json"]
    doc = ref_doc()
    doc["measurements"] = [x for x in doc["measurements"] if x["probe"] != "gpu.gemm"]
    code, t, md = run(lines, doc, "--topo-rc", "0", "--validate-rc", "1")
    check("garbled line: ERROR bad_line under Problems", "bad_line" in md)
    check("reference without gemm: not judged, exit 1",
          row(t, "bf16 GEMM")["judged"] is False and code == 1)
    check("topology check and validate shown", "PASS (0)" in md and "FAIL (1)" in md)

    # 11. Missing reference file: absent, not a crash.
    code, t, _ = run(gf_runs(), None)
    check("no reference file: exit 77", code == 77, f"exit {code}")

    # 12. validate's state comes from its JSON: an all-SKIP run exits 0 and is SKIP, not PASS.
    d = tempfile.mkdtemp(prefix="compare-test.")

    def validate_json(states):
        path = os.path.join(d, f"validate-{len(states)}-{'-'.join(states)}.json")
        with open(path, "w") as f:
            json.dump({"schema": "gpuforge.validate/v1", "cluster": "c", "strict": False,
                       "verdict": "as gpuforge wrote it", "exit_code": 0,
                       "results": [{"check": "gpu.copy", "node": "n", "entity": "gpu0",
                                    "state": st, "code": ""} for st in states]}, f)
        return path

    def validate_row(states):
        _, t, _ = run(gf_runs(), ref_doc(), "--validate-rc", "0",
                      "--validate-json", validate_json(states))
        return [x for x in t["other"] if x["quantity"].startswith("gpuforge validate")][0]

    v = validate_row(["SKIP", "SKIP", "SKIP"])
    check("all-SKIP validate with exit 0: SKIP", v["state"] == "SKIP", v["state"])
    check("all-SKIP validate: counts shown", "SKIP 3" in v["detail"], v["detail"])
    check("PASS and SKIP: PASS", validate_row(["PASS", "SKIP"])["state"] == "PASS")
    check("a WARN: WARN", validate_row(["PASS", "WARN"])["state"] == "WARN")
    check("a FAIL among passes: FAIL", validate_row(["PASS", "FAIL"])["state"] == "FAIL")
    check("no JSON: the exit status, said so",
          "exit status only" in [x for x in run(gf_runs(), ref_doc(), "--validate-rc", "0")[1]["other"]
                                 if x["quantity"].startswith("gpuforge validate")][0]["detail"])
    check("notes say NCCL is timed on a host clock on both sides",
          any("host clock around the loop" in n for n in compare.NOTES))

    print(f"{'FAILED: ' + ', '.join(FAILED) if FAILED else 'all compare.py checks passed'}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
