#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPU workloads for bench/gpu/run.sh, one per subcommand; each prints one JSON line.

  mem KIND                 torch's view under the shim: mem_get_info, then allocate 256 MiB
                           blocks until torch.OutOfMemoryError (KIND: default, expandable,
                           async = PYTORCH_CUDA_ALLOC_CONF backend:cudaMallocAsync, set by caller)
  gemm SECONDS             8192x8192 bf16 matmul loop, no host sync inside; iterations/s
  graph SECONDS            the same GEMM captured in a CUDA graph and replayed; replays/s
  tiny SECONDS             empty-ish kernels (1-element adds) launched back to back; launches/s
  mnist EPOCHS SEED        a fashion-MNIST-shaped task: synthetic 60000x28x28 data made here,
                           2 conv + 2 FC layers, batch 64, Adam; wall seconds
"""
import json
import os
import sys
import time

import torch


def out(**kv):
    print(json.dumps(kv), flush=True)


def mem(kind):
    free, total = torch.cuda.mem_get_info()
    blocks = []
    error = ""
    try:
        while True:
            blocks.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as e:  # the error the shim must produce
        error = "OutOfMemoryError"
    except RuntimeError as e:  # anything else is a failure of the shim
        error = "RuntimeError: " + str(e).splitlines()[0]
    got = len(blocks) * (256 << 20)
    out(kind=kind, free=free, total=total, allocated=got, error=error,
        reserved=torch.cuda.memory_reserved())


def gemm_ops(graph):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    if not graph:
        return lambda: torch.matmul(a, b, out=c)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.matmul(a, b, out=c)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        torch.matmul(a, b, out=c)
    return g.replay


def loop(step, seconds, batch):
    # Warm up, then count steps for `seconds`, syncing only every `batch` steps.
    for _ in range(batch):
        step()
    torch.cuda.synchronize()
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(batch):
            step()
        n += batch
        torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def mnist(epochs, seed):
    torch.manual_seed(seed)
    x = torch.rand(60000, 1, 28, 28, device="cuda")
    y = torch.randint(0, 10, (60000,), device="cuda")
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 5 * 5, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10)).cuda()
    opt = torch.optim.Adam(model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(60000, device="cuda")
        for i in range(0, 60000, 64):
            idx = perm[i:i + 64]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    torch.cuda.synchronize()
    out(seconds=time.perf_counter() - t0, loss=float(loss.detach()))


def main():
    cmd = sys.argv[1]
    if cmd == "mem":
        mem(sys.argv[2])
    elif cmd == "gemm":
        out(rate=loop(gemm_ops(False), float(sys.argv[2]), 20))
    elif cmd == "graph":
        out(rate=loop(gemm_ops(True), float(sys.argv[2]), 20))
    elif cmd == "tiny":
        t = torch.zeros(1, device="cuda")
        out(rate=loop(lambda: t.add_(1), float(sys.argv[2]), 1000))
    elif cmd == "mnist":
        mnist(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit("unknown workload " + cmd)


if __name__ == "__main__":
    main()
