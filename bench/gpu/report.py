#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns bench/gpu/run.sh's JSON lines into docs/gpu-results.md: report.py RESULTS_DIR OUT.md"""
import json
import os
import statistics
import sys


def load(d, phase):
    path = os.path.join(d, phase + ".jsonl")
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def main():
    d, out = sys.argv[1], sys.argv[2]
    rows = ["# GPU sharing on a real GPU", "",
            "Written by `bench/gpu/run.sh` (`report` phase); targets from issue 13.", ""]
    facts = load(d, "facts")
    if facts:
        f = facts[-1]["result"]
        rows += [f"Machine: {f['gpu']} ({f['uuid']}), driver {f['driver']}, PyTorch {f['torch']}, "
                 f"run {f['date']}.", ""]
    rows += ["| measurement | figure | target | met |", "|---|---|---|---|"]

    for r in load(d, "memory"):
        res = r["result"]
        cap = res.get("cap", 0)
        if r["case"].startswith("torch-"):
            host = res.get("host_peak_mib", 0) << 20
            rows.append(f"| memory, PyTorch {res['kind']}: mem_get_info total / cap | "
                        f"{res['total'] >> 20} / {cap >> 20} MiB | equal | "
                        f"{'yes' if res['total'] == cap else 'no'} |")
            rows.append(f"| memory, PyTorch {res['kind']}: allocated before the error; error | "
                        f"{res['allocated'] >> 20} MiB; {res['error']} | ≤ cap; OutOfMemoryError | "
                        f"{'yes' if res['allocated'] <= cap and res['error'] == 'OutOfMemoryError' else 'no'} |")
            rows.append(f"| memory, PyTorch {res['kind']}: host view (NVML) peak | {host >> 20} MiB | "
                        f"≤ cap + one context | see context figure |")
        else:
            rows.append(f"| memory, raw cuMemAlloc 256 MiB steps | {res['probe']} | stops at the cap with 2 | — |")

    share = {r["case"]: r["result"] for r in load(d, "share")}
    for case, res in share.items():
        if "a" not in res:
            continue
        a, b = res["a"]["rate"], res["b"]["rate"]
        load_, sa, sb = case.split("-")
        got = a / (a + b)
        rows.append(f"| SM share, {load_} {sa}/{sb}: first tenant's part of the work | {got:.3f} | "
                    f"{float(sa):.2f} ± 0.05 | {'yes' if abs(got - float(sa)) <= 0.05 else 'no'} |")

    over = {}
    for r in load(d, "overhead"):
        over.setdefault(r["case"], []).append(r["result"]["rate"])
    for load_, target in (("gemm", 0.01), ("tiny", 0.03)):
        if f"{load_}-bare" in over and f"{load_}-shim" in over:
            ratios = [s / b for s, b in zip(over[f"{load_}-shim"], over[f"{load_}-bare"])]
            med = statistics.median(ratios)
            rows.append(f"| overhead, {load_} with the shim and no limit (median of paired rounds) | "
                        f"{med:.3f}× | ≥ {1 - target:.2f}× | {'yes' if med >= 1 - target else 'no'} |")

    for r in load(d, "smi"):
        res = r["result"]
        rows.append(f"| nvidia-smi under a 0.5 cap: memory.total | {res['memory_total_mib']} MiB "
                    f"(cap {res['cap_mib']}) | the cap | "
                    f"{'yes' if abs(res['memory_total_mib'] - res['cap_mib']) <= 1 else 'no'} |")

    runs = [r["result"] | {"case": r["case"]} for r in load(d, "mnist")]
    serial = [m for m in runs if m["case"] == "serial"]
    if serial:
        s = serial[-1]
        whole = s["seconds"] * s["scaled_to"] / s["tasks"]
        epochs = f", {s['epochs']} epoch{'s' if s['epochs'] != 1 else ''} each" if "epochs" in s else ""
        rows.append(f"| {s['scaled_to']} tasks one at a time on the whole GPU{epochs} | {whole:.0f} s"
                    f"{' (scaled from %d)' % s['tasks'] if s['tasks'] != s['scaled_to'] else ''} | — | — |")
        targets = {"unlimited": None, "timeslice": 0.18, "mps": 0.10}
        for m in runs:  # every run, in the order made (a mode may have been run again, with fewer tasks)
            if m["case"] not in targets:
                continue
            target = targets[m["case"]]
            # Whole-GPU time for this many tasks, from the serial figure per task.
            frac = m["seconds"] / (whole * m["tasks"] / s["scaled_to"])
            met = "—" if target is None else ("yes" if frac <= target and m.get("failed", 0) == 0 else "no")
            why = "; ".join(sorted(set(m.get("why", []))))
            rows.append(f"| {m['tasks']} tasks at once, {m['case']}: makespan / whole-GPU time | {frac:.1%} "
                        f"({m['seconds']:.0f} s, {m.get('failed', 0)} failed{': ' + why if why else ''}) | "
                        f"{'—' if target is None else '≤ %d %%' % round(target * 100)} | {met} |")
    rows.append("")
    rows.append("What these figures mean, what the first run found and fixed, and what is not met: "
                "docs/gpu-sharing.md, \"On a real GPU\".")
    rows.append("")
    with open(out, "w") as f:
        f.write("\n".join(rows))


if __name__ == "__main__":
    main()
