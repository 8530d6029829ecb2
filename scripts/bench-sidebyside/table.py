#!/usr/bin/env python3
"""The Markdown tables of scripts/bench-sidebyside.sh, from its runs' result.json files."""

import json
import sys


def per_object(counts, n):
    """A phase's requests per object, as "requests (reads + writes)"."""
    return f"{counts['requests'] / n:.2f} ({counts['reads'] / n:.2f} + {counts['writes'] / n:.2f})"


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    runs.sort(key=lambda r: (r["n"], r["run"]))
    print("| N | run | operator | every object has its Deployment / a condition | requests per object "
          "while converging (reads + writes) | Deployment GETs | writes in the quiet minute "
          "(requests) | resize all N | requests per object resizing (reads + writes) | "
          "status writes per object resizing | "
          "peak RSS | CPU s converging / in all | load average at start / end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        n, a = r["n"], r["audit"]
        conv, quiet, resize = a["converge"], a["quiet"], a["resize"]
        status_writes = sum(v for k, v in resize["writes_by_resource"].items() if k.endswith("/status"))
        # With real pods (PODS=1): N objects resized from 1 to resize_to replicas, and the time
        # until every new pod was ready too.
        pods = r.get("pods")
        label = f"{n} (pods, 1→{r['resize_to']})" if pods else f"{n}"
        resized = f"{r['resize']['seconds']:.1f} s"
        if pods:
            resized += f" / ready {r['resize_ready']['seconds']:.1f} s"
        print(
            f"| {label} | {r['run']} | {r['operator']} "
            f"| {r['converge']['deployments_seconds']:.1f} s / {r['converge']['conditions_seconds']:.1f} s "
            f"| {per_object(conv, n)} "
            f"| {conv['deployment_gets'] + quiet['deployment_gets'] + resize['deployment_gets']} "
            f"| {quiet['writes']} ({quiet['requests']}) "
            f"| {resized} "
            f"| {per_object(resize, n)} "
            f"| {status_writes / n:.2f} "
            f"| {r['rss_kib'] / 1024:.0f} MiB "
            f"| {r['cpu_converge']:.1f} / {r['cpu_total']:.1f} "
            f"| {r['load_start']} / {r['load_end']} |"
        )
    failovers = [r for r in runs if r.get("failover")]
    if failovers:
        print()
        print("| N | run | operator | failover: leader killed → all N resized again | requests per object in "
              "failover (reads + writes) | lists in failover | standby's peak RSS |")
        print("|---|---|---|---|---|---|---|")
        for r in failovers:
            n, f = r["n"], r["audit"]["failover"]
            print(
                f"| {n} | {r['run']} | {r['operator']} | {r['failover']['seconds']:.1f} s "
                f"| {per_object(f, n)} "
                f"| {f['by_verb'].get('list', 0)} | {r['standby_rss_kib'] / 1024:.0f} MiB |"
            )
    edited = [r for r in runs if r.get("edits")]
    if edited:
        print()
        print("| N | run | operator | edits after a restart: reconciled (of) | edit latency, median / p99 / max |")
        print("|---|---|---|---|---|")
        for r in edited:
            e = r["edits"]
            print(f"| {r['n']} | {r['run']} | {r['operator']} | {e['done']} ({e['edits']}) "
                  f"| {e['median']} s / {e['p99']} s / {e['max']} s |")
    relists = [r for r in runs if r.get("relist")]
    if relists:
        print()
        print("| N | run | operator | lists / watches opened in relist | requests per object in relist (reads + writes) "
              "| peak RSS before the relist / through it |")
        print("|---|---|---|---|---|---|")
        for r in relists:
            n, f = r["n"], r["audit"]["relist"]
            # (runs of the script before it read the peak ahead of the relist have none)
            before = f"{r['rss_before_relist_kib'] / 1024:.0f} MiB" if 'rss_before_relist_kib' in r else "not read"
            print(
                f"| {n} | {r['run']} | {r['operator']} | {f['by_verb'].get('list', 0)} / {f['by_verb'].get('watch', 0)} "
                f"| {per_object(f, n)} "
                f"| {before} / {r['rss_kib'] / 1024:.0f} MiB |"
            )
    replicated = [r for r in runs if len(r.get("replicas_rss_before_relist_kib", r.get("replicas_rss_kib", []))) > 1]
    if replicated:
        print()
        for r in replicated:
            each = ", ".join(f"{kib / 1024:.0f}" for kib in r["replicas_rss_kib"])
            line = f"- N={r['n']} run {r['run']} {r['operator']}: peak RSS of each replica {each} MiB"
            before = r.get("replicas_rss_before_relist_kib", [])
            if r.get("relist") and len(before) > len(r["replicas_rss_kib"]):
                # One replica was killed for the relist: the others' peaks before it, then through it.
                shown = ", ".join(f"{kib / 1024:.0f}" for kib in before)
                line = (f"- N={r['n']} run {r['run']} {r['operator']}: peak RSS of each replica {shown} MiB "
                        f"before the last was killed; the others {each} MiB through taking its buckets in")
            print(line)
    phased = [r for r in runs if r.get("phases")]
    if phased:
        # (runs of the script before it read the RSS per phase have none)
        names = [p for p in ("converge", "quiet", "resize", "relist")
                 if any(m["phase"] == p for r in phased for m in r["phases"])]
        print()
        print("| N | run | operator | " + " | ".join(f"RSS {p}: peak / at its end" for p in names) + " |")
        print("|---|---|---|" + "---|" * len(names))
        for r in phased:
            marks = {m["phase"]: m for m in r["phases"]}
            def cell(m):
                text = f"{m['peak_kib'] / 1024:.0f} / {m['rss_kib'] / 1024:.0f} MiB"
                if "heap_in_use_kib" in m:  # HEAPSTATS=1: malloc's bytes in use of those it holds
                    text += f" (heap {m['heap_in_use_kib'] / 1024:.0f} of {m['heap_system_kib'] / 1024:.0f})"
                return text
            cells = [cell(marks[p]) if p in marks else "—" for p in names]
            print(f"| {r['n']} | {r['run']} | {r['operator']} | " + " | ".join(cells) + " |")
    print()
    print("Writes of each run by verb and resource (converging; resizing), and the requests the API server "
          "refused (whole run, with the status code):")
    print()
    for r in runs:
        a = r["audit"]
        fmt = lambda c: ", ".join(f"{k} {v}" for k, v in sorted(c["writes_by_resource"].items())) or "none"
        failed = lambda c: ", ".join(f"{k} {v}" for k, v in sorted(c.get("failed_by_code", {}).items())) or "none"
        print(f"- N={r['n']} run {r['run']} {r['operator']}: {fmt(a['converge'])}; {fmt(a['resize'])}. "
              f"Refused: {failed(a['all'])}")
    agents = sorted({f"{r['operator']}: {', '.join(repr(u) for u in r['audit']['user_agents'])}" for r in runs})
    print()
    print("User-Agent headers in the audit log: " + "; ".join(agents))


if __name__ == "__main__":
    main(sys.argv[1:])
