#!/usr/bin/env python3
"""The Kubernetes side of scripts/bench-cronjob.sh, with no dependency beyond Python 3.

Talks to the API server as the harness's own user (`admin`), with the HTTPS client of
scripts/bench-sidebyside/kube.py:

  create   N CronJobs (batch.tutorial.kubebuilder.io/v1) on SCHEDULE in NAMESPACES namespaces,
           in parallel, every field given (the book's sample: Allow, a 60 s starting deadline,
           not suspended, history limits 3 and 1), so that neither operator's defaults matter
  wait     until every CronJob has a Job scheduled at --at (epoch seconds); one list, then a watch
  jobs     the delay from each scheduled time to its Job's creationTimestamp, per scheduled time
           given and over all of them (median, 99th percentile, max), the Jobs missing, and the
           Jobs created in a window
  audit    the manager user's requests in a window (by verb and resource), and the delay from
           each scheduled time to the API server's receipt of the Job's create (microseconds,
           where creationTimestamp has whole seconds), from the audit log

Every wait has a timeout; every answer is one JSON object on stdout.
"""

import argparse
import calendar
import concurrent.futures
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench-sidebyside"))
import kube  # noqa: E402  (the HTTPS client, the watch, the audit time parser)

GROUP, VERSION, PLURAL, KIND = "batch.tutorial.kubebuilder.io", "v1", "cronjobs", "CronJob"
JOBS = "/apis/batch/v1/jobs"
SCHEDULED_AT = "batch.tutorial.kubebuilder.io/scheduled-at"
kube.USER_AGENT = "bench-cronjob"


def cr_path(namespace=None):
    base = f"/apis/{GROUP}/{VERSION}"
    return f"{base}/{PLURAL}" if namespace is None else f"{base}/namespaces/{namespace}/{PLURAL}"


def rfc3339(text):
    """Epoch seconds of 2026-12-05T14:31:00Z (fractions allowed)."""
    return kube.parse_time(text)


def cronjob(name, namespace, schedule):
    # config/samples of the book's project (hack/docs/internal/cronjob-tutorial/sample.go).
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedule": schedule,
            "startingDeadlineSeconds": 60,
            "concurrencyPolicy": "Allow",
            "suspend": False,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"template": {"spec": {
                "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "hello",
                    "image": "busybox",
                    "args": ["/bin/sh", "-c", "date; echo Hello from the Kubernetes cluster"],
                    "securityContext": {"allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]},
                                        "readOnlyRootFilesystem": False},
                }],
                "restartPolicy": "OnFailure",
            }}}},
        },
    }


def cmd_create(api, args):
    namespaces = [f"{args.prefix}-{i}" for i in range(args.namespaces)]
    for ns in namespaces:
        status, body = api.request("POST", "/api/v1/namespaces",
                                   {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if status not in (201, 409):
            raise RuntimeError(f"creating namespace {ns}: {status} {body}")

    def create(i):
        ns = namespaces[i % len(namespaces)]
        status, body = api.request("POST", cr_path(ns), cronjob(f"cronjob-{i}", ns, args.schedule))
        if status not in (201, 409):
            raise RuntimeError(f"creating cronjob-{i}: {status} {body}")

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(create, range(args.n)))
    print(json.dumps({"created": args.n, "namespaces": len(namespaces), "seconds": round(time.time() - t0, 2)}))


def job_summary(obj):
    """(owning CronJob, scheduled time, creationTimestamp), epoch seconds."""
    meta = obj["metadata"]
    owners = [o["name"] for o in meta.get("ownerReferences") or [] if o.get("kind") == KIND]
    at = (meta.get("annotations") or {}).get(SCHEDULED_AT)
    return (owners[0] if owners else None, rfc3339(at) if at else None, rfc3339(meta["creationTimestamp"]))


def cmd_wait(api, args):
    jobs = kube.Watch(api, JOBS, job_summary)
    jobs.start()
    deadline = args.start + args.timeout
    result = {"n": args.n, "at": args.at}
    while True:
        now = time.time()
        if jobs.error is not None:
            raise RuntimeError(f"watch of {JOBS}: {jobs.error}")
        done = {(ns, owner) for (ns, _), (owner, at, _) in jobs.snapshot().items()
                if owner and at is not None and abs(at - args.at) < 0.5}
        result["with_job"] = len(done)
        if len(done) >= args.n:
            result["seconds_after_start"] = round(now - args.start, 2)
            result["seconds_after_schedule"] = round(now - args.at, 2)
            break
        if now > deadline:
            result["timeout"] = args.timeout
            print(json.dumps(result))
            sys.exit(1)
        time.sleep(0.2)
    print(json.dumps(result))


def percentile(values, p):
    """Nearest-rank percentile of a sorted list."""
    if not values:
        return None
    k = max(0, min(len(values) - 1, int(-(-p * len(values) // 100)) - 1))
    return values[k]


def stats(delays, expected):
    delays = sorted(delays)
    return {
        "jobs": len(delays), "expected": expected, "missing": expected - len(delays),
        "median": percentile(delays, 50), "p99": percentile(delays, 99),
        "max": delays[-1] if delays else None, "min": delays[0] if delays else None,
    }


def cmd_jobs(api, args):
    items, _ = api.list_all(JOBS)
    wanted = [float(t) for t in args.at]
    per = {t: [] for t in wanted}
    in_window = 0
    owners = set()
    for obj in items:
        owner, at, created = job_summary(obj)
        if owner is None:
            continue
        owners.add((obj["metadata"]["namespace"], owner))
        if args.window_start <= created < args.window_end:
            in_window += 1
        for t in wanted:
            if at is not None and abs(at - t) < 0.5:
                per[t].append(created - t)
    out = {
        "all": stats([d for ds in per.values() for d in ds], args.n * len(wanted)),
        "per_minute": {str(int(t)): stats(ds, args.n) for t, ds in per.items()},
        "jobs_total": len(items), "created_in_window": in_window, "cronjobs_with_jobs": len(owners),
    }
    print(json.dumps(out))


READS = {"get", "list", "watch"}
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def cmd_audit(args):
    """The user's requests received in [--from, --to), each once (its last stage wins), and
    the delay from each scheduled time in --at to the receipt of its Job's create (the Job's
    name is <cronjob>-<scheduled Unix time>, the book's and memop's)."""
    events = {}
    stem, ext = os.path.splitext(args.log)
    for path in sorted(glob.glob(f"{glob.escape(stem)}-*{ext}")) + [args.log]:
        with open(path, "rb") as log:
            for line in log:
                if args.user.encode() not in line:
                    continue
                event = json.loads(line)
                if event.get("user", {}).get("username") != args.user:
                    continue
                events[event["auditID"]] = event
    wanted = {int(float(t)) for t in args.at}
    counts = {"requests": 0, "reads": 0, "writes": 0, "failed": 0, "by_verb_resource": {}, "failed_by_code": {}}
    delays = {t: [] for t in wanted}
    agents = set()
    for event in events.values():
        t = kube.parse_time(event["requestReceivedTimestamp"])
        verb = event.get("verb", "")
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", event.get("requestURI", "?"))
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        code = (event.get("responseStatus") or {}).get("code", 0)
        if verb == "create" and resource == "jobs" and code == 201:
            name = ref.get("name") or ""
            stamp = name.rsplit("-", 1)[-1]
            if stamp.isdigit() and int(stamp) in wanted:
                delays[int(stamp)].append(t - int(stamp))
        if not args.window_start <= t < args.window_end:
            continue
        agents.add(event.get("userAgent", ""))
        counts["requests"] += 1
        if code >= 400:
            counts["failed"] += 1
            key = f"{verb} {resource} {code}"
            counts["failed_by_code"][key] = counts["failed_by_code"].get(key, 0) + 1
        key = f"{verb} {resource}"
        counts["by_verb_resource"][key] = counts["by_verb_resource"].get(key, 0) + 1
        if verb in READS:
            counts["reads"] += 1
        if verb in WRITES:
            counts["writes"] += 1
    out = {
        "window": counts,
        "create_received": stats([d for ds in delays.values() for d in ds], args.n * len(wanted)),
        "user_agents": sorted(agents),
    }
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def conn_args(s):
        s.add_argument("--port", type=int, required=True)
        s.add_argument("--ca", required=True)
        s.add_argument("--cert", required=True)
        s.add_argument("--key", required=True)
        s.add_argument("--parallel", type=int, default=8)

    s = sub.add_parser("create")
    conn_args(s)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--namespaces", type=int, default=10)
    s.add_argument("--prefix", default="bench")
    s.add_argument("--schedule", default="*/1 * * * *")
    s = sub.add_parser("wait")
    conn_args(s)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--at", type=float, required=True, help="the scheduled time (epoch seconds)")
    s.add_argument("--start", type=float, required=True, help="epoch seconds the timeout counts from")
    s.add_argument("--timeout", type=float, required=True)
    s = sub.add_parser("jobs")
    conn_args(s)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--at", action="append", default=[], help="a scheduled time measured (epoch seconds)")
    s.add_argument("--window-start", type=float, required=True)
    s.add_argument("--window-end", type=float, required=True)
    s = sub.add_parser("audit")
    s.add_argument("--log", required=True)
    s.add_argument("--user", required=True)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--at", action="append", default=[])
    s.add_argument("--window-start", type=float, required=True)
    s.add_argument("--window-end", type=float, required=True)
    args = p.parse_args()
    if args.command == "audit":
        cmd_audit(args)
    else:
        {"create": cmd_create, "wait": cmd_wait, "jobs": cmd_jobs}[args.command](kube.Api(args), args)


if __name__ == "__main__":
    main()
