#!/usr/bin/env python3
"""The Kubernetes side of scripts/bench-sidebyside.sh, with no dependency beyond Python 3.

Talks to the API server over HTTPS with a client certificate (the harness's own user, `admin`,
never the operator's), so that its requests are easy to leave out of the audit counts:

  create   N Memcached objects (and the namespaces they live in), in parallel
  wait     until every Memcached has its Deployment and a status condition (converge), or until
           every Memcached's Deployment has spec.replicas == SIZE (resize), or until every
           Memcached's status reports its current generation (reported); one list, then a watch
  resize   merge-patch spec.size of every Memcached, in parallel
  edits    merge-patch spec.size of COUNT single Memcacheds, one every INTERVAL seconds, and time
           each until its Deployment has the new spec.replicas (the latency of a user's edit)
  audit    count the requests of one user in an audit log (JSON lines), per phase

Every wait has a timeout; every answer is one JSON object on stdout.
"""

import argparse
import calendar
import concurrent.futures
import glob
import http.client
import json
import os
import ssl
import sys
import threading
import time
from urllib.parse import quote

GROUP, VERSION, PLURAL, KIND = "cache.example.com", "v1alpha1", "memcacheds", "Memcached"


class Api:
    """One keep-alive HTTPS connection per thread to https://127.0.0.1:PORT."""

    def __init__(self, args):
        self.port = args.port
        self.ctx = ssl.create_default_context(cafile=args.ca)
        self.ctx.load_cert_chain(args.cert, args.key)
        self.local = threading.local()

    def connection(self, timeout=60):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=timeout)
        # The serving certificate names localhost and 127.0.0.1.
        return conn

    def request(self, method, path, body=None, content_type="application/json"):
        for attempt in range(5):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = self.connection()
            headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status == 429 or resp.status >= 500:
                time.sleep(0.2 * (attempt + 1))
                continue
            return resp.status, (json.loads(payload) if payload else None)
        raise RuntimeError(f"{method} {path}: no answer after 5 attempts")

    def list_all(self, path, limit=500):
        """Every item of a paginated list, and the list's resourceVersion."""
        items, cont = [], ""
        while True:
            sep = "&" if "?" in path else "?"
            url = f"{path}{sep}limit={limit}" + (f"&continue={quote(cont)}" if cont else "")
            status, body = self.request("GET", url)
            if status != 200:
                raise RuntimeError(f"GET {url}: {status} {body}")
            items.extend(body.get("items") or [])
            cont = body["metadata"].get("continue") or ""
            if not cont:
                return items, body["metadata"]["resourceVersion"]


def cr_path(namespace=None, name=None):
    base = f"/apis/{GROUP}/{VERSION}"
    if namespace is None:
        return f"{base}/{PLURAL}"
    path = f"{base}/namespaces/{namespace}/{PLURAL}"
    return f"{path}/{name}" if name else path


DEPLOYMENTS = "/apis/apps/v1/deployments"
USER_AGENT = "bench-sidebyside"


def cmd_create(api, args):
    namespaces = [f"{args.prefix}-{i}" for i in range(args.namespaces)]
    for ns in namespaces:
        status, body = api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if status not in (201, 409):
            raise RuntimeError(f"creating namespace {ns}: {status} {body}")

    def create(i):
        ns = namespaces[i % len(namespaces)]
        obj = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "metadata": {"name": f"memcached-{i}", "namespace": ns},
            # kubebuilder's CRD requires containerPort; memop's has no such field and prunes it.
            "spec": {"size": args.size, "containerPort": 11211},
        }
        status, body = api.request("POST", cr_path(ns), obj)
        if status not in (201, 409):
            raise RuntimeError(f"creating memcached-{i}: {status} {body}")

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(create, range(args.n)))
    print(json.dumps({"created": args.n, "namespaces": len(namespaces), "seconds": round(time.time() - t0, 2)}))


def cmd_resize(api, args):
    items, _ = api.list_all(cr_path())
    keys = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items]

    def patch(key):
        ns, name = key
        status, body = api.request("PATCH", cr_path(ns, name), {"spec": {"size": args.size}}, "application/merge-patch+json")
        if status != 200:
            raise RuntimeError(f"patching {ns}/{name}: {status} {body}")

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(patch, keys))
    print(json.dumps({"patched": len(keys), "seconds": round(time.time() - t0, 2)}))


def cmd_edits(api, args):
    """COUNT edits of single objects, spread over the namespaces and names create made, one
    every INTERVAL seconds (each sent without waiting for the ones before): the seconds from
    sending each patch until the event of the watch of Deployments that shows the new replicas
    arrives (stamped as it is read, so the figure does not depend on how often it is looked
    at)."""
    deployments = Watch(api, DEPLOYMENTS, deployment_summary)
    deployments.start()
    while not deployments.snapshot():
        if deployments.error is not None:
            raise RuntimeError(f"watch of {DEPLOYMENTS}: {deployments.error}")
        time.sleep(0.05)
    stride = max(1, args.n // args.count)
    picks = [(k * stride + k) % args.n for k in range(args.count)]
    latencies, timeouts = [None] * args.count, []

    def edit(k):
        i = picks[k]
        ns, name = f"{args.prefix}-{i % args.namespaces}", f"memcached-{i}"
        keys = [key for key, (owner, _, _) in deployments.snapshot().items() if key[0] == ns and owner == name]
        t0 = time.time()
        status, body = api.request("PATCH", cr_path(ns, name), {"spec": {"size": args.size}},
                                   "application/merge-patch+json")
        if status != 200:
            raise RuntimeError(f"patching {ns}/{name}: {status} {body}")
        with deployments.changed:
            while True:
                seen = [deployments.stamps.get(key) for key in keys
                        if (deployments.state.get(key) or (None, None, None))[1] == args.size]
                seen = [t for t in seen if t is not None and t >= t0]
                if seen:
                    latencies[k] = round(min(seen) - t0, 4)
                    return
                left = t0 + args.timeout - time.time()
                if left <= 0:
                    break
                deployments.changed.wait(left)
        timeouts.append(f"{ns}/{name}")

    threads = []
    for k in range(args.count):
        t = threading.Thread(target=edit, args=(k,))
        t.start()
        threads.append(t)
        time.sleep(args.interval)
    for t in threads:
        t.join()
    done = sorted(x for x in latencies if x is not None)

    def rank(q):  # nearest rank
        return done[max(0, min(len(done) - 1, -(-len(done) * q // 100) - 1))] if done else None

    print(json.dumps({"edits": args.count, "done": len(done), "timeouts": timeouts, "median": rank(50),
                      "p99": rank(99), "max": done[-1] if done else None, "latencies": done,
                      "in_order": latencies}))


class Watch(threading.Thread):
    """A list, then a watch from its resourceVersion (again from a list if the watch ends),
    keeping `summary(object)` for each object in `state`."""

    def __init__(self, api, path, summary):
        super().__init__(daemon=True)
        self.api, self.path, self.summary = api, path, summary
        self.state, self.lock, self.error = {}, threading.Lock(), None
        # When each object's latest event was read, and a condition notified at each event.
        self.stamps, self.changed = {}, threading.Condition(self.lock)

    def key(self, obj):
        return (obj["metadata"].get("namespace"), obj["metadata"]["name"])

    def run(self):
        try:
            while True:
                items, rv = self.api.list_all(self.path)
                with self.lock:
                    self.state = {self.key(o): self.summary(o) for o in items}
                self.watch(rv)
        except Exception as err:  # reported by the waiting thread
            self.error = err

    def watch(self, rv):
        conn = self.api.connection(timeout=120)
        try:
            conn.request("GET", f"{self.path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion={rv}",
                         headers={"Accept": "application/json", "User-Agent": USER_AGENT})
            resp = conn.getresponse()
            if resp.status != 200:
                return
            while True:
                line = resp.readline()
                if not line:
                    return
                event = json.loads(line)
                obj = event.get("object") or {}
                if event["type"] in ("ADDED", "MODIFIED"):
                    read = time.time()
                    with self.lock:
                        self.state[self.key(obj)] = self.summary(obj)
                        self.stamps[self.key(obj)] = read
                        self.changed.notify_all()
                elif event["type"] == "DELETED":
                    with self.lock:
                        self.state.pop(self.key(obj), None)
                elif event["type"] == "ERROR":
                    return
        except (OSError, http.client.HTTPException, ValueError):
            return
        finally:
            conn.close()

    def snapshot(self):
        with self.lock:
            return dict(self.state)

    def get(self, key):
        with self.lock:
            return self.state.get(key)


def deployment_summary(obj):
    owners = [o["name"] for o in obj["metadata"].get("ownerReferences") or [] if o.get("kind") == KIND]
    status = obj.get("status") or {}
    # Ready: the deployment controller saw this spec and every replica of it is ready.
    ready = (status.get("observedGeneration", 0) >= obj["metadata"].get("generation", 0)
             and status.get("readyReplicas", 0) == (obj.get("spec") or {}).get("replicas")
             and status.get("updatedReplicas", 0) == status.get("readyReplicas", 0))
    return (owners[0] if owners else None, (obj.get("spec") or {}).get("replicas"), ready)


def memcached_summary(obj):
    return len((obj.get("status") or {}).get("conditions") or [])


def memcached_reported(obj):
    """Whether the status reports the object's current spec: it has a condition, and every
    condition that names the generation it observed names the current one (kubebuilder's
    conditions name none, and are written in the reconcile that acts on the spec)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    generation = obj["metadata"].get("generation")
    return bool(conditions) and all(c.get("observedGeneration", generation) == generation for c in conditions)


def cmd_wait(api, args):
    deployments = Watch(api, DEPLOYMENTS, deployment_summary)
    deployments.start()
    memcacheds = None
    if args.until == "converged":
        memcacheds = Watch(api, cr_path(), memcached_summary)
        memcacheds.start()
    elif args.until == "reported":
        memcacheds = Watch(api, cr_path(), memcached_reported)
        memcacheds.start()
    deadline = args.start + args.timeout
    result = {"until": args.until, "n": args.n}
    while True:
        now = time.time()
        for w in (deployments, memcacheds):
            if w is not None and w.error is not None:
                raise RuntimeError(f"watch of {w.path}: {w.error}")
        deps = deployments.snapshot()
        if args.until == "converged":
            owners = {(ns, owner) for (ns, _), (owner, _, _) in deps.items() if owner}
            result["with_deployment"] = len(owners)
            if len(owners) >= args.n and "deployments_seconds" not in result:
                result["deployments_seconds"] = round(now - args.start, 2)
            with_condition = sum(1 for c in memcacheds.snapshot().values() if c > 0)
            result["with_condition"] = with_condition
            if with_condition >= args.n and "conditions_seconds" not in result:
                result["conditions_seconds"] = round(now - args.start, 2)
            if "deployments_seconds" in result and "conditions_seconds" in result:
                result["seconds"] = max(result["deployments_seconds"], result["conditions_seconds"])
                break
        elif args.until == "reported":
            reported = sum(1 for ok in memcacheds.snapshot().values() if ok)
            result["reported"] = reported
            if reported >= args.n:
                result["seconds"] = round(now - args.start, 2)
                break
        elif args.until == "resized":
            resized = sum(1 for (owner, replicas, _) in deps.values() if owner and replicas == args.size)
            result["resized"] = resized
            if resized >= args.n:
                result["seconds"] = round(now - args.start, 2)
                break
        else:  # ready: with real pods, every replica of every Deployment at --size is ready
            ready = sum(1 for (owner, replicas, ok) in deps.values() if owner and replicas == args.size and ok)
            result["ready"] = ready
            if ready >= args.n:
                result["seconds"] = round(now - args.start, 2)
                break
        if now > deadline:
            result["timeout"] = args.timeout
            print(json.dumps(result))
            sys.exit(1)
        time.sleep(0.2)
    print(json.dumps(result))


READS = {"get", "list", "watch"}
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def cmd_audit(args):
    """Counts the requests of `user` per phase (`name=start:end`, epoch seconds, by the time the
    API server received them), each request once (its last stage wins)."""
    phases = []
    for spec in args.phase:
        name, span = spec.split("=", 1)
        start, end = span.split(":")
        phases.append((name, float(start), float(end)))
    events = {}
    user_agents = set()
    # The API server rotates its log (to audit-<time>.log beside it) past --audit-log-maxsize.
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
    out = {}
    for name, start, end in phases:
        counts = {"requests": 0, "reads": 0, "writes": 0, "deployment_gets": 0, "failed": 0, "by_verb": {},
                  "writes_by_resource": {}, "failed_by_code": {}}
        for event in events.values():
            t = parse_time(event["requestReceivedTimestamp"])
            if not start <= t < end:
                continue
            verb = event.get("verb", "")
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", event.get("requestURI", "?"))
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            counts["requests"] += 1
            code = (event.get("responseStatus") or {}).get("code", 0)
            if code >= 400:
                counts["failed"] += 1
                key = f"{verb} {resource} {code}"
                counts["failed_by_code"][key] = counts["failed_by_code"].get(key, 0) + 1
            counts["by_verb"][verb] = counts["by_verb"].get(verb, 0) + 1
            if verb in READS:
                counts["reads"] += 1
            if verb in WRITES:
                counts["writes"] += 1
                key = f"{verb} {resource}"
                counts["writes_by_resource"][key] = counts["writes_by_resource"].get(key, 0) + 1
            if verb == "get" and ref.get("resource") == "deployments":
                counts["deployment_gets"] += 1
            user_agents.add(event.get("userAgent", ""))
        out[name] = counts
    out["user_agents"] = sorted(user_agents)
    print(json.dumps(out))


def parse_time(text):
    # 2026-12-02T07:40:01.123456Z
    main, _, frac = text.rstrip("Z").partition(".")
    t = calendar.timegm(time.strptime(main, "%Y-%m-%dT%H:%M:%S"))
    return t + (float("0." + frac) if frac else 0.0)


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
    s.add_argument("--size", type=int, default=1)
    s = sub.add_parser("resize")
    conn_args(s)
    s.add_argument("--size", type=int, required=True)
    s = sub.add_parser("edits")
    conn_args(s)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--namespaces", type=int, default=10)
    s.add_argument("--prefix", default="bench")
    s.add_argument("--count", type=int, default=20)
    s.add_argument("--size", type=int, required=True)
    s.add_argument("--interval", type=float, default=1.0)
    s.add_argument("--timeout", type=float, default=300)
    s = sub.add_parser("wait")
    conn_args(s)
    s.add_argument("--until", choices=["converged", "resized", "ready", "reported"], required=True)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--size", type=int, default=2)
    s.add_argument("--start", type=float, required=True, help="epoch seconds the times count from")
    s.add_argument("--timeout", type=float, required=True, help="seconds after --start")
    s = sub.add_parser("audit")
    s.add_argument("--log", required=True)
    s.add_argument("--user", required=True)
    s.add_argument("--phase", action="append", default=[], help="name=start:end (epoch seconds)")
    args = p.parse_args()
    if args.command == "audit":
        cmd_audit(args)
    else:
        {"create": cmd_create, "resize": cmd_resize, "edits": cmd_edits, "wait": cmd_wait}[args.command](Api(args), args)


if __name__ == "__main__":
    main()
