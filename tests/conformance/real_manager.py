#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bai's CLI against a real Backend.AI manager (issue 44; docs/conformance.md, second table).

Runs every bai command a manager without agents can serve (sessions, templates, dotfiles, every
admin noun and verb, events, `bai api`, and folders with their files where a storage proxy
answers: tests/conformance/real-storage-proxy.sh adds 23.09.11's own) and checks each effect
through the server's own answer (`bai api`, which prints the server's JSON as it came), not only
the exit code. Skipped (exit 77) unless BAI_REAL_MANAGER names the manager's URL; the keypair is
BAI_REAL_ACCESS_KEY / BAI_REAL_SECRET_KEY (default: the example superadmin of
shared/tools/real-manager's fixtures).

Usage: real_manager.py BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ENDPOINT = os.environ.get("BAI_REAL_MANAGER", "")
ACCESS = os.environ.get("BAI_REAL_ACCESS_KEY", "AKIAIOSFODNN7EXAMPLE")
SECRET = os.environ.get("BAI_REAL_SECRET_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")

results = []


def bai(build, *args, check_json=True):
    env = dict(os.environ)
    env.update({"BACKEND_ENDPOINT": ENDPOINT, "BACKEND_ACCESS_KEY": ACCESS,
                "BACKEND_SECRET_KEY": SECRET, "BAI_CONFIG_DIR": CONFIG_DIR})
    for k in ("BACKEND_DOMAIN", "BACKEND_GROUP", "BAI_PROFILE"):
        env.pop(k, None)
    argv = [os.path.join(build, "bin", "bai")] + (["-o", "json"] if check_json else []) + list(args)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    doc = None
    if check_json:
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
    return p.returncode, doc, p.stdout, p.stderr


def check(name, ok, detail=""):
    results.append((name, bool(ok), detail))


def server(build, method, path, body=None):
    """The server's own answer, as it came."""
    args = ["api", method, path] + (["-d", json.dumps(body)] if body is not None else [])
    rc, _, out, err = bai(build, *args, check_json=False)
    try:
        return rc, json.loads(out)
    except ValueError:
        return rc, None


def gql(build, query):
    rc, doc = server(build, "POST", "/admin/gql", {"query": query})
    return (doc or {}).get("data") or {}


def folders(build, api, suffix):
    """Folders and their files, where a storage proxy answers (shared/tools/real-manager has
    none; tests/conformance/real-storage-proxy.sh adds 23.09.11's own)."""
    rc, doc, out, err = bai(build, "vfolder", "hosts")
    if rc != 0 or not (doc or {}).get("allowed"):
        rc, doc, out, err = bai(build, "vfolder", "create", "nohost-" + suffix)
        check("no storage proxy: vfolder create fails with the server's error, exit 1",
              rc == 1 and "error" in err, out + err)
        print("note: no storage proxy answers; folder transfers were not tried")
        return
    name = "vf-" + suffix
    rc, doc, out, err = bai(build, "vfolder", "create", name)
    rc2, listed = server(build, "GET", "/folders")
    check("vfolder create: the server lists it", rc == 0 and any(f.get("name") == name for f in listed or []),
          out + err)
    work = tempfile.mkdtemp(prefix="bai-real-files-")
    src = os.path.join(work, "src")
    os.makedirs(os.path.join(src, "sub"))
    blob = os.urandom(3 * 1024 * 1024 + 17)
    with open(os.path.join(src, "blob.bin"), "wb") as f:
        f.write(blob)
    open(os.path.join(src, "empty.txt"), "w").close()
    with open(os.path.join(src, "sub", "a.txt"), "w") as f:
        f.write("a\n")
    rc, doc, out, err = bai(build, "vfolder", "upload", name, os.path.join(src, "blob.bin"),
                            os.path.join(src, "empty.txt"))
    rc2, listing = server(build, "GET", "/folders/%s/files?path=." % name)
    sizes = {i.get("name"): i.get("size") for i in (listing or {}).get("items", [])}
    check("vfolder upload (a 3 MiB file and an empty one): the server has both, sized",
          rc == 0 and sizes.get("blob.bin") == len(blob) and sizes.get("empty.txt") == 0, out + err + str(sizes))
    rc, doc, out, err = bai(build, "cp", "-r", os.path.join(src, "sub"), name + ":copied/")
    rc2, listing = server(build, "GET", "/folders/%s/files?path=copied/sub" % name)
    check("cp -r to a folder: the server has the tree",
          rc == 0 and any(i.get("name") == "a.txt" for i in (listing or {}).get("items", [])), out + err)
    dst = os.path.join(work, "dst")
    rc, doc, out, err = bai(build, "vfolder", "download", name, "blob.bin", "empty.txt", "--dst", dst)
    same = False
    try:
        same = open(os.path.join(dst, "blob.bin"), "rb").read() == blob and \
            os.path.getsize(os.path.join(dst, "empty.txt")) == 0
    except OSError:
        pass
    check("vfolder download: the same bytes", rc == 0 and same, out + err)
    # A download cut short resumes from its part file (the proxy's ETag unchanged).
    part = os.path.join(dst, "again", "blob.bin.bai-part")
    os.makedirs(os.path.dirname(part))
    with open(part, "wb") as f:
        f.write(blob[:1000000])
    rc, doc, out, err = bai(build, "vfolder", "download", name, "blob.bin", "--dst", os.path.dirname(part))
    check("vfolder download with a stale part and no ETag record: starts again, same bytes",
          rc == 0 and open(os.path.join(dst, "again", "blob.bin"), "rb").read() == blob, out + err)
    rc, doc, out, err = bai(build, "cp", "-r", name + ":copied", os.path.join(work, "back"))
    check("cp -r from a folder", rc == 0 and os.path.exists(os.path.join(work, "back", "sub", "a.txt")), out + err)
    rc, doc, out, err = bai(build, "vfolder", "mkdir", name, "d1/d2")
    rc2, doc2, out2, err2 = bai(build, "vfolder", "mv", name, "empty.txt", "d1/moved.txt")
    rc3, listing = server(build, "GET", "/folders/%s/files?path=d1" % name)
    names = [i.get("name") for i in (listing or {}).get("items", [])]
    check("vfolder mkdir and mv: the server has d1/d2 and d1/moved.txt",
          rc == 0 and rc2 == 0 and "d2" in names and "moved.txt" in names, out + err + out2 + err2)
    rc, doc, out, err = bai(build, "vfolder", "rm-files", name, "blob.bin")
    rc2, listing = server(build, "GET", "/folders/%s/files?path=." % name)
    still = any(i.get("name") == "blob.bin" for i in (listing or {}).get("items", []))
    if manager_release == "23.09.11":
        check("vfolder rm-files on 23.09.11 (its DELETE reads no body): said plainly, exit 1, nothing lost",
              rc == 1 and "cannot delete files" in err and still, out + err)
    else:
        check("vfolder rm-files: gone from the server", rc == 0 and not still, out + err)
    rc, doc, out, err = bai(build, "vfolder", "rename", name, name + "-r")
    rc2, listed = server(build, "GET", "/folders")
    check("vfolder rename: the server has the new name",
          rc == 0 and any(f.get("name") == name + "-r" for f in listed or []), out + err)
    name += "-r"
    rc, doc, out, err = bai(build, "vfolder", "rm", name)
    rc2, listed = server(build, "GET", "/folders")
    present = [f for f in listed or [] if f.get("name") == name]
    if api < "v8.20240315":
        check("vfolder rm without a server trash: refused (it would delete at once), the folder kept",
              rc == 1 and "no folder trash" in err and present, out + err)
        rc, doc, out, err = bai(build, "vfolder", "restore", name)
        check("vfolder restore without a server trash: names the release that has one",
              rc == 1 and "24.03 or later" in err, out + err)
    else:
        check("vfolder rm: in the server's trash", rc == 0 and present and present[0].get("status") == "delete-pending",
              out + err)
    rc, doc, out, err = bai(build, "vfolder", "purge", name)
    # 23.09 answers the DELETE before its storage proxy has removed the folder, and lists it
    # until then: the folder must be gone within 10 s.
    for _ in range(20):
        rc2, listed = server(build, "GET", "/folders")
        if not any(f.get("name") == name for f in listed or []):
            break
        time.sleep(0.5)
    check("vfolder purge: gone from the server", rc == 0 and not any(f.get("name") == name for f in listed or []),
          out + err)


def registries(build, suffix):
    """bai admin registry against the server's container registries (23.09: etcd), read back
    from its own GraphQL; the password goes in on stdin and never comes out."""
    host = "reg-%s.example:5000" % suffix

    def theirs():
        found = gql(build, "{ container_registries { hostname config { url type project "
                           "username password ssl_verify } } }")
        return {r["hostname"]: r["config"] for r in found.get("container_registries") or []}

    env_in = dict(os.environ, BACKEND_ENDPOINT=ENDPOINT, BACKEND_ACCESS_KEY=ACCESS,
                  BACKEND_SECRET_KEY=SECRET, BAI_CONFIG_DIR=CONFIG_DIR)
    p = subprocess.run([os.path.join(build, "bin", "bai"), "admin", "registry", "add", host,
                        "--url", "https://" + host, "--project", "lab", "--username", "ci",
                        "--password-stdin"], env=env_in, input="s3cret\n", capture_output=True,
                       text=True, timeout=60)
    made = theirs().get(host) or {}
    check("admin registry add: the server has it, project and account, password set",
          p.returncode == 0 and made.get("project") == ["lab"] and made.get("username") == "ci"
          and made.get("password") not in (None, "s3cret"), (p.stdout + p.stderr + str(made))[:300])
    rc, doc, out, err = bai(build, "admin", "registry", "ls")
    mine = [r for r in (doc or {}).get("registries", []) if r.get("hostname") == host]
    check("admin registry ls: listed, the password only said to be set",
          rc == 0 and mine and mine[0]["config"]["password"] == "*****" and "s3cret" not in out,
          (out + err)[:300])
    rc, _, out, err = bai(build, "admin", "registry", "update", host, "--no-ssl-verify",
                          check_json=False)
    check("admin registry update --no-ssl-verify: the server has it",
          rc == 0 and (theirs().get(host) or {}).get("ssl_verify") is False, out + err)
    rc, _, out, err = bai(build, "admin", "image", "rescan", "nowhere.example", check_json=False)
    check("admin image rescan of an unknown registry: the server's refusal, exit 1",
          rc == 1 and "registry" in err.lower(), out + err)
    rc, _, out, err = bai(build, "admin", "registry", "rm", host, check_json=False)
    check("admin registry rm: gone from the server", rc == 0 and host not in theirs(), out + err)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not ENDPOINT:
        print("[  SKIPPED ] BAI_REAL_MANAGER is not set (shared/tools/real-manager starts one; "
              "then BAI_REAL_MANAGER=http://127.0.0.1:28081)")
        return 77
    build = sys.argv[1]
    global CONFIG_DIR
    CONFIG_DIR = tempfile.mkdtemp(prefix="bai-real-")

    rc, info = server(build, "GET", "/")
    check("GET / answers a Backend.AI version", rc == 0 and info and "version" in info, info)
    manager = (info or {}).get("manager", "?")
    global manager_release
    manager_release = manager
    api = (info or {}).get("version", "?")

    # Sessions: created without a name (its events watched), listed, inspected, renamed,
    # destroyed.
    rc, doc, out, err = bai(build, "ps")
    check("bai ps", rc == 0, err)
    # Issue 47, 6: the kernels' live_stat asked for beside the list (23.09's ComputeContainer has
    # it); without an agent nothing runs, so each item's use is null.
    rc, doc, out, err = bai(build, "ps", "--usage", "-a")
    check("bai ps --usage: the server answers the kernels' live_stat",
          rc == 0 and doc is not None and all("use" in i for i in doc.get("items") or []), out + err)
    env = dict(os.environ, BACKEND_ENDPOINT=ENDPOINT, BACKEND_ACCESS_KEY=ACCESS,
               BACKEND_SECRET_KEY=SECRET, BAI_CONFIG_DIR=CONFIG_DIR)
    events = subprocess.Popen([os.path.join(build, "bin", "bai"), "-o", "json", "session", "events"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    rc, doc, out, err = bai(build, "session", "create", "--no-wait", "python")
    name = (doc or {}).get("name", "")
    sid = (doc or {}).get("id", "")
    check("session create python (no name) is queued with a made name",
          rc == 0 and re.fullmatch(r"bai-[0-9a-f]{10}", name) and len(sid) == 36, out + err)
    rc, raw = server(build, "GET", "/session/" + name)
    check("the server has it, PENDING", rc == 0 and (raw or {}).get("status") == "PENDING", raw)
    time.sleep(1.0)
    events.terminate()
    lines = [json.loads(l) for l in events.communicate(timeout=10)[0].splitlines() if l.startswith("{")]
    check("session events: its enqueued event, named by id and name",
          any(e.get("event") == "session_enqueued" and e.get("id") == sid and e.get("name") == name
              for e in lines), lines[:3])
    rc, doc, out, err = bai(build, "session", "info", name)
    doc = doc or {}
    check("session info: the UUID id and the name", doc.get("id") == sid and doc.get("name") == name,
          out + err)
    check("session info: RFC 3339 created_at", re.match(r"\d{4}-\d\d-\d\dT", doc.get("created_at", "")),
          doc.get("created_at"))
    check("session info: type and slots as the server has them",
          doc.get("type") == "INTERACTIVE" and isinstance(doc.get("requested_slots"), dict)
          and doc["requested_slots"].get("cpu") is not None, doc)
    if api < "v8.20240915":
        check("session info: no made-up priority (the server has none)", doc.get("priority") is None,
              doc.get("priority"))
    check("session info: job_exit_code absent for a session that never ran",
          doc.get("job_exit_code") is None, doc.get("job_exit_code"))
    rc, doc, out, err = bai(build, "session", "history", name)
    entries = (doc or {}).get("history", [])
    check("session history (no route before bai: read from GraphQL's status_history)",
          rc == 0 and any(e.get("status") == "PENDING" for e in entries), out + err)
    rc, doc, out, err = bai(build, "ps", "-a")
    items = (doc or {}).get("items", [])
    check("ps -a lists it, named as create named it",
          rc == 0 and any(i.get("id") == sid and i.get("name") == name for i in items), out + err)
    # Backend.AI renames only running sessions (none run without an agent): its refusal is
    # passed on as it is, and the name stays.
    rc, doc, out, err = bai(build, "session", "rename", name, name + "-r")
    rc2, raw = server(build, "GET", "/session/" + name)
    check("session rename of a queued session: the server's refusal, the name kept",
          rc != 0 and "not running" in out + err and rc2 == 0, out + err)
    rc, doc, out, err = bai(build, "rm", name)
    status = ""
    for _ in range(20):
        sessions = gql(build, '{ compute_session_list(limit: 5, offset: 0, filter: "id == \\"%s\\"") '
                              '{ items { id status } } }' % sid)
        found = ((sessions.get("compute_session_list") or {}).get("items") or [{}])
        status = found[0].get("status", "") if found else ""
        if status in ("CANCELLED", "TERMINATED", "TERMINATING"):
            break
        time.sleep(0.5)
    check("rm: the server cancelled it", rc == 0 and status in ("CANCELLED", "TERMINATED", "TERMINATING"),
          status + out + err)
    if api < "v8.20240915":
        rc, doc, out, err = bai(build, "session", "create", "--no-wait", "--priority", "5", "python")
        check("session create --priority on a server without priorities: refused, naming 24.09",
              rc == 1 and "24.09 or later" in err, out + err)
    rc, doc, out, err = bai(build, "session", "create", "--no-wait", "--name", "x y", "python")
    check("a name the server's rule refuses is refused before it is sent",
          rc != 0 and "4 to 64" in err + out, out + err)

    # Templates: a bare YAML template as users write it (Backend.AI reads {template: …} documents;
    # bai wraps it), read back from the server, then deleted.
    tpl = os.path.join(CONFIG_DIR, "t.yaml")
    with open(tpl, "w") as f:
        f.write("apiVersion: v1\nkind: taskTemplate\nmetadata:\n  name: harness-%d\nspec:\n"
                "  type: batch\n  kernel:\n    image: python\n    run:\n      startup: echo hi\n"
                % os.getpid())
    rc, doc, out, err = bai(build, "template", "create", "-f", tpl)
    rc2, listed = server(build, "GET", "/template/session")
    names = [t.get("name") for t in (listed or [])] if isinstance(listed, list) else []
    check("template create: the server lists it", rc == 0 and ("harness-%d" % os.getpid()) in names,
          out + err)
    tid = next((t.get("id") for t in listed or [] if t.get("name") == "harness-%d" % os.getpid()), "")
    rc, doc, out, err = bai(build, "template", "rm", tid or "none")
    rc2, listed = server(build, "GET", "/template/session")
    gone = not any(t.get("id") == tid for t in (listed or []))
    check("template rm: gone from the server", rc == 0 and gone, out + err)

    # Dotfiles, a user's and a project's, read back from the server's own routes.
    for owner, route in [((), "/user-config/dotfiles"),
                         (("--project", "default"), "/group-config/dotfiles?group=default&domain=default")]:
        path = ".harness-%d" % os.getpid()
        rc, doc, out, err = bai(build, "dotfile", "set", path, "--data", "export A=1", *owner)
        rc2, listed = server(build, "GET", route)
        have = [d.get("data") for d in (listed or []) if d.get("path") == path]
        check("dotfile set %s: the server has it" % " ".join(owner or ("(mine)",)),
              rc == 0 and have == ["export A=1"], out + err)
        rc, doc, out, err = bai(build, "dotfile", "rm", path, *owner)
        rc2, listed = server(build, "GET", route)
        check("dotfile rm %s: gone" % " ".join(owner or ("(mine)",)),
              rc == 0 and not any(d.get("path") == path for d in (listed or [])), out + err)

    # Every admin listing, against what the server itself lists.
    fixtures = {
        ("domain", "ls"): ("domains", "name", "default"),
        ("project", "ls"): ("projects", "name", "default"),
        ("user", "ls"): ("users", "email", "admin@lablup.com"),
        ("keypair", "ls"): ("keypairs", "access_key", ACCESS),
        ("policy", "ls"): ("policies", "name", "default"),
        ("user-policy", "ls"): ("policies", "name", "default"),
        ("project-policy", "ls"): ("policies", "name", "default"),
        ("preset", "ls"): ("presets", "name", None),
        ("image", "ls"): ("images", "name", None),
        ("agent", "ls"): ("agents", "id", None),
    }
    for args, (plural, key, expect) in fixtures.items():
        rc, doc, out, err = bai(build, "admin", *args)
        listed = [i.get(key) for i in (doc or {}).get(plural, [])]
        ok = rc == 0 and (expect is None or expect in listed)
        check("admin " + " ".join(args), ok, (out + err)[:300])
    # A field the server does not have is null in bai's output, never a made-up default: asked
    # of the server itself (its GraphQL refuses the field), then read in bai's listing.
    for query, args, plural, key in [
            ("{ groups { type } }", ("project", "ls"), "projects", "type"),
            ("{ keypairs { modified_at } }", ("keypair", "ls"), "keypairs", "modified_at"),
            ("{ keypair_resource_policies { max_concurrent_sftp_sessions } }", ("policy", "ls"),
             "policies", "max_concurrent_sftp_sessions"),
            ("{ compute_session_list(limit: 1, offset: 0) { items { requested_slots } } }",
             ("ps", "-a"), "items", "requested_slots")]:
        rc, raw = server(build, "POST", "/admin/gql", {"query": query})
        lacks = bool((raw or {}).get("errors"))
        cmd = args if args[0] == "ps" else ("admin",) + args
        rc, doc, out, err = bai(build, *cmd)
        values = [i.get(key, "missing") for i in (doc or {}).get(plural, [])]
        if lacks:
            check("%s: %s, which the server lacks, is null" % (" ".join(cmd), key),
                  rc == 0 and all(v is None for v in values), values)
        else:
            check("%s: %s is given" % (" ".join(cmd), key),
                  rc == 0 and all(v != "missing" for v in values), values)
    # Admin verbs, each effect read back from the server's own GraphQL.
    suffix = "%05d" % (os.getpid() % 100000)
    registries(build, suffix)
    rc, doc, out, err = bai(build, "admin", "policy", "create", "pol-" + suffix, "--slots", "cpu=4",
                            "--max-sessions", "3")
    pols = gql(build, "{ keypair_resource_policies { name max_concurrent_sessions total_resource_slots } }")
    mine = [p for p in pols.get("keypair_resource_policies") or [] if p["name"] == "pol-" + suffix]
    check("admin policy create: the server has it, 3 sessions, cpu 4",
          rc == 0 and mine and mine[0]["max_concurrent_sessions"] == 3 and '"cpu"' in mine[0]["total_resource_slots"],
          out + err)
    rc, doc, out, err = bai(build, "admin", "project", "create", "proj-" + suffix)
    groups = gql(build, "{ groups { name } }").get("groups") or []
    check("admin project create: the server has it", rc == 0 and any(g["name"] == "proj-" + suffix for g in groups),
          out + err)
    rc, doc, out, err = bai(build, "admin", "preset", "create", "pre-" + suffix, "--slots", "cpu=1,mem=1g")
    rc2, doc2, out2, err2 = bai(build, "admin", "preset", "rm", "pre-" + suffix)
    left = gql(build, "{ resource_presets { name } }").get("resource_presets") or []
    check("admin preset create and rm: made, then gone from the server",
          rc == 0 and rc2 == 0 and not any(p["name"] == "pre-" + suffix for p in left), out + err + out2 + err2)
    presets = gql(build, "{ resource_presets { name } }").get("resource_presets") or []
    rc, doc, out, err = bai(build, "admin", "preset", "ls")
    check("admin preset ls lists what the server has",
          sorted(p["name"] for p in presets) == sorted(p.get("name") for p in (doc or {}).get("presets", [])),
          out[:300])
    rc, doc, out, err = bai(build, "admin", "status")
    check("admin status", rc == 0, err)
    rc, doc, out, err = bai(build, "admin", "usage", "--period", time.strftime("%Y-%m"))
    check("admin usage --period (this month)", rc == 0 and "projects" in (doc or {}), out + err)

    # More admin verbs: domains, users, keypairs, the three kinds of policies, image aliases;
    # each read back from the server's own GraphQL.
    rc, doc, out, err = bai(build, "admin", "domain", "create", "dom-" + suffix, "--slots", "cpu=8")
    doms = gql(build, "{ domains { name total_resource_slots } }").get("domains") or []
    check("admin domain create: the server has it, cpu 8",
          rc == 0 and any(d["name"] == "dom-" + suffix and '"cpu"' in str(d["total_resource_slots"])
                          for d in doms), out + err)
    email = "u-%s@example.org" % suffix
    rc, doc, out, err = bai(build, "admin", "user", "create", email, "--name", "Harness")
    doc = doc or {}
    rc2, raw = server(build, "POST", "/admin/gql", {"query": '{ user(email: "%s") { email full_name main_access_key } keypairs { access_key secret_key user_id } }' % email})
    data = (raw or {}).get("data") or {}
    mine = [k for k in data.get("keypairs") or [] if k.get("user_id") == email]
    check("admin user create (in no project): the server has the user; bai shows its main keypair and secret",
          rc == 0 and (data.get("user") or {}).get("full_name") == "Harness" and mine
          and doc.get("access_key") == (data.get("user") or {}).get("main_access_key")
          and doc.get("secret_key") == mine[0].get("secret_key"), out + err)
    rc, doc, out, err = bai(build, "admin", "user", "update", email, "--name", "Harness 2", "--role", "admin")
    u = gql(build, '{ user(email: "%s") { full_name role } }' % email).get("user") or {}
    check("admin user update: name and role on the server",
          rc == 0 and u.get("full_name") == "Harness 2" and u.get("role") == "admin", out + err)
    rc, doc, out, err = bai(build, "admin", "user", "info", email)
    check("admin user info", rc == 0 and (doc or {}).get("user", doc or {}).get("email") == email, out + err)
    rc, doc, out, err = bai(build, "admin", "keypair", "ls", "--user", email)
    check("admin keypair ls --user (a user in no project, whom the server's keypairs(email:) misses)",
          rc == 0 and [k.get("access_key") for k in (doc or {}).get("keypairs", [])] == [k["access_key"] for k in mine],
          out + err)
    rc, doc, out, err = bai(build, "admin", "keypair", "create", email)
    ak = ((doc or {}).get("keypair") or {}).get("access_key", "")
    def key_state():
        for k in gql(build, "{ keypairs { access_key is_active resource_policy } }").get("keypairs") or []:
            if k["access_key"] == ak:
                return k
        return {}
    check("admin keypair create: the server has it", rc == 0 and key_state().get("is_active") is True, out + err)
    rc, _, out, err = bai(build, "admin", "keypair", "deactivate", ak)
    check("admin keypair deactivate", rc == 0 and key_state().get("is_active") is False, out + err)
    rc, _, out, err = bai(build, "admin", "keypair", "activate", ak)
    check("admin keypair activate", rc == 0 and key_state().get("is_active") is True, out + err)
    rc, _, out, err = bai(build, "admin", "policy", "update", "pol-" + suffix, "--max-sessions", "5")
    pols = gql(build, "{ keypair_resource_policies { name max_concurrent_sessions } }")
    check("admin policy update: 5 sessions on the server",
          rc == 0 and any(p["name"] == "pol-" + suffix and p["max_concurrent_sessions"] == 5
                          for p in pols.get("keypair_resource_policies") or []), out + err)
    rc, _, out, err = bai(build, "admin", "keypair", "update", ak, "--policy", "pol-" + suffix)
    check("admin keypair update --policy", rc == 0 and key_state().get("resource_policy") == "pol-" + suffix, out + err)
    rc, _, out, err = bai(build, "admin", "keypair", "rm", ak)
    check("admin keypair rm: gone from the server", rc == 0 and not key_state(), out + err)
    rc, _, out, err = bai(build, "admin", "policy", "rm", "pol-" + suffix)
    pols = gql(build, "{ keypair_resource_policies { name } }").get("keypair_resource_policies") or []
    check("admin policy rm: gone", rc == 0 and not any(p["name"] == "pol-" + suffix for p in pols), out + err)
    for kind, field in (("user-policy", "user_resource_policies"), ("project-policy", "project_resource_policies")):
        name = kind[0] + "p-" + suffix
        rc, doc, out, err = bai(build, "admin", kind, "create", name, "--quota", "10g")
        rc2, doc2, out2, err2 = bai(build, "admin", kind, "update", name, "--quota", "20g")
        have = [p for p in gql(build, "{ %s { name max_quota_scope_size } }" % field).get(field) or [] if p["name"] == name]
        check("admin %s create and update: the server has it, 20 GiB" % kind,
              rc == 0 and rc2 == 0 and have and int(have[0]["max_quota_scope_size"]) == 20 * 2**30,
              out + err + out2 + err2)
        rc, _, out, err = bai(build, "admin", kind, "rm", name)
        have = [p for p in gql(build, "{ %s { name } }" % field).get(field) or [] if p["name"] == name]
        check("admin %s rm: gone" % kind, rc == 0 and not have, out + err)
    images = gql(build, "{ images { name registry tag aliases } }").get("images") or []
    if images:
        target = "%s/%s:%s" % (images[0]["registry"], images[0]["name"], images[0]["tag"])
        rc, _, out, err = bai(build, "admin", "image", "alias", "al-" + suffix, target)
        aliases = [a for i in gql(build, "{ images { aliases } }").get("images") or [] for a in i.get("aliases") or []]
        check("admin image alias: the server has it", rc == 0 and "al-" + suffix in aliases, out + err)
        rc, _, out, err = bai(build, "admin", "image", "dealias", "al-" + suffix)
        aliases = [a for i in gql(build, "{ images { aliases } }").get("images") or [] for a in i.get("aliases") or []]
        check("admin image dealias: gone", rc == 0 and "al-" + suffix not in aliases, out + err)
    # Issue 46: the image list with 24.09's labels (the SDK asks for them), and purge_images,
    # 25.4's, refused by 23.09 in words naming the release.
    rc, doc, out, err = bai(build, "admin", "image", "ls")
    theirs = gql(build, "{ images { name } }").get("images") or []
    check("admin image ls (with labels): the server's images",
          rc == 0 and doc is not None and len(doc.get("images") or []) == len(theirs), out + err)
    rc, _, out, err = bai(build, "admin", "image", "purge", "no-agent", "python", check_json=False)
    check("admin image purge on 23.09.11: names the release that has purge_images, exit 1",
          rc == 1 and "25.4" in err, out + err)
    # forget_image and clear_images (an unknown image: the server's error; an unknown
    # registry: nothing to clear), and a domain's allowed_docker_registries set and reset.
    rc, _, out, err = bai(build, "admin", "image", "forget", "nowhere.example/x:1", check_json=False)
    check("admin image forget of an unknown image: the server's error, exit 1",
          rc == 1 and "nowhere.example/x:1" in err, out + err)
    rc, _, out, err = bai(build, "admin", "image", "clear", "nowhere.example", check_json=False)
    check("admin image clear of a registry without images: done",
          rc == 0 and len(gql(build, "{ images { name } }").get("images") or []) == len(theirs),
          out + err)
    rc, _, out, err = bai(build, "admin", "domain", "update", "default",
                          "--allowed-docker-registries", "cr.backend.ai,registry.lab:5000")
    now = gql(build, '{ domain(name: "default") { allowed_docker_registries } }').get("domain") or {}
    check("admin domain update --allowed-docker-registries: the server has them",
          rc == 0 and now.get("allowed_docker_registries") == ["cr.backend.ai", "registry.lab:5000"],
          out + err + str(now))
    rc, _, out, err = bai(build, "admin", "domain", "update", "default",
                          "--allowed-docker-registries", "cr.backend.ai")
    now = gql(build, '{ domain(name: "default") { allowed_docker_registries } }').get("domain") or {}
    check("admin domain update: set back", rc == 0 and now.get("allowed_docker_registries") == ["cr.backend.ai"],
          out + err + str(now))
    rc, _, out, err = bai(build, "admin", "user", "rm", "--purge", email)
    gone = gql(build, '{ user(email: "%s") { email } }' % email).get("user")
    check("admin user rm --purge: gone from the server", rc == 0 and not gone, out + err)
    rc, _, out, err = bai(build, "admin", "project", "rm", "--purge", "proj-" + suffix)
    groups = gql(build, "{ groups { name } }").get("groups") or []
    check("admin project rm --purge: gone", rc == 0 and not any(g["name"] == "proj-" + suffix for g in groups), out + err)
    rc, _, out, err = bai(build, "admin", "resource-group", "associate", "default", "--domain", "dom-" + suffix)
    groups = (gql(build, '{ domain(name: "dom-%s") { scaling_groups } }' % suffix).get("domain") or {}).get("scaling_groups")
    check("admin resource-group associate --domain: the server's domain has it", rc == 0 and groups == ["default"], out + err)
    rc, _, out, err = bai(build, "admin", "resource-group", "dissociate", "default", "--domain", "dom-" + suffix)
    groups = (gql(build, '{ domain(name: "dom-%s") { scaling_groups } }' % suffix).get("domain") or {}).get("scaling_groups")
    check("admin resource-group dissociate: gone", rc == 0 and groups == [], out + err)
    rc, _, out, err = bai(build, "admin", "domain", "rm", "dom-" + suffix)
    doms = gql(build, "{ domains(is_active: true) { name } }").get("domains") or []
    check("admin domain rm: no longer active", rc == 0 and not any(d["name"] == "dom-" + suffix for d in doms), out + err)

    folders(build, api, suffix)

    failed = [r for r in results if not r[1]]
    print("Backend.AI %s (API %s) at %s" % (manager, api, ENDPOINT))
    for name, ok, detail in results:
        print("%s  %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else "\n      " + str(detail)[:400]))
    print("%d of %d checks passed" % (len(results) - len(failed), len(results)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
