#!/usr/bin/python3
"""Conformance: the official Backend.AI client 22.03.2 against a running bai stack.

Starts bai-manager (SQLite, embedded storage proxy) and a bai-agent (runc when run as root and
runc is installed, else the dummy backend) on free loopback ports, then runs the official
client's commands one by one. Each case asserts the command's effect, read back through the
server with `bai api` (the session exists, the bytes match, the folder is gone…), not only its
exit code: the official CLI often prints an error and exits 0.

The client is found through BAI_OFFICIAL_CLIENT (the `backend.ai` script that
shared/tools/official-client/build.sh writes). Without it the suite reports itself skipped
(exit 77), never passed.

  conformance.py BUILD_DIR [--table FILE] [--only SUBSTRING] [--keep]

--table writes the command table (every command of the 22.03.2 CLI, with what this run saw) as
Markdown; docs/conformance.md embeds it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

SKIP = 77

# Every command of the 22.03.2 CLI (backend.ai-client-py 22.03.2 + backend.ai-cli 0.6.0) that no
# case below runs, and why. A command absent from both this map and the cases is an error: the
# table must be complete.
NOT_RUN: dict[str, str] = {
    # Streams (WebSocket): issue 23.
    "proxy": "not served yet: a local WebSocket proxy to `/stream` (#23)",
    "ssh": "not served yet: sshd service port (#23)",
    "scp": "not served yet: sshd service port (#23)",
    "session ssh": "not served yet: sshd service port (#23)",
    "session scp": "not served yet: sshd service port (#23)",
    # Administration: issue 24.
    "admin license show": "not served: an enterprise licence query with no meaning here",
    "admin etcd get": "not served: raw etcd access (bai keeps its settings in the database)",
    "admin etcd set": "not served: raw etcd access",
    "admin etcd delete": "not served: raw etcd access",
    "admin watcher status": "not served yet: agent watcher (#25)",
    "admin watcher agent-start": "not served yet: agent watcher (#25)",
    "admin watcher agent-stop": "not served yet: agent watcher (#25)",
    "admin watcher agent-restart": "not served yet: agent watcher (#25)",
    "admin vfolder get-fstab-contents": "not served: deprecated admin endpoint (DECISIONS.md, Storage)",
    "admin vfolder list-mounts": "not served: deprecated admin endpoint (DECISIONS.md, Storage)",
    "admin vfolder mount-host": "not served: deprecated admin endpoint (DECISIONS.md, Storage)",
    "admin vfolder umount-host": "not served: deprecated admin endpoint (DECISIONS.md, Storage)",
    "admin vfolder perf-metric": "not served yet: storage performance metrics (#25)",
    "create-from-template": "fails in the client itself: its CLI passes callback_url, which its SDK's create_from_template does not take (TypeError before any request; click 8 also fails on its int options' `undefined` defaults)",
    "session create-from-template": "fails in the client itself: its CLI passes callback_url, which its SDK's create_from_template does not take (TypeError before any request; click 8 also fails on its int options' `undefined` defaults)",
    "vfolder cp": "fails in the client itself: it raises NotImplementedError",
    "vfolder request-download": "fails in the client itself: its SDK has no "
                                "`VFolder.request_download` (AttributeError before any request)",
}


@dataclass
class Result:
    rc: int
    out: str
    err: str

    def text(self) -> str:
        return self.out + self.err


class Failure(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise Failure(what)


# The official CLI reports most failures by printing and exiting 0: these mark such output.
ERROR_MARKS = ("Traceback (most recent call last)", "✗", "BackendAPIError", "BackendClientError",
               "Error:", "error:")


def clean(r: Result, what: str = "the command") -> None:
    expect(r.rc == 0, f"{what} exited {r.rc}")
    for mark in ERROR_MARKS:
        expect(mark not in r.text(), f"{what} printed {mark!r}")


class Stack:
    """bai-manager + bai-agent on free loopback ports, state in a temporary directory."""

    def __init__(self, build: str, keep: bool):
        self.build = os.path.abspath(build)
        self.bin = os.path.join(self.build, "bin")
        self.dir = tempfile.mkdtemp(prefix="bai-conformance-")
        self.keep = keep
        self.procs: list[subprocess.Popen] = []
        self.backend = "runc" if os.geteuid() == 0 and shutil.which("runc") else "dummy"

    def start(self) -> None:
        data = os.path.join(self.dir, "manager")
        log = open(os.path.join(self.dir, "manager.log"), "w")
        m = subprocess.Popen([f"{self.bin}/bai-manager", "--data-dir", data, "--listen",
                              "127.0.0.1:0", "--storage-listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=log, text=True)
        self.procs.append(m)
        port = None
        deadline = time.time() + 30
        while time.time() < deadline:
            line = m.stdout.readline()
            if not line:
                break
            hit = re.search(r"listening on [\d.]+:(\d+)", line)
            if hit:
                port = int(hit.group(1))
                break
        if port is None:
            raise RuntimeError("bai-manager did not start; see " + log.name)
        self.endpoint = f"http://127.0.0.1:{port}"
        creds = {}
        with open(os.path.join(data, "admin-credentials.env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                creds[k] = v
        self.admin = (creds["BACKEND_ACCESS_KEY"], creds["BACKEND_SECRET_KEY"])
        fixture = os.path.join(self.dir, "fixture.json")
        # The user joins the default project (for project folders); its id is the manager's.
        import sqlite3
        db = sqlite3.connect(os.path.join(data, "manager.db"))
        group_id = db.execute("SELECT id FROM groups WHERE name = 'default'").fetchone()[0]
        db.close()
        FIXTURE["association_groups_users"] = [{"group_id": group_id, "user_id": USER_ID}]
        with open(fixture, "w") as f:
            json.dump(FIXTURE, f)
        subprocess.run([f"{self.bin}/bai-manager", "--data-dir", data, "fixture", "load", fixture],
                       check=True, capture_output=True)
        agent = [f"{self.bin}/bai-agent", "--manager", self.endpoint, "--id", "conformance-agent",
                 "--cluster-secret-file", os.path.join(data, "cluster-secret"),
                 "--backend", self.backend, "--state-dir", os.path.join(self.dir, "agent"),
                 "--slots", "cpu=4,mem=4g"]
        if self.backend == "runc":
            agent.append("--stop-kernels-on-exit")
        else:
            agent += ["--images", "python,shell", "--dummy-prepare-ms", "50"]
        alog = open(os.path.join(self.dir, "agent.log"), "w")
        self.procs.append(subprocess.Popen(agent, stdout=alog, stderr=alog))
        # The agent is ready once it is ALIVE (resource slots are known before it registers: a
        # first case creating a session could be answered PENDING, "no agent serves it").
        deadline = time.time() + 60
        query = {"query": '{ agents(status: "ALIVE") { id } }'}
        while time.time() < deadline:
            r = self.api("POST", "/admin/gql", query)
            if r.rc == 0 and "conformance-agent" in r.out:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("the agent did not register; see " + alog.name)
        # bai-webserver on the manager's database: session mode (login, logout, update-password).
        wlog = open(os.path.join(self.dir, "webserver.log"), "w")
        w = subprocess.Popen([f"{self.bin}/bai-webserver", "--manager", self.endpoint,
                              "--data-dir", data, "--listen", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=wlog, text=True)
        self.procs.append(w)
        line = w.stdout.readline()
        hit = re.search(r"console at (http://[\d.]+:\d+)/", line)
        if not hit:
            raise RuntimeError("bai-webserver did not start; see " + wlog.name)
        self.web_endpoint = hit.group(1)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, keys=None, session=False) -> dict:
        ak, sk = keys or self.admin
        e = dict(os.environ)
        e.update(BACKEND_ENDPOINT=self.endpoint, BACKEND_ACCESS_KEY=ak, BACKEND_SECRET_KEY=sk,
                 BACKEND_ENDPOINT_TYPE="api", HOME=os.path.join(self.dir, "home"),
                 XDG_CONFIG_HOME=os.path.join(self.dir, "home", ".config"),
                 PYTHONWARNINGS="ignore", NO_COLOR="1", TERM="dumb")
        if session:
            # Session mode: the webserver, no keys, and a home of its own for the cookie jar.
            home = os.path.join(self.dir, "home-session")
            e.update(BACKEND_ENDPOINT=self.web_endpoint, BACKEND_ENDPOINT_TYPE="session",
                     BACKEND_ACCESS_KEY="", BACKEND_SECRET_KEY="", HOME=home,
                     XDG_CONFIG_HOME=os.path.join(home, ".config"),
                     XDG_STATE_HOME=os.path.join(home, ".local", "state"))
        os.makedirs(e["HOME"], exist_ok=True)
        return e

    def api(self, method: str, path: str, data=None, keys=None) -> Result:
        """A signed request through our own CLI: the effect of what the official client did."""
        argv = [f"{self.bin}/bai", "api", method, path]
        if data is not None:
            argv += ["-d", json.dumps(data)]
        p = subprocess.run(argv, env=self.env(keys), capture_output=True, text=True, timeout=60)
        return Result(p.returncode, p.stdout, p.stderr)

    def api_json(self, method: str, path: str, data=None, keys=None):
        r = self.api(method, path, data, keys)
        expect(r.rc == 0, f"bai api {method} {path} exited {r.rc}: {r.err.strip()}")
        return json.loads(r.out) if r.out.strip() else None

    def gql(self, query: str, variables=None, keys=None):
        body = self.api_json("POST", "/admin/gql", {"query": query, "variables": variables or {}},
                             keys)
        expect(not body.get("errors"), f"GraphQL errors: {body.get('errors')}")
        return body["data"]


USER_EMAIL = "conformance-user@example.com"
USER_ID = "00000000-0000-4000-8000-0000000000c1"
USER_KEYS = ("AKIACONFORMUSER00000", "conformance-user-secret-000000000000000")
FIXTURE = {
    "users": [{"uuid": USER_ID, "username": "conformance-user",
               "email": USER_EMAIL, "password": "conformance-password", "role": "user",
               "domain_name": "default"}],
    "association_groups_users": [],
    "keypairs": [{"access_key": USER_KEYS[0], "secret_key": USER_KEYS[1],
                  "user_id": USER_ID, "resource_policy": "default"}],
}


@dataclass
class Case:
    command: str  # the CLI command path, as in the table
    run: Callable[["Runner"], None]
    note: str = ""


@dataclass
class Runner:
    stack: Stack
    client: str
    work: str
    log: list = field(default_factory=list)

    def bai(self, *argv, keys=None, timeout=120, stdin=None, session=False) -> Result:
        """Runs the official client (in session mode, through bai-webserver, when asked)."""
        p = subprocess.run([self.client, *argv], env=self.stack.env(keys, session),
                           capture_output=True, text=True, timeout=timeout, cwd=self.work,
                           input=stdin)
        self.log.append((" ".join(argv), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
        return Result(p.returncode, p.stdout, p.stderr)

    def bai_json(self, *argv, keys=None):
        r = self.bai("--output", "json", *argv, keys=keys)
        clean(r)
        return json.loads(r.out)

    def session(self, name: str, keys=None):
        r = self.stack.api("GET", f"/session/{name}", keys=keys)
        if r.rc != 0:
            return None
        return json.loads(r.out)

    def wait_status(self, name: str, statuses, timeout=60):
        deadline = time.time() + timeout
        info = None
        while time.time() < deadline:
            info = self.session(name)
            if info and info.get("status") in statuses:
                return info
            time.sleep(0.3)
        raise Failure(f"session {name} did not reach {statuses}: {info and info.get('status')}")

    def file(self, name: str, data: bytes) -> str:
        path = os.path.join(self.work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return path


def payload(n: int, seed: str) -> bytes:
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        out += block
        block = hashlib.sha256(block).digest()
    return bytes(out[:n])


def shows(argv: list, needle, what: str) -> Callable[["Runner"], None]:
    """A case whose effect is what the command prints: it runs cleanly and shows `needle` (a
    string, or a function of the runner giving one)."""
    def run(r: "Runner"):
        res = r.bai(*argv)
        clean(res)
        expect((needle(r) if callable(needle) else needle) in res.out, what)
    return run


# --- sessions -------------------------------------------------------------------------------

def case_session_create(r: Runner):
    res = r.bai("session", "create", "-t", "conf-int", "-r", "cpu=1", "-r", "mem=256m", "python")
    clean(res)
    info = r.wait_status("conf-int", {"RUNNING"})
    expect(info["image"].startswith("python") or "python" in info["image"], f"image {info['image']}")


def case_create_alias(r: Runner):
    res = r.bai("create", "-t", "conf-batch", "--type", "batch", "-c", "echo conformance-out",
                "-r", "cpu=1", "-r", "mem=256m", "python")
    clean(res)
    info = r.wait_status("conf-batch", {"TERMINATED", "ERROR"})
    expect(info["status"] == "TERMINATED", f"batch session ended {info['status']}")


def case_session_list(r: Runner):
    res = r.bai("session", "list")
    clean(res)
    expect("conf-int" in res.out, "session list does not list conf-int")
    # Every status the client knows is accepted (it sends kernel statuses such as RESIZING).
    res = r.bai("session", "list", "--dead")
    clean(res, "session list --dead")
    expect("conf-batch" in res.out and "conf-int" not in res.out, f"--dead: {res.out}")
    for flags in (["--running"], ["--status", "RESIZING"], ["--status", "ALL"]):
        res = r.bai("session", "list", *flags)
        clean(res, "session list " + " ".join(flags))
    expect("conf-batch" in res.out and "conf-int" in res.out, f"--status ALL: {res.out}")


def case_admin_session_list(r: Runner):
    items = r.bai_json("admin", "session", "list", "--status", "ALL")["items"]
    names = {i.get("name") for i in items}
    expect({"conf-int", "conf-batch"} <= names, f"admin session list shows {sorted(names)}")


def sid(r: Runner, name: str) -> str:
    """The 22.03 client's info commands take a session UUID only (a check of its own)."""
    return r.session(name)["sessionId"]


def case_admin_session_info(r: Runner):
    res = r.bai("admin", "session", "info", sid(r, "conf-int"))
    clean(res)
    expect("conf-int" in res.out, "admin session info does not name the session")


def case_session_info(r: Runner):
    res = r.bai("session", "info", sid(r, "conf-int"))
    clean(res)
    expect("RUNNING" in res.out, "session info does not show RUNNING")


def case_info_alias(r: Runner):
    res = r.bai("info", sid(r, "conf-batch"))
    clean(res)
    expect("TERMINATED" in res.out, "info does not show TERMINATED for the batch session")


def case_session_upload(r: Runner):
    _needs_runc(r)
    data = payload(100_000, "session-upload")
    r.file("up/conf-data.bin", data)
    res = r.bai("session", "upload", "conf-int", "up/conf-data.bin")
    clean(res)
    got = subprocess.run([f"{r.stack.bin}/bai", "api", "GET",
                          "/session/conf-int/download_single?file=up/conf-data.bin"],
                         env=r.stack.env(), capture_output=True, timeout=60)
    expect(got.returncode == 0, f"the uploaded file is not in the session: {got.stderr!r}")
    # `bai api` ends what it prints with a newline.
    expect(got.stdout in (payload(100_000, "session-upload"),
                          payload(100_000, "session-upload") + b"\n"),
           "the session holds other bytes")


def case_session_ls(r: Runner):
    _needs_runc(r)
    res = r.bai("session", "ls", "conf-int", "/home/work/up")
    clean(res)
    expect("conf-data.bin" in res.out, "session ls does not list the uploaded file")


def case_session_download(r: Runner):
    _needs_runc(r)
    dest = os.path.join(r.work, "down")
    os.makedirs(dest, exist_ok=True)
    res = r.bai("session", "download", "conf-int", "up/conf-data.bin", "--dest", dest)
    clean(res)
    with open(os.path.join(dest, "conf-data.bin"), "rb") as f:
        expect(f.read() == payload(100_000, "session-upload"), "downloaded bytes differ")


def case_session_rename(r: Runner):
    res = r.bai("session", "rename", "conf-int", "conf-renamed")
    clean(res)
    expect(r.session("conf-renamed") is not None, "no session under the new name")
    expect(r.session("conf-int") is None, "the old name still answers")
    clean(r.bai("session", "rename", "conf-renamed", "conf-int"), "renaming back")


def case_session_restart(r: Runner):
    res = r.bai("session", "restart", "conf-int")
    clean(res)
    info = r.wait_status("conf-int", {"RUNNING"})
    hist = r.stack.api_json("GET", "/session/conf-int/status-history")
    expect("RESTARTING" in json.dumps(hist), f"no RESTARTING in the history: {hist}")
    del info


def case_restart_alias(r: Runner):
    clean(r.bai("restart", "conf-int"))
    r.wait_status("conf-int", {"RUNNING"})


def wait_connected(p: subprocess.Popen, port: int, timeout: float = 30) -> None:
    """Until process `p` holds an established TCP connection to `port` (its request is out), plus
    a moment for the server to subscribe it: a fixed sleep lost the race on a loaded machine."""
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        inodes = set()
        try:
            for fd in os.listdir(f"/proc/{p.pid}/fd"):
                link = os.readlink(f"/proc/{p.pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            pass
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if (cols[3] == "01" and int(cols[2].split(":")[1], 16) == port
                        and cols[9] in inodes):
                    time.sleep(0.5)
                    return
        time.sleep(0.1)


def watch_events(r: Runner, p: subprocess.Popen, name: str):
    """Destroys `name` while `p` (the client's events command) follows it; its output once the
    session has ended (the stream stays open, as 24.09's does: the client is interrupted)."""
    wait_connected(p, int(r.stack.endpoint.rsplit(":", 1)[1]))
    r.stack.api("DELETE", f"/session/{name}")
    try:
        r.wait_status(name, {"TERMINATED"}, timeout=30)
    except Failure:
        pass
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        return p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()


def follows_events(*argv: str) -> Callable[["Runner"], None]:
    """A case for `session events` and its alias `events`: the termination of a session it
    follows is printed."""
    def run(r: Runner):
        name = "conf-ev-" + argv[0]
        clean(r.bai("session", "create", "-t", name, "-r", "cpu=1", "-r", "mem=256m", "python"))
        r.wait_status(name, {"RUNNING"})
        p = subprocess.Popen([r.client, *argv, name], env=r.stack.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=r.work)
        out, err = watch_events(r, p, name)
        expect("session_terminated" in out,
               f"no termination event printed: {out[-500:]} {err[-500:]}")
    return run


def case_session_destroy(r: Runner):
    clean(r.bai("session", "create", "-t", "conf-gone", "-r", "cpu=1", "-r", "mem=256m", "python"))
    r.wait_status("conf-gone", {"RUNNING"})
    res = r.bai("session", "destroy", "conf-gone")
    clean(res)
    info = r.session("conf-gone")
    expect(info is None or info["status"] in ("TERMINATING", "TERMINATED"),
           f"destroyed session is {info and info['status']}")


def case_destroy_alias(r: Runner):
    res = r.bai("destroy", "conf-int")
    clean(res)
    info = r.session("conf-int")
    expect(info is None or info["status"] in ("TERMINATING", "TERMINATED"),
           f"destroyed session is {info and info['status']}")


def _needs_runc(r: Runner):
    if r.stack.backend != "runc":
        raise Skip("needs the runc backend (run as root): the dummy agent has no files")


class Skip(Exception):
    pass


# --- vfolders -------------------------------------------------------------------------------

def folder(r: Runner, name: str, keys=None):
    for f in r.stack.api_json("GET", "/folders", keys=keys):
        if f["name"] == name:
            return f
    return None


def case_vfolder_create(r: Runner):
    res = r.bai("vfolder", "create", "conf-vf", "local:volume1")
    clean(res)
    f = folder(r, "conf-vf")
    expect(f is not None and f["host"] == "local:volume1", f"folder not created: {f}")


def case_vfolder_list(r: Runner):
    res = r.bai("vfolder", "list")
    clean(res)
    expect("conf-vf" in res.out, "vfolder list does not show conf-vf")
    items = r.bai_json("vfolder", "list")["items"]
    expect(any(i.get("name") == "conf-vf" for i in items), "JSON list lacks conf-vf")


def case_vfolder_info(r: Runner):
    res = r.bai("vfolder", "info", "conf-vf")
    clean(res)
    fid = folder(r, "conf-vf")["id"]
    expect(fid.replace("-", "") in res.out.replace("-", ""), "info does not show the folder id")


def case_vfolder_upload(r: Runner):
    r.file("vf/a.bin", payload(300_000, "vf-a"))
    r.file("vf/b.txt", b"hello conformance\n")
    # Larger than the client's 16 MiB chunk (sent without checksums): streamed to the volume.
    r.file("vf/c.bin", payload(20_000_000, "vf-c"))
    # One file per command: 22.03's VFolder.upload returns after its first file (a `return`
    # inside its loop), whatever the server.
    for name in ("vf/a.bin", "vf/b.txt", "vf/c.bin"):
        clean(r.bai("vfolder", "upload", "conf-vf", name), "vfolder upload " + name)
    files = r.stack.api_json("GET", "/folders/conf-vf/files?path=vf")
    names = {i["name"]: i for i in files["items"]}
    expect("a.bin" in names and names["a.bin"]["size"] == 300_000, f"uploaded: {names}")
    expect("b.txt" in names and names["b.txt"]["size"] == 18, f"uploaded: {names}")
    expect("c.bin" in names and names["c.bin"]["size"] == 20_000_000, f"uploaded: {names}")


def case_vfolder_download(r: Runner):
    dest = os.path.join(r.work, "vfdown")
    os.makedirs(os.path.join(dest, "vf"), exist_ok=True)  # the client creates no directories
    for name, size, seed in (("a.bin", 300_000, "vf-a"), ("c.bin", 20_000_000, "vf-c")):
        res = r.bai("vfolder", "download", "conf-vf", "vf/" + name, "-b", dest)
        clean(res)
        got = None
        for root, _, names in os.walk(dest):
            if name in names:
                with open(os.path.join(root, name), "rb") as f:
                    got = f.read()
        expect(got == payload(size, seed), f"downloaded bytes of {name} differ")


def case_vfolder_ls(r: Runner):
    res = r.bai("vfolder", "ls", "conf-vf", "vf")
    clean(res)
    expect("a.bin" in res.out and "b.txt" in res.out, f"ls: {res.out}")


def case_vfolder_mkdir(r: Runner):
    res = r.bai("vfolder", "mkdir", "conf-vf", "newdir")
    clean(res)
    items = r.stack.api_json("GET", "/folders/conf-vf/files")["items"]
    expect(any(i["name"] == "newdir" and i["type"] == "DIRECTORY" for i in items), "no newdir")


def case_vfolder_rename_file(r: Runner):
    res = r.bai("vfolder", "rename-file", "conf-vf", "vf/b.txt", "c.txt")
    clean(res)
    names = {i["name"] for i in r.stack.api_json("GET", "/folders/conf-vf/files?path=vf")["items"]}
    expect("c.txt" in names and "b.txt" not in names, f"after rename-file: {names}")


def case_vfolder_mv(r: Runner):
    res = r.bai("vfolder", "mv", "conf-vf", "vf/c.txt", "newdir/c.txt")
    clean(res)
    names = {i["name"] for i in
             r.stack.api_json("GET", "/folders/conf-vf/files?path=newdir")["items"]}
    expect("c.txt" in names, f"after mv: {names}")


def case_vfolder_rm(r: Runner):
    res = r.bai("vfolder", "rm", "conf-vf", "newdir/c.txt", stdin="y\n")
    clean(res)
    names = {i["name"] for i in
             r.stack.api_json("GET", "/folders/conf-vf/files?path=newdir")["items"]}
    expect("c.txt" not in names, f"after rm: {names}")


def case_vfolder_update_options(r: Runner):
    res = r.bai("vfolder", "update-options", "conf-vf", "--set-cloneable", "true")
    clean(res)
    expect(folder(r, "conf-vf")["cloneable"] is True, "cloneable not set")


def case_vfolder_clone(r: Runner):
    res = r.bai("vfolder", "clone", "conf-vf", "conf-vf-clone", "local:volume1")
    clean(res)
    deadline = time.time() + 30
    while time.time() < deadline:
        f = folder(r, "conf-vf-clone")
        if f and f["status"] == "ready":
            break
        time.sleep(0.3)
    items = r.stack.api_json("GET", "/folders/conf-vf-clone/files?path=vf")["items"]
    expect(any(i["name"] == "a.bin" and i["size"] == 300_000 for i in items), f"clone: {items}")


def case_vfolder_rename(r: Runner):
    res = r.bai("vfolder", "rename", "conf-vf-clone", "conf-vf-clone2")
    clean(res)
    expect(folder(r, "conf-vf-clone2") is not None and folder(r, "conf-vf-clone") is None,
           "rename did not take")


def case_vfolder_invite(r: Runner):
    res = r.bai("vfolder", "invite", "conf-vf", USER_EMAIL, "-p", "ro")
    clean(res)
    inv = r.stack.api_json("GET", "/folders/invitations/list", keys=USER_KEYS)
    expect(any(i.get("vfolder_name") == "conf-vf" for i in inv["invitations"]), f"{inv}")


def case_vfolder_invitations(r: Runner):
    res = r.bai("vfolder", "invitations", keys=USER_KEYS, stdin="1\na\n")
    clean(res)
    expect(folder(r, "conf-vf", keys=USER_KEYS) is not None, "the invitee cannot see the folder")


def case_vfolder_leave(r: Runner):
    res = r.bai("vfolder", "leave", "conf-vf", keys=USER_KEYS, stdin="y\n")
    clean(res)
    expect(folder(r, "conf-vf", keys=USER_KEYS) is None, "the user still sees the folder")


def case_vfolder_share(r: Runner):
    # Sharing is for project folders; a user folder answers 400 in 24.09 too. Make one.
    # Members read it (ro); sharing gives the user more (rw), unsharing takes that back.
    r.stack.api_json("POST", "/folders",
                     {"name": "conf-proj", "group": "default", "permission": "ro"})
    expect(folder(r, "conf-proj", keys=USER_KEYS)["permission"] == "ro", "a member reads it")
    res = r.bai("vfolder", "share", "conf-proj", USER_EMAIL, "-p", "rw")
    clean(res)
    f = folder(r, "conf-proj", keys=USER_KEYS)
    expect(f is not None and f["permission"] == "rw", f"shared folder as the user sees it: {f}")


def case_vfolder_unshare(r: Runner):
    res = r.bai("vfolder", "unshare", "conf-proj", USER_EMAIL)
    clean(res)
    f = folder(r, "conf-proj", keys=USER_KEYS)
    expect(f is not None and f["permission"] == "ro", f"after unshare the user sees: {f}")


def case_vfolder_delete(r: Runner):
    res = r.bai("vfolder", "delete", "conf-vf-clone2")
    clean(res)
    f = folder(r, "conf-vf-clone2")
    expect(f is None or f["status"] != "ready", f"deleted folder: {f}")


# --- admin and misc -------------------------------------------------------------------------

def case_admin_agent_list(r: Runner):
    items = r.bai_json("admin", "agent", "list")["items"]
    expect(any(i.get("id") == "conformance-agent" for i in items), f"agents: {items}")
    res = r.bai("admin", "agent", "list")
    clean(res, "admin agent list (table)")


def agent_schedulable(r: Runner) -> bool:
    data = r.stack.gql('{ agent(agent_id: "conformance-agent") { schedulable } }')
    return data["agent"]["schedulable"]


def case_scheduler_exclude(r: Runner):
    res = r.bai("admin", "manager", "scheduler", "exclude-agents", "conformance-agent")
    clean(res)
    expect(agent_schedulable(r) is False, "the agent is still schedulable")
    bad = r.bai("admin", "manager", "scheduler", "exclude-agents", "no-such-agent")
    expect(bad.rc != 0 and "No such agent" in bad.text(), f"an unknown agent: {bad.text()}")


def case_scheduler_include(r: Runner):
    res = r.bai("admin", "manager", "scheduler", "include-agents", "conformance-agent")
    clean(res)
    expect(agent_schedulable(r) is True, "the agent is not schedulable")


def case_admin_image_list(r: Runner):
    res = r.bai("admin", "image", "list")
    clean(res)
    expect("python" in res.out, "image list lacks python")
    items = r.bai_json("admin", "image", "list")["items"]
    expect(any("python" in (i.get("name") or "") for i in items), f"images: {items}")


def case_manager_status(r: Runner):
    res = r.bai("admin", "manager", "status")
    clean(res)
    expect("running" in res.out.lower(), f"status: {res.out}")


def case_announcement_update(r: Runner):
    res = r.bai("admin", "announcement", "update", "-m", "conformance notice", stdin="y\n")
    clean(res)
    body = r.stack.api_json("GET", "/manager/announcement")
    expect(body == {"enabled": True, "message": "conformance notice"}, f"{body}")


def case_announcement_dismiss(r: Runner):
    # Client-side only: it marks the announcement it last showed as dismissed in its state.
    res = r.bai("admin", "announcement", "dismiss", stdin="y\n")
    clean(res)
    state = os.path.join(r.stack.env()["HOME"], ".local", "state", "backend.ai",
                         "announcement.json")
    with open(state) as f:
        expect(json.load(f).get("dismissed") is True, "the announcement is not dismissed")


def case_announcement_delete(r: Runner):
    clean(r.bai("admin", "announcement", "update", "-m", "again", stdin="y\n"))
    res = r.bai("admin", "announcement", "delete", stdin="y\n")
    clean(res)
    body = r.stack.api_json("GET", "/manager/announcement")
    expect(body.get("enabled") is False, f"{body}")


def case_manager_freeze(r: Runner):
    res = r.bai("admin", "manager", "freeze")
    clean(res)
    expect(r.stack.api_json("GET", "/manager/status")["status"] == "frozen", "not frozen")
    # Frozen, it changes nothing: the client's next mutation is refused.
    r.bai("admin", "domain", "add", "conformance-frozen")
    found = r.stack.gql('{ domain(name: "conformance-frozen") { name } }')["domain"]
    expect(found is None, "a domain was created while the manager was frozen")


def case_manager_unfreeze(r: Runner):
    res = r.bai("admin", "manager", "unfreeze")
    clean(res)
    expect(r.stack.api_json("GET", "/manager/status")["status"] == "running", "still frozen")


DOMAIN = "conformance-domain"


def domain_now(r: Runner):
    return r.stack.gql("query($n: String) { domain(name: $n) { name description is_active } }",
                       {"n": DOMAIN})["domain"]


def case_domain_add(r: Runner):
    res = r.bai("admin", "domain", "add", DOMAIN, "-d", "Made by the official client",
                "--total-resource-slots", '{"cpu": "4", "mem": "8g"}',
                "--allowed-docker-registries", "cr.example.com")
    clean(res)
    d = domain_now(r)
    expect(d is not None and d["description"] == "Made by the official client", f"domain: {d}")


def case_domain_info(r: Runner):
    res = r.bai("admin", "domain", "info", DOMAIN)
    clean(res)
    expect(DOMAIN in res.out and "Made by the official client" in res.out, f"info: {res.out}")


def case_domain_list(r: Runner):
    res = r.bai("admin", "domain", "list")
    clean(res)
    expect(DOMAIN in res.out and "default" in res.out, f"list: {res.out}")


def case_domain_update(r: Runner):
    res = r.bai("admin", "domain", "update", DOMAIN, "--description", "Changed")
    clean(res)
    expect(domain_now(r)["description"] == "Changed", "not changed")


def case_domain_delete(r: Runner):
    res = r.bai("admin", "domain", "delete", DOMAIN)
    clean(res)
    expect(domain_now(r)["is_active"] is False, "still active")


def case_domain_purge(r: Runner):
    res = r.bai("admin", "domain", "purge", DOMAIN, stdin="y\n")  # it asks first
    clean(res)
    expect(domain_now(r) is None, "still there")


PROJECT = "conformance-project"


def project_now(r: Runner):
    found = r.stack.gql("query($n: String!) { groups_by_name(name: $n) { id name description "
                        "is_active } }", {"n": PROJECT})["groups_by_name"]
    return found[0] if found else None


def case_group_add(r: Runner):
    res = r.bai("admin", "group", "add", "default", PROJECT, "-d", "Made by the official client")
    clean(res)
    p = project_now(r)
    expect(p is not None and p["description"] == "Made by the official client", f"project: {p}")


def case_group_info(r: Runner):
    # By id. (By name, 22.03.2's `Group.from_name` joins FieldSpec objects as strings and raises
    # TypeError before any request: a client bug, not exercised here.)
    res = r.bai("admin", "group", "info", project_now(r)["id"])
    clean(res)
    expect(PROJECT in res.out and "Made by the official client" in res.out, f"info: {res.out}")


def case_group_list(r: Runner):
    res = r.bai("admin", "group", "list")
    clean(res)
    expect(PROJECT in res.out and "default" in res.out, f"list: {res.out}")


def case_group_update(r: Runner):
    res = r.bai("admin", "group", "update", project_now(r)["id"], "-d", "Changed")
    clean(res)
    expect(project_now(r)["description"] == "Changed", "not changed")


def case_group_add_users(r: Runner):
    gid = project_now(r)["id"]
    res = r.bai("admin", "group", "add-users", gid, USER_ID)
    clean(res)
    expect(r.stack.gql("query($g: UUID!) { group(id: $g) { name } }", {"g": gid},
                       keys=USER_KEYS)["group"] is not None, "the user does not see it")


def case_group_remove_users(r: Runner):
    gid = project_now(r)["id"]
    res = r.bai("admin", "group", "remove-users", gid, USER_ID)
    clean(res)
    expect(r.stack.gql("query($g: UUID!) { group(id: $g) { name } }", {"g": gid},
                       keys=USER_KEYS)["group"] is None, "the user still sees it")


def case_group_delete(r: Runner):
    res = r.bai("admin", "group", "delete", project_now(r)["id"], stdin="y\n")
    clean(res)
    expect(project_now(r)["is_active"] is False, "still active")


def case_group_purge(r: Runner):
    res = r.bai("admin", "group", "purge", project_now(r)["id"], stdin="y\n")  # it asks first
    clean(res)
    expect(project_now(r) is None, "still there")


ADMIN_USER = "conformance-made@example.com"


def user_now(r: Runner):
    return r.stack.gql("query($e: String) { user(email: $e) { email username full_name role "
                       "status main_access_key } }", {"e": ADMIN_USER})["user"]


def keys_of(r: Runner, email: str):
    return r.stack.gql("query($e: String) { keypairs(email: $e) { access_key is_active is_admin "
                       "rate_limit resource_policy } }", {"e": email})["keypairs"]


def case_user_add(r: Runner):
    res = r.bai("admin", "user", "add", "default", ADMIN_USER, "made-pass-1", "-u", "conf-made",
                "-n", "Made By Client")
    clean(res)
    u = user_now(r)
    expect(u is not None and u["username"] == "conf-made" and u["status"] == "active",
           f"user: {u}")
    keys = keys_of(r, ADMIN_USER)
    expect(len(keys) == 1 and keys[0]["access_key"] == u["main_access_key"],
           f"create_user made no main keypair: {keys}")


def case_user_info(r: Runner):
    res = r.bai("admin", "user", "info", "-e", ADMIN_USER)
    clean(res)
    expect("conf-made" in res.out and ADMIN_USER in res.out, f"info: {res.out}")


def case_user_list(r: Runner):
    res = r.bai("admin", "user", "list")
    clean(res)
    expect(ADMIN_USER in res.out and USER_EMAIL in res.out, f"list: {res.out}")


def case_user_update(r: Runner):
    res = r.bai("admin", "user", "update", ADMIN_USER, "-n", "Renamed By Client")
    clean(res)
    expect(user_now(r)["full_name"] == "Renamed By Client", f"not changed: {user_now(r)}")


def case_user_delete(r: Runner):
    res = r.bai("admin", "user", "delete", ADMIN_USER, stdin="y\n")
    clean(res)
    expect(user_now(r)["status"] == "deleted", f"not deleted: {user_now(r)}")
    expect(all(not k["is_active"] for k in keys_of(r, ADMIN_USER)), "its keypairs stay active")


def case_user_purge(r: Runner):
    res = r.bai("admin", "user", "purge", ADMIN_USER, stdin="y\n")
    clean(res)
    expect(user_now(r) is None, "still there")


def made_key(r: Runner):
    keys = [k for k in keys_of(r, USER_EMAIL) if k["access_key"] != USER_KEYS[0]]
    return keys[0] if keys else None


def case_keypair_add(r: Runner):
    res = r.bai("admin", "keypair", "add", USER_EMAIL, "default", "-r", "777")
    clean(res)
    k = made_key(r)
    expect(k is not None and k["rate_limit"] == 777 and k["is_active"], f"keypair: {k}")
    expect(k["access_key"] in res.out, f"add does not print the new key: {res.out}")


def case_keypair_list(r: Runner):
    res = r.bai("admin", "keypair", "list", "-u", USER_EMAIL)
    clean(res)
    expect(USER_KEYS[0] in res.out and made_key(r)["access_key"] in res.out, f"list: {res.out}")


def case_keypair_info(r: Runner):
    res = r.bai("admin", "keypair", "info")
    clean(res)
    expect(r.stack.admin[0] in res.out, f"info lacks the caller's key: {res.out}")


def case_keypair_update(r: Runner):
    res = r.bai("admin", "keypair", "update", made_key(r)["access_key"], "-r", "888")
    clean(res)
    expect(made_key(r)["rate_limit"] == 888, f"not changed: {made_key(r)}")


def case_keypair_deactivate(r: Runner):
    res = r.bai("admin", "keypair", "deactivate", made_key(r)["access_key"])
    clean(res)
    expect(made_key(r)["is_active"] is False, "still active")


def case_keypair_activate(r: Runner):
    res = r.bai("admin", "keypair", "activate", made_key(r)["access_key"])
    clean(res)
    expect(made_key(r)["is_active"] is True, "still inactive")


def case_keypair_delete(r: Runner):
    ak = made_key(r)["access_key"]
    res = r.bai("admin", "keypair", "delete", ak)
    clean(res)
    expect(made_key(r) is None, f"{ak} still there")


POLICY = "conformance-policy"


def policy_now(r: Runner):
    return r.stack.gql("query($n: String) { keypair_resource_policy(name: $n) { name "
                       "total_resource_slots max_concurrent_sessions idle_timeout } }",
                       {"n": POLICY})["keypair_resource_policy"]


def case_policy_add(r: Runner):
    res = r.bai("admin", "keypair-resource-policy", "add", POLICY, "--total-resource-slots",
                '{"cpu": "4", "mem": "8g"}', "--max-concurrent-sessions", "3",
                "--idle-timeout", "600")
    clean(res)
    p = policy_now(r)
    expect(p is not None and p["max_concurrent_sessions"] == 3 and p["idle_timeout"] == 600,
           f"policy: {p}")
    expect(json.loads(p["total_resource_slots"]).get("mem") == str(8 << 30),
           f"slots not normalised: {p}")


def case_policy_info(r: Runner):
    res = r.bai("admin", "keypair-resource-policy", "info", POLICY)
    clean(res)
    expect(POLICY in res.out, f"info: {res.out}")


def case_policy_list(r: Runner):
    res = r.bai("admin", "keypair-resource-policy", "list")
    clean(res)
    expect(POLICY in res.out and "default" in res.out, f"list: {res.out}")


def case_policy_update(r: Runner):
    res = r.bai("admin", "keypair-resource-policy", "update", POLICY,
                "--max-concurrent-sessions", "5")
    clean(res)
    expect(policy_now(r)["max_concurrent_sessions"] == 5, f"not changed: {policy_now(r)}")


def case_policy_delete(r: Runner):
    res = r.bai("admin", "keypair-resource-policy", "delete", POLICY, stdin="y\n")
    clean(res)
    expect(policy_now(r) is None, "still there")


SGROUP = "conformance-sgroup"


def sgroup_now(r: Runner):
    found = r.stack.gql("{ scaling_groups { name description is_active } }")["scaling_groups"]
    return next((g for g in found if g["name"] == SGROUP), None)


def sgroups_of_default(r: Runner):
    found = r.stack.gql('{ scaling_groups_for_domain(domain: "default") { name } }')
    return {g["name"] for g in found["scaling_groups_for_domain"]}


def case_sgroup_add(r: Runner):
    res = r.bai("admin", "scaling-group", "add", SGROUP, "-d", "Made by the official client")
    clean(res)
    g = sgroup_now(r)
    expect(g is not None and g["description"] == "Made by the official client", f"group: {g}")


def case_sgroup_update(r: Runner):
    res = r.bai("admin", "scaling-group", "update", SGROUP, "-d", "Changed")
    clean(res)
    expect(sgroup_now(r)["description"] == "Changed", f"not changed: {sgroup_now(r)}")


def case_sgroup_associate(r: Runner):
    res = r.bai("admin", "scaling-group", "associate-scaling-group", SGROUP, "default")
    clean(res)
    expect(SGROUP in sgroups_of_default(r), "not associated with the default domain")


def case_sgroup_dissociate(r: Runner):
    res = r.bai("admin", "scaling-group", "dissociate-scaling-group", SGROUP, "default")
    # 22.03.2's command prints its success with item_name='scaling_group', which the mutation
    # (24.09's too) does not answer: KeyError after the dissociation is done. Only that failure
    # is forgiven; the effect is checked.
    if res.rc != 0:
        expect("KeyError: 'scaling_group'" in res.text() and "print_mutation_result" in res.text(),
               f"dissociate failed otherwise: {res.text()[-400:]}")
    else:
        clean(res)
    expect(SGROUP not in sgroups_of_default(r), "still associated")


def case_sgroup_delete(r: Runner):
    res = r.bai("admin", "scaling-group", "delete", SGROUP, stdin="y\n")
    clean(res)
    expect(sgroup_now(r) is None, "still there")


def image_aliases(r: Runner):
    found = r.stack.gql("{ images { name aliases } }")["images"]
    return {a for img in found for a in (img.get("aliases") or [])}


def case_image_alias(r: Runner):
    res = r.bai("admin", "image", "alias", "conformance-py", "python")
    clean(res)
    expect("conformance-py" in image_aliases(r), f"no alias: {image_aliases(r)}")


def case_image_rescan(r: Runner):
    # The agents read their image stores again and every registry is scanned, as a background
    # task the client follows over /events/background-task.
    res = r.bai("admin", "image", "rescan")
    clean(res)
    expect("Started updating the image metadata" in res.text(), f"rescan: {res.text()}")
    expect("Finished registry scanning" in res.text(), f"rescan: {res.text()}")
    bad = r.bai("admin", "image", "rescan", "-r", "cr.backend.ai")
    expect(bad.rc != 0 and "No such registry" in bad.text(),
           f"a registry: {bad.rc} {bad.text()}")
    _rescan_registry(r)


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _oci_layout(path: str, files: dict[str, bytes]) -> None:
    """An OCI image layout of one gzip'd layer holding `files`, tagged "t"."""
    import gzip
    import io
    import tarfile
    os.makedirs(os.path.join(path, "blobs", "sha256"), exist_ok=True)

    def blob(data: bytes) -> tuple[str, int]:
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(path, "blobs", "sha256", digest), "wb") as f:
            f.write(data)
        return "sha256:" + digest, len(data)

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    diff_id = "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()
    layer, layer_size = blob(gzip.compress(raw.getvalue(), mtime=0))
    config, config_size = blob(json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Labels": {"ai.backend.kernelspec": "1", "ai.backend.resource.min.mem": "64m"}},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode())
    manifest, manifest_size = blob(json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config,
                   "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer,
                    "size": layer_size}]}).encode())
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest,
            "size": manifest_size,
            "annotations": {"org.opencontainers.image.ref.name": "t"}}]}, f)
    with open(os.path.join(path, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


def start_local_registry(root: str, procs: list, name: str) -> str:
    """Debian's docker-registry on a free loopback port, its data under `root`, holding lab/app:1
    (one layer: /etc/os-release naming `name`), pushed with skopeo; its host:port. Raises
    RuntimeError (the tool's words) when it cannot. Also used by tests/browser/run.py."""
    for tool in ("/usr/bin/docker-registry", "/usr/bin/skopeo"):
        if not os.path.exists(tool):
            raise RuntimeError(f"{tool} is missing (scripts/install-deps.sh installs it)")
    port = _free_port()
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "config.yml"), "w") as f:
        f.write(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {root}/data\n"
                f"http:\n  addr: 127.0.0.1:{port}\n")
    log = open(os.path.join(root, "registry.log"), "w")
    procs.append(subprocess.Popen(["/usr/bin/docker-registry", "serve",
                                   os.path.join(root, "config.yml")], stdout=log, stderr=log))
    host = f"127.0.0.1:{port}"
    _oci_layout(os.path.join(root, "layout"), {"etc/os-release": f'NAME="{name}"\n'.encode()})
    deadline = time.time() + 30
    while True:
        p = subprocess.run(["/usr/bin/skopeo", "copy", "--dest-tls-verify=false",
                            f"oci:{root}/layout:t", f"docker://{host}/lab/app:1"],
                           capture_output=True, text=True, timeout=60)
        if p.returncode == 0:
            return host
        if time.time() > deadline:
            raise RuntimeError(f"skopeo copy: {p.stderr}")
        time.sleep(0.3)


def _registry(r: Runner) -> str:
    """A registry of the run's own (start_local_registry) holding lab/app:1, registered with
    bai's CLI; its host:port. Started once."""
    if getattr(r.stack, "registry_host", None):
        return r.stack.registry_host
    try:
        host = start_local_registry(os.path.join(r.stack.dir, "registry"), r.stack.procs,
                                    "conformance")
    except RuntimeError as e:
        expect(False, str(e))
    add = subprocess.run([f"{r.stack.bin}/bai", "admin", "registry", "add", host, "--url",
                          f"http://{host}"], env=r.stack.env(), capture_output=True, text=True,
                         timeout=60)
    expect(add.returncode == 0, f"bai admin registry add: {add.stderr}")
    r.stack.registry_host = host
    return host


def _rescan_registry(r: Runner):
    """A registry's images (issue 46): rescanned by the registry's name, listed, aliased."""
    host = _registry(r)
    res = r.bai("admin", "image", "rescan", "-r", host)
    clean(res)
    expect("Finished registry scanning" in res.text(), f"rescan: {res.text()}")
    found = r.stack.gql("{ images { name registry tag digest labels { key value } "
                        "resource_limits { key min } } }")["images"]
    app = [i for i in found if i.get("registry") == host and i.get("name") == "lab/app"]
    expect(len(app) == 1, f"the registry's image: {found}")
    expect(app[0]["tag"] == "1" and (app[0].get("digest") or "").startswith("sha256:"),
           f"image: {app[0]}")
    expect({"key": "mem", "min": "64m"} in app[0]["resource_limits"], f"limits: {app[0]}")
    listed = r.bai("admin", "image", "list")
    clean(listed)
    expect("lab/app" in listed.out, f"image list: {listed.out}")
    alias = r.bai("admin", "image", "alias", "conformance-app", f"{host}/lab/app:1")
    clean(alias)
    expect("conformance-app" in image_aliases(r), f"no alias: {image_aliases(r)}")
    gone = r.bai("admin", "image", "dealias", "conformance-app")
    clean(gone)


def case_image_dealias(r: Runner):
    res = r.bai("admin", "image", "dealias", "conformance-py")
    clean(res)
    expect("conformance-py" not in image_aliases(r), "the alias stays")


def case_query_slots(r: Runner):
    res = r.bai("admin", "resource", "query-slots")
    clean(res)
    expect("cpu" in res.out and "mem" in res.out, f"slots: {res.out}")


def case_docker_registries(r: Runner):
    host = _registry(r)
    res = r.bai("admin", "resource", "docker-registries")
    clean(res)
    # 22.03 prints the names (GET /config/docker-registries' keys).
    expect(host in res.out, f"registries: {res.out}")


# --- dotfiles -------------------------------------------------------------------------------

def _dotfiles(r: Runner, query: str = ""):
    return {d["path"]: d for d in r.stack.api_json("GET", "/user-config/dotfiles" + query)}


def case_dotfile_create(r: Runner):
    """The caller's own dotfile from a file, and a project's (an admin's) from standard input."""
    res = r.bai("dotfile", "create", ".conformance-rc", "--perm", "600", "-f",
                r.file("rc", b"export CONFORMANCE=1\n"))
    clean(res)
    got = _dotfiles(r).get(".conformance-rc")
    expect(got is not None, "the dotfile is not stored")
    expect(got["data"] == "export CONFORMANCE=1\n" and got["permission"] == "600", f"stored {got}")
    res = r.bai("dotfile", "create", ".conformance-group-rc", "-g", "default", "-d", "default",
                stdin="group line\n")
    clean(res)
    group = {d["path"]: d for d in r.stack.api_json(
        "GET", "/group-config/dotfiles?group=default&domain=default")}
    expect(".conformance-group-rc" in group, f"the project's dotfiles: {list(group)}")
    expect(group[".conformance-group-rc"]["permission"] == "755", "22.03's default permission")
    again = r.bai("dotfile", "create", ".conformance-rc", "-f", r.file("rc", b"x"))
    expect(again.rc != 0 and "already exists" in again.text(), f"a second create: {again.text()}")
    bad = r.bai("dotfile", "create", "../escape", "-f", r.file("rc", b"x"))
    expect(bad.rc != 0 and "/home/work" in bad.text(), f"an escaping path: {bad.text()}")


def case_dotfile_get(r: Runner):
    res = r.bai("dotfile", "get", ".conformance-rc")
    clean(res)
    expect("export CONFORMANCE=1" in res.out, res.out)


def case_dotfile_list(r: Runner):
    res = r.bai("dotfile", "list")
    clean(res)
    expect(".conformance-rc" in res.out and "600" in res.out, res.out)


def case_dotfile_update(r: Runner):
    res = r.bai("dotfile", "update", ".conformance-rc", "--perm", "644", "-f",
                r.file("rc2", b"export CONFORMANCE=2\n"))
    clean(res)
    got = _dotfiles(r)[".conformance-rc"]
    expect(got["data"] == "export CONFORMANCE=2\n" and got["permission"] == "644", f"now {got}")


def case_dotfile_delete(r: Runner):
    res = r.bai("dotfile", "delete", ".conformance-rc", "-f")
    clean(res)
    expect(".conformance-rc" not in _dotfiles(r), "the dotfile stays")
    res = r.bai("dotfile", "delete", ".conformance-group-rc", "-f", "-g", "default", "-d",
                "default")
    clean(res)
    missing = r.bai("dotfile", "get", ".conformance-rc")
    expect(missing.rc != 0, "a deleted dotfile is still found")


# --- session templates and server logs ------------------------------------------------------

TEMPLATE_YAML = """---
api_version: v1
kind: taskTemplate
metadata:
  name: conformance-tpl
  tag: conf-tag
spec:
  sessionType: batch
  kernel:
    image: python
    environ:
      CONF_TPL: "1"
    run:
      startup: echo from-template-{n}
  resources:
    cpu: '1'
    mem: 256m
"""


def _templates(r: Runner) -> dict:
    return {t["name"]: t for t in r.stack.api_json("GET", "/template/session")}


def _template_id(r: Runner) -> str:
    got = _templates(r).get("conformance-tpl")
    expect(got is not None, "the template is not stored")
    return got["id"]


def case_template_create(r: Runner):
    """The YAML of Backend.AI's docs (a bare template), from a file; then a malformed one."""
    res = r.bai("session-template", "create", "-f", r.file("tpl.yaml", TEMPLATE_YAML.format(n=1).encode()))
    clean(res)
    tid = _template_id(r)
    expect(tid in res.text(), f"the client does not print the id {tid}: {res.text()}")
    t = _templates(r)["conformance-tpl"]
    expect(t["is_owner"] and t["template"]["spec"]["session_type"] == "batch", f"stored {t}")
    bad = r.bai("session-template", "create", "-f",
                r.file("bad.yaml", b"api_version: v1\nkind: taskTemplate\nmetadata: {name: x}\nspec: {kernel: {}}\n"))
    expect(bad.rc != 0 and "spec.kernel.image" in bad.text(), f"a template without an image: {bad.text()}")


def case_template_list(r: Runner):
    res = r.bai("session-template", "list")
    clean(res)
    expect("conformance-tpl" in res.out and _template_id(r) in res.out, res.out)


def case_template_get(r: Runner):
    tid = _template_id(r)
    res = r.bai("session-template", "get", tid)
    clean(res)
    expect("name: conformance-tpl" in res.out and "startup_command: echo from-template-1" in res.out,
           f"the YAML: {res.out}")
    res = r.bai("session-template", "get", tid, "-f", "json")
    clean(res)
    body = json.loads(res.out)
    expect(body["template"]["metadata"]["tag"] == "conf-tag", f"the JSON: {body}")


def case_template_update(r: Runner):
    """From standard input (the client doubles every newline on the way)."""
    tid = _template_id(r)
    res = r.bai("session-template", "update", tid, stdin=TEMPLATE_YAML.format(n=2))
    clean(res)
    body = r.stack.api_json("GET", f"/template/session/{tid}")
    expect(body["template"]["spec"]["kernel"]["run"]["startup_command"] == "echo from-template-2",
           f"after the update: {body}")


def case_template_delete(r: Runner):
    tid = _template_id(r)
    res = r.bai("session-template", "delete", tid, "-f")
    clean(res)
    expect("conformance-tpl" not in _templates(r), "the template stays listed")
    gone = r.bai("session-template", "get", tid)
    expect(gone.rc != 0 and "template" in gone.text().lower(), f"get of a deleted one: {gone.text()}")


def case_task_logs(r: Runner):
    """A batch session's output as text, by its id (24.09 takes the kernel's id: bai both)."""
    res = r.bai("task-logs", sid(r, "conf-batch"))
    clean(res)
    expect("conformance-out" in res.out and "{" not in res.out, f"task-logs printed {res.out!r}")


def case_server_logs_list(r: Runner):
    """A log a client filed (as 24.09's web UI does), listed by the official client."""
    r.stack.api_json("POST", "/logs/error", {
        "severity": "error", "source": "conformance", "message": "conformance filed this",
        "context_lang": "python", "context_env": "{}", "request_url": "/conformance",
        "request_status": 418})
    res = r.bai("server-logs", "list")
    clean(res)
    expect("conformance filed this" in res.out and "ERROR conformance" in res.out, res.out)
    expect("418 /conformance" in res.out, res.out)


def _default_project(r: Runner) -> str:
    groups = r.stack.gql('{ groups(domain_name: "default") { id name } }')["groups"]
    return next(g["id"] for g in groups if g["name"] == "default")


def case_usage_per_month(r: Runner):
    """The month's sessions of the default project, with their usage (the batch session of
    `create` ended in it)."""
    gid = _default_project(r)
    res = r.bai("admin", "resource", "usage-per-month", time.strftime("%Y%m", time.gmtime()), gid)
    clean(res)
    expect(f"Group: default ({gid})" in res.out, f"no project in: {res.out[:500]}")
    expect("Identity: conf-batch" in res.out, f"no conf-batch session in: {res.out[:1500]}")


def case_usage_per_period(r: Runner):
    """22.03 prints only a single project's object and 24.09 answers a list, so the client
    prints nothing; the answer it got is checked through the same request."""
    gid = _default_project(r)
    day = time.strftime("%Y%m%d", time.gmtime())
    res = r.bai("admin", "resource", "usage-per-period", gid, day, day)
    clean(res)
    body = r.stack.api_json("GET", f"/resource/usage/period?group_id={gid}&start_date={day}"
                                   f"&end_date={day}")
    names = [s["session_name"] for p in body for s in p["sessions"].values()]
    expect("conf-batch" in names, f"sessions of the period: {names}")
    bad = r.bai("admin", "resource", "usage-per-period", gid, day, "2000101")
    expect("end_date" in bad.text() or "YYYYMMDD" in bad.text(), f"bad date: {bad.text()[-300:]}")


def case_recalculate_usage(r: Runner):
    res = r.bai("admin", "resource", "recalculate-usage")
    clean(res)
    expect("re-calculated" in res.out, res.out)


# --- streams --------------------------------------------------------------------------------

def case_run(r: Runner):
    """`run` streams its execution over /stream/session/{id}/execute: query mode, input() read
    from the client's stdin, batch mode with an uploaded file; --rm ends each session."""
    _needs_runc(r)
    res = r.bai("run", "--rm", "-t", "conf-run-q", "python", "-c", "print(6*7)")
    clean(res)
    expect("42" in res.out.split(), f"query output: {res.out!r}")
    info = r.session("conf-run-q")
    expect(info is None or info.get("status") in ("TERMINATING", "TERMINATED"),
           f"--rm left the session {info and info.get('status')}")
    res = r.bai("run", "--rm", "-t", "conf-run-in", "python", "-c",
                "x = input('name? '); print('hello ' + x)", stdin="bai\n")
    clean(res)
    expect("hello bai" in res.out, f"input() answered from stdin: {res.out!r}")
    r.file("conf_main.py", b"import sys\nprint('batch', sum(range(10)))\n")
    res = r.bai("run", "--rm", "-t", "conf-run-b", "--exec", "python3 conf_main.py", "python",
                "conf_main.py")
    clean(res)
    expect("batch 45" in res.out, f"batch output: {res.out!r}")


def case_apps(r: Runner):
    """`apps` lists the session's apps from /stream/session/{id}/apps."""
    _needs_runc(r)
    res = r.bai("session", "create", "-t", "conf-apps", "-r", "cpu=1", "-r", "mem=256m", "python")
    clean(res)
    r.wait_status("conf-apps", {"RUNNING"})
    res = r.bai("apps", "conf-apps")
    clean(res)
    expect("http" in res.text() and "terminal" in res.text(), f"apps: {res.text()!r}")


def case_app(r: Runner):
    """`app SESSION http -b PORT` tunnels the built-in image's HTTP service (started on demand
    inside the container) to a local port; fetched with curl, byte for byte."""
    _needs_runc(r)
    data = payload(1_000_000, "app-tunnel")
    r.file("app/served.bin", data)
    clean(r.bai("session", "upload", "conf-apps", "app/served.bin"))
    port = free_port()
    env = r.stack.env()
    proc = subprocess.Popen([r.client, "app", "conf-apps", "http", "-b", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=r.work)
    try:
        got = None
        deadline = time.time() + 30
        while time.time() < deadline and got is None:
            p = subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/app/served.bin"],
                               capture_output=True, timeout=30)
            if p.returncode == 0:
                got = p.stdout
            else:
                time.sleep(0.5)
        expect(got is not None, "curl through the official client's tunnel failed")
        expect(hashlib.sha256(got).digest() == hashlib.sha256(data).digest(),
               f"the tunnelled file differs ({len(got)} bytes)")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        r.log.append(("app conf-apps http -b " + str(port), proc.returncode, out[-2000:], ""))
    r.stack.api("DELETE", "/session/conf-apps")


def free_port() -> int:
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def web(r: Runner, *argv, stdin=None) -> Result:
    return r.bai(*argv, stdin=stdin, session=True)


def case_login(r: Runner):
    bad = web(r, "login", stdin=f"{USER_EMAIL}\nnot-the-password\n")
    expect(bad.rc != 0 and "Login failed" in bad.text(), f"a wrong password: {bad.text()[-300:]}")
    res = web(r, "login", stdin=f"{USER_EMAIL}\nconformance-password\n")
    clean(res)
    expect("Login succeeded" in res.text(), f"login printed: {res.text()[-300:]}")
    # Then everyday commands through the webserver, signed there with the user's keypair.
    clean(web(r, "session", "create", "--name", "conf-web", "python"), "session create (session mode)")
    s = r.session("conf-web", keys=USER_KEYS)
    expect(s is not None, "conf-web was not made as the user")
    ps = web(r, "ps")
    clean(ps, "ps (session mode)")
    expect("conf-web" in ps.out, f"ps (session mode) lacks conf-web: {ps.out[-500:]}")
    run = web(r, "run", "python", "-c", "print('web-' + str(6*7))")
    clean(run, "run (session mode)")
    expect("Execution finished" in run.text() and "exit code = 0" in run.text(),
           f"run (session mode): {run.text()[-500:]}")
    clean(web(r, "vfolder", "create", "conf-web-vf", "local:volume1"), "vfolder create (session mode)")
    r.file("web/up.bin", payload(200_000, "web-up"))
    clean(web(r, "vfolder", "upload", "conf-web-vf", "web/up.bin"), "vfolder upload (session mode)")
    files = r.stack.api_json("GET", "/folders/conf-web-vf/files?path=web", keys=USER_KEYS)
    sizes = {i["name"]: i["size"] for i in files["items"]}
    expect(sizes.get("up.bin") == 200_000, f"uploaded through session mode: {sizes}")
    clean(web(r, "session", "destroy", "conf-web"), "session destroy (session mode)")


def case_update_password(r: Runner):
    res = web(r, "update-password", "conformance-password", "conformance-pw-2", "conformance-pw-2")
    clean(res)
    expect("Password updated" in res.text(), f"update-password printed: {res.text()[-300:]}")
    # The new password signs in at the manager; the old one no longer does. Then back.
    new = r.stack.api("POST", "/auth/authorize", {"type": "keypair", "domain": "default",
                                                  "username": USER_EMAIL,
                                                  "password": "conformance-pw-2"})
    expect(new.rc == 0 and USER_KEYS[0] in new.out, f"the new password: {new.text()[-300:]}")
    clean(web(r, "update-password", "conformance-pw-2", "conformance-password",
              "conformance-password"), "update-password back")


def case_logout(r: Runner):
    res = web(r, "logout")
    clean(res)
    expect("Logout done" in res.text(), f"logout printed: {res.text()[-300:]}")
    after = web(r, "ps")
    expect("401" in after.text() or "Sign in" in after.text(),
           f"ps after logout should be refused: {after.text()[-300:]}")


CASES = [
    Case("session create", case_session_create),
    Case("create", case_create_alias),
    Case("ps", shows(["ps"], "conf-int", "ps does not list conf-int")),
    Case("session list", case_session_list),
    Case("admin session list", case_admin_session_list),
    Case("admin session info", case_admin_session_info),
    Case("session info", case_session_info),
    Case("info", case_info_alias),
    Case("session logs", shows(["session", "logs", "conf-batch"], "conformance-out", "logs lack the job's output")),
    Case("session upload", case_session_upload),
    Case("session ls", case_session_ls),
    Case("session download", case_session_download),
    Case("session rename", case_session_rename),
    Case("session restart", case_session_restart),
    Case("restart", case_restart_alias),
    Case("session events", follows_events("session", "events")),
    Case("events", follows_events("events")),
    Case("session destroy", case_session_destroy),
    Case("vfolder list-hosts", shows(["vfolder", "list-hosts"], "local:volume1", "list-hosts does not show local:volume1")),
    Case("vfolder list-allowed-types", shows(["vfolder", "list-allowed-types"], "user", "allowed types lack user")),
    Case("vfolder create", case_vfolder_create),
    Case("vfolder list", case_vfolder_list),
    Case("vfolder info", case_vfolder_info),
    Case("vfolder upload", case_vfolder_upload),
    Case("vfolder download", case_vfolder_download),
    Case("vfolder ls", case_vfolder_ls),
    Case("vfolder mkdir", case_vfolder_mkdir),
    Case("vfolder rename-file", case_vfolder_rename_file),
    Case("vfolder mv", case_vfolder_mv),
    Case("vfolder rm", case_vfolder_rm),
    Case("vfolder update-options", case_vfolder_update_options),
    Case("vfolder clone", case_vfolder_clone),
    Case("vfolder rename", case_vfolder_rename),
    Case("vfolder invite", case_vfolder_invite),
    Case("vfolder invitations", case_vfolder_invitations),
    Case("vfolder leave", case_vfolder_leave),
    Case("vfolder share", case_vfolder_share),
    Case("vfolder unshare", case_vfolder_unshare),
    Case("vfolder delete", case_vfolder_delete),
    Case("admin agent list", case_admin_agent_list),
    Case("admin manager scheduler exclude-agents", case_scheduler_exclude),
    Case("admin manager scheduler include-agents", case_scheduler_include),
    Case("admin agent info", shows(["admin", "agent", "info", "conformance-agent"], "conformance-agent", "agent info lacks the id")),
    Case("admin image list", case_admin_image_list),
    Case("admin scaling-group list", shows(["admin", "scaling-group", "list"], "default", "no default resource group")),
    Case("admin scaling-group info", shows(["admin", "scaling-group", "info", "default"], "default", "info lacks the name")),
    Case("admin scaling-group get-available", shows(["admin", "scaling-group", "get-available", "default"], "default", "no default resource group available to the default project")),
    Case("admin storage list", shows(["admin", "storage", "list"], "local:volume1", "storage list lacks local:volume1")),
    Case("admin storage info", shows(["admin", "storage", "info", "local:volume1"], "local:volume1", "storage info lacks the id")),
    Case("admin vfolder list", shows(["admin", "vfolder", "list"], "conf-vf", "admin vfolder list lacks conf-vf")),
    Case("admin vfolder list-hosts", shows(["admin", "vfolder", "list-hosts"], "local:volume1", "list-hosts lacks local:volume1")),
    Case("config", shows(["config"], lambda r: r.stack.endpoint, "config does not show the endpoint")),
    Case("admin manager status", case_manager_status),
    Case("admin announcement update", case_announcement_update),
    Case("admin announcement get", shows(["admin", "announcement", "get"], "conformance notice", "get does not show the message")),
    Case("admin announcement dismiss", case_announcement_dismiss),
    Case("admin announcement delete", case_announcement_delete),
    Case("admin resource query-slots", case_query_slots),
    Case("admin resource vfolder-types", shows(["admin", "resource", "vfolder-types"], "user", "vfolder-types lack user")),
    Case("admin resource docker-registries", case_docker_registries),
    Case("admin resource usage-per-month", case_usage_per_month),
    Case("dotfile create", case_dotfile_create),
    Case("dotfile get", case_dotfile_get),
    Case("dotfile list", case_dotfile_list),
    Case("dotfile update", case_dotfile_update),
    Case("dotfile delete", case_dotfile_delete),
    Case("session-template create", case_template_create),
    Case("session-template list", case_template_list),
    Case("session-template get", case_template_get),
    Case("session-template update", case_template_update),
    Case("session-template delete", case_template_delete),
    Case("server-logs list", case_server_logs_list),
    Case("task-logs", case_task_logs),
    Case("admin resource usage-per-period", case_usage_per_period),
    Case("admin resource recalculate-usage", case_recalculate_usage),
    Case("destroy", case_destroy_alias),
    Case("run", case_run),
    Case("apps", case_apps),
    Case("app", case_app),
    Case("admin domain add", case_domain_add),
    Case("admin domain info", case_domain_info),
    Case("admin domain list", case_domain_list),
    Case("admin domain update", case_domain_update),
    Case("admin domain delete", case_domain_delete),
    Case("admin domain purge", case_domain_purge),
    Case("admin group add", case_group_add),
    Case("admin group info", case_group_info),
    Case("admin group list", case_group_list),
    Case("admin group update", case_group_update),
    Case("admin group add-users", case_group_add_users),
    Case("admin group remove-users", case_group_remove_users),
    Case("admin group delete", case_group_delete),
    Case("admin group purge", case_group_purge),
    Case("admin user add", case_user_add),
    Case("admin user info", case_user_info),
    Case("admin user list", case_user_list),
    Case("admin user update", case_user_update),
    Case("admin user delete", case_user_delete),
    Case("admin user purge", case_user_purge),
    Case("admin keypair add", case_keypair_add),
    Case("admin keypair list", case_keypair_list),
    Case("admin keypair info", case_keypair_info),
    Case("admin keypair update", case_keypair_update),
    Case("admin keypair deactivate", case_keypair_deactivate),
    Case("admin keypair activate", case_keypair_activate),
    Case("admin keypair delete", case_keypair_delete),
    Case("admin keypair-resource-policy add", case_policy_add),
    Case("admin keypair-resource-policy info", case_policy_info),
    Case("admin keypair-resource-policy list", case_policy_list),
    Case("admin keypair-resource-policy update", case_policy_update),
    Case("admin keypair-resource-policy delete", case_policy_delete),
    Case("admin scaling-group add", case_sgroup_add),
    Case("admin scaling-group update", case_sgroup_update),
    Case("admin scaling-group associate-scaling-group", case_sgroup_associate),
    Case("admin scaling-group dissociate-scaling-group", case_sgroup_dissociate),
    Case("admin scaling-group delete", case_sgroup_delete),
    Case("admin image alias", case_image_alias),
    Case("admin image dealias", case_image_dealias),
    Case("admin image rescan", case_image_rescan),
    Case("admin manager freeze", case_manager_freeze),
    Case("admin manager unfreeze", case_manager_unfreeze),
    Case("login", case_login),
    Case("update-password", case_update_password),
    Case("logout", case_logout),
]


def cli_commands(client: str) -> list[str]:
    """Every leaf command of the client's CLI, read from the client itself."""
    code = (
        "import click\n"
        "from ai.backend.cli.loader import load_entry_points\n"
        "def walk(c, p):\n"
        "    if isinstance(c, click.Group):\n"
        "        for n, s in sorted(c.commands.items()): walk(s, p + [n])\n"
        "    else: print(' '.join(p))\n"
        "walk(load_entry_points(), [])\n")
    with open(client) as f:
        script = f.read()
    hit = re.search(r'PYTHONPATH="([^"$]+)', script)
    if not hit:
        return []
    p = subprocess.run(["/usr/bin/python3", "-P", "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": hit.group(1)})
    return [line for line in p.stdout.splitlines() if line]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--table")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    client = os.environ.get("BAI_OFFICIAL_CLIENT", "")
    if not client or not os.access(client, os.X_OK):
        print("skipped: BAI_OFFICIAL_CLIENT does not name the official client "
              "(build it with shared/tools/official-client/build.sh)")
        return SKIP

    stack = Stack(args.build, args.keep)
    outcomes: dict[str, tuple[str, str]] = {}
    runner = None
    try:
        stack.start()
        work = os.path.join(stack.dir, "work")
        os.makedirs(work)
        runner = Runner(stack, client, work)
        print(f"stack: {stack.endpoint}, agent backend {stack.backend}, state {stack.dir}")
        for case in CASES:
            if args.only and args.only not in case.command:
                continue
            start = time.time()
            mark = len(runner.log)
            try:
                case.run(runner)
                outcomes[case.command] = ("passes", case.note)
            except Skip as e:
                outcomes[case.command] = ("skipped", str(e))
            except Failure as e:
                outcomes[case.command] = ("FAILS", str(e))
            except Exception as e:  # a broken case is a failure too, with its traceback
                outcomes[case.command] = ("FAILS", f"{type(e).__name__}: {e}")
                traceback.print_exc()
            status, why = outcomes[case.command]
            print(f"{status:8} {case.command:44} {time.time() - start:5.1f}s  {why}")
            if status == "FAILS":
                for argv, rc, out, err in runner.log[mark:]:
                    print(f"    $ backend.ai {argv}  (exit {rc})")
                    for line in (out + err).strip().splitlines()[-12:]:
                        print("      " + line)
    finally:
        stack.stop()

    commands = cli_commands(client)
    known = {c.command for c in CASES} | set(NOT_RUN)
    unknown = [c for c in commands if c not in known]
    passed = sum(1 for s, _ in outcomes.values() if s == "passes")
    failed = sum(1 for s, _ in outcomes.values() if s == "FAILS")
    skipped = sum(1 for s, _ in outcomes.values() if s == "skipped")
    if unknown:
        print("commands of the client that neither a case nor NOT_RUN covers: " + ", ".join(unknown))
        failed += len(unknown)
    if args.table:
        write_table(args.table, commands, outcomes, stack.backend)
    print(f"conformance: {passed} passed, {failed} failed, {skipped} skipped "
          f"({len(commands)} commands in the client, {len(NOT_RUN)} not run)")
    return 1 if failed else 0


def write_table(path: str, commands: list[str], outcomes, backend: str) -> None:
    rows = ["| command | result |", "|---|---|"]
    for c in commands:
        if c in outcomes:
            status, why = outcomes[c]
            rows.append(f"| `{c}` | {status}{': ' + why if why else ''} |")
        elif c in NOT_RUN:
            rows.append(f"| `{c}` | {NOT_RUN[c]} |")
        else:
            rows.append(f"| `{c}` | not covered |")
    with open(path, "w") as f:
        f.write(f"<!-- written by tests/conformance/conformance.py --table; agent backend: "
                f"{backend} -->\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    sys.exit(main())
