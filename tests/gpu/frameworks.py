#!/usr/bin/env python3
"""The CUDA hooks under a framework's own allocators, on a real GPU.

Run under LD_PRELOAD=libldshim_preload.so LDSHIM_CUDA_HOOKS=1 (tests/gpu/run.sh
does).  Every buffer the framework hands out is compared at its first,
middle and last byte: the registry (ldshim_memtype_query of the libldshim the
preload loaded) against the driver (cuPointerGetAttribute on libcuda.so.1),
type and device, while it is alive and again after it was freed.  For a
caching allocator "freed" means given back to the driver: torch's
empty_cache(), a CuPy pool's free_all_blocks(); where the framework keeps the
memory (JAX's BFC allocator) the driver still knows it and so must the
registry.  One line per case; a MISMATCH line names the pointer, the
driver's answer and the registry's.

  frameworks.py --framework ctypes|torch|cupy|jax [--jax-allocator platform|bfc]

ctypes is no framework: the driver's allocation functions called through
ctypes (looked up with dlsym), the checker's own baseline.

Exit 0: all agree; 1: a mismatch, or a case failed; 77: the framework or
its GPU is not there (SKIPPED: reason).
"""

import argparse
import ctypes
import gc
import os
import sys
import time

NAMES = ["unregistered", "host", "pinned", "cuda", "managed"]
UNREGISTERED, HOST, PINNED, CUDA, MANAGED = range(5)
SIZES = [512, 1 << 20, 10 << 20, 100 << 20]  # bytes: small pool, large pool, big
HOST_SIZES = [4096, 1 << 20, 8 << 20]


class MemInfo(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int), ("base", ctypes.c_void_p),
                ("length", ctypes.c_size_t)]


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(77)


class Checker:
    """Registry against driver, counted per case."""

    def __init__(self):
        try:
            self.ldshim = ctypes.CDLL("libldshim.so.0", mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
        except OSError:
            print("FAILED: libldshim.so.0 is not in this process "
                  "(run with LD_PRELOAD=libldshim_preload.so LDSHIM_CUDA_HOOKS=1)")
            sys.exit(1)
        self.ldshim.ldshim_memtype_query.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(MemInfo)]
        self.ldshim.ldshim_hooks_active.restype = ctypes.c_uint
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.cu.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_ulonglong]
        self.cu.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong),
                                                    ctypes.POINTER(ctypes.c_size_t), ctypes.c_ulonglong]
        self.context_ready = False
        self.mismatches = 0
        self.compared = 0
        self.failed_cases = 0

    def _context(self):
        # cuPointerGetAttribute wants a current context on this thread; a
        # framework that runs CUDA on threads of its own (XLA) leaves none.
        if self.context_ready:
            return
        ctx = ctypes.c_void_p()
        self.cu.cuCtxGetCurrent(ctypes.byref(ctx))
        if not ctx.value:
            self.cu.cuInit(0)
            self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
            self.cu.cuCtxSetCurrent(ctx)
        self.context_ready = True

    def driver(self, ptr):
        """(type, device, base, size) as the driver sees ptr."""
        self._context()
        mt, managed, dev = ctypes.c_uint(0), ctypes.c_int(0), ctypes.c_int(-1)
        if self.cu.cuPointerGetAttribute(ctypes.byref(mt), 2, ptr) != 0:  # CU_POINTER_ATTRIBUTE_MEMORY_TYPE
            return UNREGISTERED, -1, 0, 0
        self.cu.cuPointerGetAttribute(ctypes.byref(managed), 8, ptr)  # IS_MANAGED
        self.cu.cuPointerGetAttribute(ctypes.byref(dev), 9, ptr)  # DEVICE_ORDINAL
        base, size = ctypes.c_ulonglong(0), ctypes.c_size_t(0)
        self.cu.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ptr)
        if managed.value:
            t = MANAGED
        elif mt.value == 2:  # CU_MEMORYTYPE_DEVICE
            t = CUDA
        elif mt.value == 1:  # CU_MEMORYTYPE_HOST
            t = PINNED
        else:
            t = UNREGISTERED
        return t, dev.value, base.value, size.value

    def registry(self, ptr):
        info = MemInfo()
        self.ldshim.ldshim_memtype_query(ptr, 1, ctypes.byref(info))
        return info

    def _one(self, ptr):
        """(agrees, driver's type, registry's type, the line naming both) for
        the byte at ptr."""
        t, dev, base, size = self.driver(ptr)
        r = self.registry(ptr)
        agree = r.type == t and (t not in (CUDA, MANAGED) or r.device == dev)
        line = (f"{ptr:#x}: driver {NAMES[t]} dev {dev} [{base:#x} +{size}], "
                f"registry {NAMES[r.type] if 0 <= r.type < 5 else r.type} dev {r.device} "
                f"[{r.base or 0:#x} +{r.length}]")
        return agree, t, r.type, line

    def compare(self, case, buffers, phase):
        """Compares each (ptr, nbytes) at three bytes.  After a free the
        driver may forget a range a moment after the registry did (a hook
        removes it before the real free runs, an asynchronous free completes
        later): a disagreement is asked again for up to a second."""
        seen = set()
        for ptr, n in buffers:
            for off in sorted({0, n // 2, n - 1}):
                p = ptr + off
                agree, t, got, line = self._one(p)
                deadline = time.monotonic() + 1.0
                while not agree and phase != "alive" and time.monotonic() < deadline:
                    time.sleep(0.05)
                    agree, t, got, line = self._one(p)
                self.compared += 1
                seen.add((NAMES[t], NAMES[got] if 0 <= got < 5 else str(got)))
                if not agree:
                    self.mismatches += 1
                    print(f"MISMATCH {case} ({phase}) {line}")
                elif phase == "alive" and t == UNREGISTERED:
                    self.mismatches += 1
                    print(f"MISMATCH {case} ({phase}) the driver does not know a live buffer: {line}")
        return ", ".join(f"driver {a}/registry {b}" for a, b in sorted(seen))

    def case(self, name, alloc, release):
        """alloc() -> (handles, [(ptr, nbytes)]); release(handles) frees them
        and gives the memory back where the framework can."""
        try:
            handles, buffers = alloc()
            before = self.mismatches
            a = self.compare(name, buffers, "alive")
            release(handles)
            del handles
            gc.collect()
            f = self.compare(name, buffers, "after free")
            ok = "ok  " if self.mismatches == before else "FAIL"
            print(f"{ok} {name}: {len(buffers)} buffers; alive: {a}; after free: {f}")
        except Exception as e:  # a case that cannot run is a failure, named
            self.failed_cases += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")

    def finish(self, framework):
        print(f"{framework}: hook paths {self.ldshim.ldshim_hooks_active():#x}, {self.compared} comparisons, "
              f"{self.mismatches} mismatches, {self.failed_cases} cases failed")
        sys.exit(1 if self.mismatches or self.failed_cases else 0)


def run_ctypes():
    try:
        c = Checker()
    except OSError as e:
        skip(f"no libcuda.so.1 ({e})")
    cu = c.cu
    if cu.cuInit(0) != 0:
        skip("cuInit failed: no usable CUDA device")
    c._context()
    P, U, Z = ctypes.POINTER, ctypes.c_ulonglong, ctypes.c_size_t
    cu.cuMemAlloc_v2.argtypes = [P(U), Z]
    cu.cuMemAllocManaged.argtypes = [P(U), Z, ctypes.c_uint]
    cu.cuMemAllocPitch_v2.argtypes = [P(U), P(Z), Z, Z, ctypes.c_uint]
    cu.cuMemFree_v2.argtypes = [U]
    cu.cuMemAllocHost_v2.argtypes = [P(ctypes.c_void_p), Z]
    cu.cuMemHostAlloc.argtypes = [P(ctypes.c_void_p), Z, ctypes.c_uint]
    cu.cuMemFreeHost.argtypes = [ctypes.c_void_p]

    def batch(sizes, one, free):
        def alloc():
            got = []
            for n in sizes:
                ptr, length, r = one(n)
                if r != 0:
                    raise RuntimeError(f"allocation of {n} bytes: CUresult {r}")
                got.append((ptr, length))
            return list(got), got

        def release(got):
            for ptr, _ in got:
                if free(ptr) != 0:
                    raise RuntimeError(f"free of {ptr:#x} failed")
            got.clear()

        return alloc, release

    def device(fn, *extra):
        def one(n):
            p = U(0)
            r = fn(ctypes.byref(p), n, *extra)
            return p.value, n, r
        return one

    def pitch(n):
        p, pitch_ = U(0), Z(0)
        r = cu.cuMemAllocPitch_v2(ctypes.byref(p), ctypes.byref(pitch_), n // 64, 64, 4)
        return p.value, pitch_.value * 64, r

    def host(fn, *extra):
        def one(n):
            p = ctypes.c_void_p()
            r = fn(ctypes.byref(p), n, *extra)
            return p.value or 0, n, r
        return one

    c.case("ctypes cuMemAlloc", *batch(SIZES, device(cu.cuMemAlloc_v2), cu.cuMemFree_v2))
    c.case("ctypes cuMemAllocManaged", *batch(SIZES, device(cu.cuMemAllocManaged, 1), cu.cuMemFree_v2))
    c.case("ctypes cuMemAllocPitch", *batch(SIZES[1:], pitch, cu.cuMemFree_v2))
    c.case("ctypes cuMemAllocHost", *batch(HOST_SIZES, host(cu.cuMemAllocHost_v2), cu.cuMemFreeHost))
    c.case("ctypes cuMemHostAlloc", *batch(HOST_SIZES, host(cu.cuMemHostAlloc, 0), cu.cuMemFreeHost))
    c.finish("ctypes")


def run_torch():
    try:
        import torch
    except Exception as e:
        skip(f"torch not importable ({type(e).__name__}: {e})")
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    c = Checker()
    u8 = torch.uint8

    def device_tensors():
        ts = [torch.empty(n, dtype=u8, device="cuda") for n in SIZES]
        torch.cuda.synchronize()
        return ts, [(t.data_ptr(), t.numel()) for t in ts]

    def give_back(ts):
        ts.clear()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    c.case("torch caching allocator", device_tensors, give_back)

    settings = getattr(torch.cuda.memory, "_set_allocator_settings", None)
    if settings is None:
        c.failed_cases += 1
        print("FAIL torch expandable_segments: no torch.cuda.memory._set_allocator_settings")
    else:
        settings("expandable_segments:True")

        def expandable():
            ts, bufs = device_tensors()
            segs = [s for s in torch.cuda.memory_snapshot() if s.get("is_expandable")]
            print(f"     expandable segments: {len(segs)}")
            if not segs:
                raise RuntimeError("expandable_segments:True made no expandable segment")
            return ts, bufs

        c.case("torch expandable_segments", expandable, give_back)
        settings("expandable_segments:False")

    host_empty = getattr(torch._C, "_host_emptyCache", None)

    def pinned():
        ts = [torch.empty(n, dtype=u8, pin_memory=True) for n in HOST_SIZES]
        ts.append(torch.empty(1 << 20, dtype=u8).pin_memory())
        return ts, [(t.data_ptr(), t.numel()) for t in ts]

    def pinned_back(ts):
        ts.clear()
        gc.collect()
        if host_empty:
            host_empty()

    c.case("torch pinned memory" + ("" if host_empty else " (no _host_emptyCache: cache kept)"), pinned,
           pinned_back)

    def graph():
        x = torch.ones(1 << 20, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y = x * 2 + 1  # warm-up outside the graph
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = x * 2 + 1
        g.replay()
        torch.cuda.synchronize()
        if not torch.equal(out, y):
            raise RuntimeError("the graph's replay computed something else")
        return [x, y, out, g], [(out.data_ptr(), out.numel() * out.element_size()),
                                (x.data_ptr(), x.numel() * x.element_size())]

    c.case("torch CUDA graph (private pool)", graph, give_back)
    c.finish("torch")


def run_cupy():
    try:
        import cupy as cp
    except Exception as e:
        skip(f"cupy not importable ({type(e).__name__}: {e})")
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        skip(f"cupy sees no CUDA device ({e})")
    if n == 0:
        skip("cupy sees no CUDA device")
    print(f"cupy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")
    c = Checker()
    u8 = cp.uint8

    def arrays():
        xs = [cp.empty(n, dtype=u8) for n in SIZES]
        cp.cuda.get_current_stream().synchronize()
        return xs, [(x.data.ptr, x.nbytes) for x in xs]

    def with_pool(pool):
        def alloc():
            with cp.cuda.using_allocator(pool.malloc):
                return arrays()

        def release(xs):
            xs.clear()
            cp.cuda.get_current_stream().synchronize()
            pool.free_all_blocks()

        return alloc, release

    c.case("cupy default pool", *with_pool(cp.get_default_memory_pool()))
    c.case("cupy MemoryAsyncPool", *with_pool(cp.cuda.MemoryAsyncPool()))
    c.case("cupy managed (MemoryPool(malloc_managed))", *with_pool(cp.cuda.MemoryPool(cp.cuda.malloc_managed)))

    pinned_pool = cp.get_default_pinned_memory_pool()

    def pinned():
        ms = [cp.cuda.alloc_pinned_memory(n) for n in HOST_SIZES]
        return ms, [(m.ptr, n) for m, n in zip(ms, HOST_SIZES)]

    def pinned_back(ms):
        ms.clear()
        gc.collect()
        pinned_pool.free_all_blocks()

    c.case("cupy pinned memory pool", pinned, pinned_back)
    c.finish("cupy")


def run_jax(allocator):
    # Before jax starts its backend.  platform: XLA allocates and frees each
    # buffer with the driver (after free is given back); bfc (JAX's default,
    # preallocating) keeps what it took, so after free the driver still
    # knows the memory and so must the registry.
    os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = allocator
    try:
        import jax
        import numpy as np
    except Exception as e:
        skip(f"jax not importable ({type(e).__name__}: {e})")
    try:
        dev = jax.devices("gpu")[0]
    except Exception as e:
        skip(f"jax has no GPU backend ({type(e).__name__}: {e})")
    print(f"jax {jax.__version__}, {dev.device_kind}, allocator {allocator}")
    c = Checker()

    def device_arrays():
        xs = [jax.device_put(np.zeros(n, np.uint8), dev) for n in SIZES]
        for x in xs:
            x.block_until_ready()
        return xs, [(x.unsafe_buffer_pointer(), x.nbytes) for x in xs]

    def delete(xs):
        for x in xs:
            x.delete()
        xs.clear()

    c.case(f"jax device buffers ({allocator})", device_arrays, delete)

    def pinned_host():
        s = jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host")
        xs = [jax.device_put(np.zeros(n, np.uint8), s) for n in HOST_SIZES]
        for x in xs:
            x.block_until_ready()
        return xs, [(x.unsafe_buffer_pointer(), x.nbytes) for x in xs]

    try:
        kinds = [m.kind for m in dev.addressable_memories()]
    except Exception as e:  # an older jax: try anyway
        kinds = [f"pinned_host (addressable_memories: {type(e).__name__})"]
    if any(k.startswith("pinned_host") for k in kinds):
        c.case(f"jax pinned_host buffers ({allocator})", pinned_host, delete)
    else:
        print(f"skip jax pinned_host buffers: the device's memories are {kinds}")
    c.finish("jax")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", required=True, choices=["ctypes", "torch", "cupy", "jax"])
    ap.add_argument("--jax-allocator", default="platform", choices=["platform", "bfc"])
    args = ap.parse_args()
    if os.environ.get("LDSHIM_CUDA_HOOKS") != "1" or "libldshim_preload" not in os.environ.get("LD_PRELOAD", ""):
        print("FAILED: run with LD_PRELOAD=libldshim_preload.so LDSHIM_CUDA_HOOKS=1")
        sys.exit(1)
    if args.framework == "ctypes":
        run_ctypes()
    elif args.framework == "torch":
        run_torch()
    elif args.framework == "cupy":
        run_cupy()
    else:
        run_jax(args.jax_allocator)


if __name__ == "__main__":
    main()
