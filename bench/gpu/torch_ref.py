#!/usr/bin/env python3
"""The PyTorch side of bench/gpu/run.sh: what gpuforge's GPU probes measure, measured with
PyTorch the way the probes measure it (src/probe/gpu/copy.cc, gemm.cc, cuda_api.cc TimeRounds).

    python3 bench/gpu/torch_ref.py [--out FILE] [--runs 3] [--warmup 5] [--iters 20]
        [--repeats 5] [--copy-size 1GiB] [--pcie-size 256MiB] [--gemm-dim 8192,16384]
        [--nccl-min 64MiB] [--nccl-max 1GiB] [--nccl-factor 4] [--nccl-warmup 5]
        [--nccl-iters 20] [--only copy,h2d,d2h,gemm,nccl]

Prints ONE JSON object (schema gpuforge.bench.torch_ref/v1); with --out it also rewrites that
file after every quantity, so a run cut short by a timeout leaves what it had measured. Its
"measurements" have the shape of gpuforge.probe/v1's plus "probe": the probe, entity and metric
gpuforge reports for the same quantity, so compare.py pairs them by name.

How each quantity is measured (one timed round = CUDA events around `iters` operations on one
non-blocking stream, after `warmup` untimed ones; a run's value = the median of `repeats`
rounds; the reported value = the median of `runs` runs, as run.sh takes the median of three
gpuforge processes):
  gpu.copy  bandwidth       dst.copy_(src), int32 random non-zero data, `copy-size` bytes
                            (cudaMemcpyAsync device to device), counted read+write: 2 x bytes,
                            as gpu.copy's "bandwidth"; copy_bandwidth counts the bytes once.
  gpu.h2d   bandwidth       device.copy_(pinned host, non_blocking=True), bytes counted once.
  gpu.d2h   bandwidth       pinned host.copy_(device, non_blocking=True), bytes counted once.
  gpu.gemm  bf16_tflops     torch.matmul(a, b, out=d), bf16 inputs and output, fp32
                            accumulation (reduced-precision bf16 reductions switched off), inputs
                            drawn at random from gpu.gemm's values {-2, -1, -0.5, 0.5, 1, 2};
                            2 x dim^3 FLOPs per multiply.
  nccl.allreduce, per size from nccl-min to nccl-max (x nccl-factor), float32 sum, one rank,
  `nccl-warmup` untimed operations, then one timed round of `nccl-iters` (as nccl-tests),
  median of `runs` such rounds:
    "out-of-place SIZE"   ncclAllReduce(sendbuff, recvbuff) called directly (ctypes) on the
                          libnccl.so.2 PyTorch loaded, on PyTorch's buffers and stream: exactly
                          the NCCL call gpuforge's probe makes. With one rank NCCL copies
                          sendbuff to recvbuff, so this is a device copy of SIZE bytes.
                          time_us per operation, algbw = SIZE / time (GB/s, 10^9).
    "in-place SIZE"       the same call with sendbuff == recvbuff: a no-op with one rank.
    "torch.distributed copy+all_reduce SIZE"   out.copy_(inp); dist.all_reduce(out) through
                          the process group (backend nccl, world size 1): the same bytes moved,
                          plus the process group's own per-call work.
    "torch.distributed in-place SIZE"          dist.all_reduce(x) alone.
  Every operation's result is checked after timing (copies: every element; all-reduce: every
  element equals the input; GEMM: a 32 x 32 sample against float64).
"""

import argparse
import ctypes
import json
import os
import re
import statistics
import sys
import time

SCHEMA = "gpuforge.bench.torch_ref/v1"

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_size(text):
    """'1GiB' -> 1073741824, '64MiB', '256MB' (decimal), '4096' (bytes)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 1GiB, 256MiB, 4096)")
    value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value != int(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}")
    return int(value)


def sizes_from(lo, hi, factor):
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


def log(msg):
    print(f"torch_ref: {msg}", file=sys.stderr, flush=True)


class Report:
    def __init__(self, args):
        self.path = args.out
        self.started = time.time()
        self.doc = {
            "schema": SCHEMA,
            "available": False,
            "reason": "",
            "env": {},
            "params": {k: v for k, v in vars(args).items() if k != "out"},
            "measurements": [],
            "errors": [],
            "seconds": 0.0,
        }

    def add(self, probe, entity, metric, value, unit, samples, info):
        self.doc["measurements"].append({
            "probe": probe, "entity": entity, "metric": metric, "value": value, "unit": unit,
            "samples": samples, "info": {k: str(v) for k, v in info.items()}})

    def error(self, probe, code, reason):
        log(f"{probe}: ERROR {code}: {reason}")
        self.doc["errors"].append({"probe": probe, "code": code, "reason": reason})

    def save(self):
        self.doc["seconds"] = round(time.time() - self.started, 3)
        if not self.path:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path)


def loaded_library(fragment):
    """Path of the first mapped shared object whose file name contains fragment."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if fragment in os.path.basename(path):
                    return os.path.realpath(path)
    except OSError:
        pass
    return ""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="", help="also write the JSON here, after every quantity")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--copy-size", type=parse_size, default=parse_size("1GiB"))
    p.add_argument("--pcie-size", type=parse_size, default=parse_size("256MiB"))
    p.add_argument("--gemm-dim", type=lambda t: [int(x) for x in t.split(",") if x.strip()],
                   default=[8192], help="one or more M = N = K, comma-separated")
    p.add_argument("--nccl-min", type=parse_size, default=parse_size("64MiB"))
    p.add_argument("--nccl-max", type=parse_size, default=parse_size("1GiB"))
    p.add_argument("--nccl-factor", type=int, default=4)
    p.add_argument("--nccl-warmup", type=int, default=5)
    p.add_argument("--nccl-iters", type=int, default=20)
    p.add_argument("--only", default="copy,h2d,d2h,gemm,nccl")
    args = p.parse_args()
    if args.runs < 1 or args.iters < 1 or args.repeats < 1 or args.nccl_iters < 1:
        p.error("--runs, --iters, --repeats and --nccl-iters must be at least 1")
    if args.nccl_factor < 2:
        p.error("--nccl-factor must be at least 2")
    for name in ("copy_size", "pcie_size", "nccl_min", "nccl_max"):
        if getattr(args, name) % 4:
            p.error(f"--{name.replace('_', '-')} must be a multiple of 4 bytes")
    only = {w.strip() for w in args.only.split(",") if w.strip()}

    rep = Report(args)
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no reference here"
        rep.doc["reason"] = f"PyTorch is absent: {type(e).__name__}: {e}"
        return finish(rep)
    rep.doc["env"]["torch"] = torch.__version__
    rep.doc["env"]["torch_cuda"] = str(torch.version.cuda)
    if not torch.cuda.is_available():
        rep.doc["reason"] = f"PyTorch {torch.__version__} sees no CUDA GPU"
        return finish(rep)

    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(dev)
    rep.doc["available"] = True
    rep.doc["env"].update({
        "device": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "python": sys.version.split()[0],
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
    })
    try:
        rep.doc["env"]["nccl_torch"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception as e:  # noqa: BLE001
        rep.doc["env"]["nccl_torch"] = f"unknown ({e})"
    rep.save()

    bench = Bench(torch, dev, args, rep)
    steps = [("copy", "gpu.copy", bench.copy), ("h2d", "gpu.h2d", bench.h2d),
             ("d2h", "gpu.d2h", bench.d2h), ("gemm", "gpu.gemm", bench.gemm),
             ("nccl", "nccl.allreduce", bench.allreduce)]
    for name, probe, fn in steps:
        if name not in only:
            continue
        t0 = time.time()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one quantity failing must not lose the others
            rep.error(probe, "exception", f"{type(e).__name__}: {e}")
        log(f"{probe}: {time.time() - t0:.1f} s")
        rep.save()
        torch.cuda.empty_cache()
    for frag, key in (("libcublasLt.so", "cublaslt_library"), ("libcublas.so", "cublas_library"),
                      ("libnccl.so", "nccl_library"), ("libcudart.so", "cudart_library")):
        rep.doc["env"][key] = loaded_library(frag)
    return finish(rep)


def finish(rep):
    if not rep.doc["available"]:
        log(f"no reference: {rep.doc['reason']}")
    rep.save()
    print(json.dumps(rep.doc))
    return 0


class Bench:
    def __init__(self, torch, dev, args, rep):
        self.torch = torch
        self.dev = dev
        self.a = args
        self.rep = rep
        self.stream = torch.cuda.Stream(device=dev)  # non-blocking, as gpuforge's cuStreamCreate

    # One timed round: events around `iters` ops on the stream; returns seconds per round.
    def rounds(self, op, warmup, iters, repeats):
        torch = self.torch
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            for _ in range(warmup):
                op()
            self.stream.synchronize()
            out = []
            for _ in range(repeats):
                start.record(self.stream)
                for _ in range(iters):
                    op()
                stop.record(self.stream)
                stop.synchronize()
                ms = start.elapsed_time(stop)
                if not ms > 0:
                    raise RuntimeError(f"the events of a timed round are {ms} ms apart")
                out.append(ms / 1e3)
        return out

    # One timed round on the host clock, as nccl-tests and gpuforge's nccl.allreduce time: the
    # stream drained, then time.perf_counter from the first op to the end of synchronize().
    def rounds_host(self, op, warmup, iters, repeats):
        with self.torch.cuda.stream(self.stream):
            for _ in range(warmup):
                op()
            self.stream.synchronize()
            out = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(iters):
                    op()
                self.stream.synchronize()
                s = time.perf_counter() - t0
                if not s > 0:
                    raise RuntimeError(f"a timed round took {s} s")
                out.append(s)
        return out

    # `runs` runs of (warmup + repeats rounds); rate(seconds_per_round) per round; a run's value
    # is the median of its rounds, the result the median of the runs. clock: "events" (CUDA
    # events on the stream) or "host" (rounds_host).
    def measure(self, op, rate, warmup, iters, repeats, clock="events"):
        timed = self.rounds if clock == "events" else self.rounds_host
        runs, rounds = [], []
        for _ in range(self.a.runs):
            r = [rate(s) for s in timed(op, warmup, iters, repeats)]
            rounds.append([round(x, 4) for x in r])
            runs.append(statistics.median(r))
        return statistics.median(runs), runs, rounds

    def _copy(self, probe, direction):
        torch, a = self.torch, self.a
        nbytes = a.copy_size if direction == "d2d" else a.pcie_size
        words = nbytes // 4
        hi = 2**31 - 1
        if direction == "d2d":
            src = torch.randint(1, hi, (words,), dtype=torch.int32, device=self.dev)
            dst = torch.full_like(src, -559038737)  # 0xdeadbeef, as gpu.copy poisons
            what = "dst.copy_(src): cudaMemcpyAsync device to device"
        elif direction == "h2d":
            src = torch.empty(words, dtype=torch.int32, pin_memory=True).random_(1, hi)
            dst = torch.full((words,), -559038737, dtype=torch.int32, device=self.dev)
            what = "device.copy_(pinned host, non_blocking=True): cudaMemcpyAsync host to device"
        else:
            src = torch.randint(1, hi, (words,), dtype=torch.int32, device=self.dev)
            dst = torch.full((words,), -559038737, dtype=torch.int32).pin_memory()
            what = "pinned host.copy_(device, non_blocking=True): cudaMemcpyAsync device to host"
        torch.cuda.synchronize()

        def op():
            dst.copy_(src, non_blocking=True)

        counted = 2 * nbytes if direction == "d2d" else nbytes
        per_round = counted * a.iters
        value, runs, rounds = self.measure(op, lambda s: per_round / s / 1e9,
                                           a.warmup, a.iters, a.repeats)
        torch.cuda.synchronize()
        if direction == "d2d":
            same = bool(torch.equal(dst, src))
        else:
            same = bool(torch.equal(dst.cpu(), src.cpu()))
        if not same:
            raise RuntimeError(f"{probe}: the destination differs from the source after timing")
        info = {"size": nbytes, "warmup": a.warmup, "iters": a.iters, "repeats": a.repeats,
                "runs": a.runs, "round_values": json.dumps(rounds), "how": what,
                "timing": "CUDA events on one non-blocking stream, median of rounds, median of runs",
                "verified": "every element of the destination after timing"}
        if direction != "d2d":
            info["host_memory"] = "pinned (PyTorch's caching host allocator, cudaHostAlloc)"
        self.rep.add(probe, "gpu0", "bandwidth", value, "GB/s", runs,
                     dict(info, counts="read+write" if direction == "d2d" else "bytes_copied"))
        if direction == "d2d":
            self.rep.add(probe, "gpu0", "copy_bandwidth", value / 2, "GB/s", [r / 2 for r in runs],
                         dict(info, counts="bytes_copied"))
        log(f"{probe}: bandwidth {value:.1f} GB/s (runs {', '.join(f'{r:.1f}' for r in runs)})")

    def copy(self):
        self._copy("gpu.copy", "d2d")

    def h2d(self):
        self._copy("gpu.h2d", "h2d")

    def d2h(self):
        self._copy("gpu.d2h", "d2h")

    def gemm(self):
        for n in self.a.gemm_dim:
            self._gemm(n)
            self.torch.cuda.empty_cache()

    def _gemm(self, n):
        torch, a = self.torch, self.a
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        values = torch.tensor([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], dtype=torch.bfloat16,
                              device=self.dev)
        g = torch.Generator(device=self.dev)
        g.manual_seed(12345)
        ma = values[torch.randint(0, 6, (n, n), device=self.dev, generator=g)]
        mb = values[torch.randint(0, 6, (n, n), device=self.dev, generator=g)]
        md = torch.full((n, n), float("nan"), dtype=torch.bfloat16, device=self.dev)
        torch.cuda.synchronize()

        def op():
            torch.matmul(ma, mb, out=md)

        flops = 2.0 * n * n * n
        per_round = flops * a.iters
        value, runs, rounds = self.measure(op, lambda s: per_round / s / 1e12,
                                           a.warmup, a.iters, a.repeats)
        torch.cuda.synchronize()
        # The same check as gpu.gemm: a 32 x 32 sample of D against exact (float64) products.
        rows = (torch.arange(32, device=self.dev) * 7919 + 13) % n
        cols = (torch.arange(32, device=self.dev) * 104729 + 13) % n
        want = ma[rows].double() @ mb[:, cols].double()
        got = md[rows][:, cols].double()
        wrong = int(((got - want).abs() > want.abs() / 128).sum().item())
        if wrong or bool(torch.isnan(got).any()):
            raise RuntimeError(f"bf16 matmul: {wrong} of 1024 sampled elements are wrong")
        try:
            blas = str(torch.backends.cuda.preferred_blas_library())
        except Exception:  # noqa: BLE001
            blas = "unknown"
        self.rep.add("gpu.gemm", "gpu0", "bf16_tflops", value, "TFLOP/s", runs, {
            "m_n_k": f"{n}x{n}x{n}", "flops_per_multiply": "2 x dim^3",
            "types": "A, B, D bf16; fp32 accumulation (allow_bf16_reduced_precision_reduction=False)",
            "how": "torch.matmul(a, b, out=d)", "blas": blas,
            "warmup": a.warmup, "iters": a.iters, "repeats": a.repeats, "runs": a.runs,
            "round_values": json.dumps(rounds),
            "timing": "CUDA events on one non-blocking stream, median of rounds, median of runs",
            "verified": "32 x 32 sampled elements of D against float64"})
        log(f"gpu.gemm {n}: {value:.1f} TFLOP/s (runs {', '.join(f'{r:.1f}' for r in runs)})")

    def allreduce(self):
        torch, a = self.torch, self.a
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_nccl_available():
            raise RuntimeError("this PyTorch has no NCCL process group")
        try:  # device_id (PyTorch 2.3+) creates the communicator at once
            dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                                    device_id=self.dev)
        except TypeError:
            dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        try:
            direct = DirectNccl(torch, self.rep)
        except Exception as e:  # noqa: BLE001 - the process group rows still help
            direct = None
            self.rep.error("nccl.allreduce", "no_direct_nccl",
                           f"ncclAllReduce through ctypes is not available ({type(e).__name__}: "
                           f"{e}); compare.py falls back to torch.distributed copy+all_reduce")
        try:
            for size in sizes_from(a.nccl_min, a.nccl_max, a.nccl_factor):
                self._allreduce_size(dist, direct, size)
                self.rep.save()
        finally:
            if direct is not None:
                direct.close()
            dist.destroy_process_group()

    def _allreduce_size(self, dist, direct, size):
        torch, a = self.torch, self.a
        count = size // 4
        inp = torch.rand(count, device=self.dev) + 1.0  # random, non-zero
        out = torch.full_like(inp, float("nan"))
        scratch = inp.clone()
        torch.cuda.synchronize()
        base = {"size": size, "count": count, "type": "float32", "op": "sum", "ranks": 1,
                "warmup": a.nccl_warmup, "iters": a.nccl_iters, "runs": a.runs,
                "timing": "host clock (time.perf_counter) from the first of iters operations "
                          "to the end of stream.synchronize(), after warmup, as nccl-tests; one "
                          "round per run, median of runs"}

        def record(entity, op, how, check=None):
            value, runs, _ = self.measure(op, lambda s: s / a.nccl_iters,
                                          a.nccl_warmup, a.nccl_iters, 1, clock="host")
            torch.cuda.synchronize()
            wrong = check() if check else 0
            t_us = [s * 1e6 for s in runs]
            algbw = [size / 1e9 / s for s in runs]
            info = dict(base, how=how)
            self.rep.add("nccl.allreduce", f"{entity} {size}", "time_us", value * 1e6, "us",
                         t_us, info)
            self.rep.add("nccl.allreduce", f"{entity} {size}", "algbw", size / 1e9 / value,
                         "GB/s", algbw, info)
            self.rep.add("nccl.allreduce", f"{entity} {size}", "wrong", wrong, "count", [wrong],
                         info)
            log(f"nccl.allreduce {entity} {size}: {value * 1e6:.1f} us, "
                f"algbw {size / 1e9 / value:.1f} GB/s, wrong {wrong}")

        def out_wrong():
            return int((out != inp).sum().item())

        if direct is not None:
            stream = self.stream.cuda_stream
            record("out-of-place",
                   lambda: direct.all_reduce(inp.data_ptr(), out.data_ptr(), count, stream),
                   "ncclAllReduce(sendbuff, recvbuff) via ctypes on PyTorch's libnccl", out_wrong)
            out.fill_(float("nan"))
            record("in-place",
                   lambda: direct.all_reduce(scratch.data_ptr(), scratch.data_ptr(), count, stream),
                   "ncclAllReduce(buff, buff) via ctypes on PyTorch's libnccl",
                   lambda: int((scratch != inp).sum().item()))

        def copy_all_reduce():
            out.copy_(inp)
            dist.all_reduce(out)

        out.fill_(float("nan"))
        record("torch.distributed copy+all_reduce", copy_all_reduce,
               "out.copy_(inp); dist.all_reduce(out) (process group nccl, world size 1)",
               out_wrong)
        scratch.copy_(inp)
        record("torch.distributed in-place", lambda: dist.all_reduce(scratch),
               "dist.all_reduce(x) (process group nccl, world size 1)",
               lambda: int((scratch != inp).sum().item()))


class DirectNccl:
    """ncclCommInitAll over GPU 0 and ncclAllReduce on the libnccl PyTorch loaded."""

    FLOAT32, SUM = 7, 0  # ncclFloat32, ncclSum (nccl.h)

    def __init__(self, torch, rep):
        path = loaded_library("libnccl.so")
        if not path:
            try:
                import nvidia.nccl  # the nvidia-nccl-cu13 wheel
                path = os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2")
            except Exception:  # noqa: BLE001
                path = "libnccl.so.2"
        self.lib = ctypes.CDLL(path)
        c = ctypes
        self.lib.ncclGetVersion.argtypes = [c.POINTER(c.c_int)]
        self.lib.ncclCommInitAll.argtypes = [c.POINTER(c.c_void_p), c.c_int, c.POINTER(c.c_int)]
        self.lib.ncclAllReduce.argtypes = [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int,
                                           c.c_void_p, c.c_void_p]
        self.lib.ncclCommDestroy.argtypes = [c.c_void_p]
        self.lib.ncclGetErrorString.restype = c.c_char_p
        self.lib.ncclGetErrorString.argtypes = [c.c_int]
        version = c.c_int(0)
        self._check("ncclGetVersion", self.lib.ncclGetVersion(c.byref(version)))
        v = version.value
        rep.doc["env"]["nccl_direct"] = f"{v // 10000}.{v // 100 % 100}.{v % 100}"
        rep.doc["env"]["nccl_direct_library"] = os.path.realpath(path) if os.path.isabs(path) else path
        self.comm = c.c_void_p()
        devices = (c.c_int * 1)(torch.cuda.current_device())
        self._check("ncclCommInitAll", self.lib.ncclCommInitAll(c.byref(self.comm), 1, devices))

    def _check(self, call, rc):
        if rc != 0:
            text = self.lib.ncclGetErrorString(rc)
            raise RuntimeError(f"{call} failed: {text.decode() if text else rc} (ncclResult {rc})")

    def all_reduce(self, send, recv, count, stream):
        self._check("ncclAllReduce", self.lib.ncclAllReduce(send, recv, count, self.FLOAT32,
                                                            self.SUM, self.comm, stream))

    def close(self):
        if self.comm:
            self.lib.ncclCommDestroy(self.comm)
            self.comm = ctypes.c_void_p()


if __name__ == "__main__":
    sys.exit(main())
