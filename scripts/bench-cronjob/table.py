#!/usr/bin/env python3
"""The Markdown table of scripts/bench-cronjob.sh, from its runs' result.json files."""

import json
import sys


def secs(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f} s"


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    runs.sort(key=lambda r: (r["n"], r["run"]))
    print("| N | run | operator | first minute: every CronJob's Job after | Jobs measured (missing) "
          "| delay to creationTimestamp, median / p99 / max | delay to the create's receipt, median / p99 "
          "| requests per Job (reads + writes) | peak RSS | CPU s in the window / in all "
          "| load average at start / end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        n, j, a = r["n"], r["jobs"]["all"], r["audit"]
        w = a["window"]
        made = max(r["jobs"]["created_in_window"], 1)
        recv = a["create_received"]
        print(
            f"| {n} | {r['run']} | {r['operator']} "
            f"| {r['first']['seconds_after_schedule']:.1f} s "
            f"| {j['jobs']} ({j['missing']}) "
            f"| {secs(j['median'])} / {secs(j['p99'])} / {secs(j['max'])} "
            f"| {secs(recv['median'], 3)} / {secs(recv['p99'], 3)} "
            f"| {w['requests'] / made:.2f} ({w['reads'] / made:.2f} + {w['writes'] / made:.2f}) "
            f"| {r['rss_kib'] / 1024:.0f} MiB "
            f"| {r['cpu_window']:.1f} / {r['cpu_total']:.1f} "
            f"| {r['load_start']} / {r['load_end']} |"
        )
    print()
    print("Each measured minute: Jobs, median / p99 delay to creationTimestamp; the manager's requests "
          "in the window by verb and resource (Jobs created in it), and the requests refused:")
    print()
    for r in runs:
        minutes = "; ".join(f"{m['jobs']} Jobs, {secs(m['median'])} / {secs(m['p99'])}"
                            for _, m in sorted(r["jobs"]["per_minute"].items()))
        w = r["audit"]["window"]
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(w["by_verb_resource"].items())) or "none"
        failed = ", ".join(f"{k} {v}" for k, v in sorted(w["failed_by_code"].items())) or "none"
        print(f"- N={r['n']} run {r['run']} {r['operator']}: {minutes}. Requests: {verbs} "
              f"({r['jobs']['created_in_window']} Jobs created). Refused: {failed}")
    agents = sorted({f"{r['operator']}: {', '.join(repr(u) for u in r['audit']['user_agents'])}" for r in runs})
    print()
    print("User-Agent headers in the audit log: " + "; ".join(agents))


if __name__ == "__main__":
    main(sys.argv[1:])
