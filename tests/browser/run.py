#!/usr/bin/python3
"""The console's browser tests (label browser): starts bai-manager, a simulated bai-agent and
bai-webserver serving BUILD/console on free loopback ports, a page on another origin for the
CSRF step, then runs console.mjs in headless Chromium. Screenshots go to BUILD/browser-shots.

  run.py BUILD_DIR

Exits 77 (CTest: skipped, with the reason) when the console was not built or Chromium or the
console's npm packages are missing; never reports those as passed.
"""

import base64
import hashlib
import http.server
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))


def start_registry(work: str, procs: list) -> str:
    """A registry of the test's own holding lab/app:1 (the conformance harness's
    start_local_registry), for the console's Registries card; its host:port, or "" (said)."""
    sys.path.insert(0, os.path.join(repo, "tests", "conformance"))
    from conformance import start_local_registry
    try:
        return start_local_registry(os.path.join(work, "registry"), procs, "browser")
    except RuntimeError as e:
        print(f"no registry: {e}")
        return ""


def main() -> int:
    build = os.path.abspath(sys.argv[1])
    binp = os.path.join(build, "bin")
    console = os.path.join(build, "console")
    chromium = os.environ.get("BAI_CHROMIUM", "/usr/bin/chromium")
    for need, why in ((os.path.join(console, "index.html"), "the console is not built (make build)"),
                      (chromium, "no Chromium (apt-get install chromium)"),
                      (os.path.join(repo, "console", "node_modules", "puppeteer-core"),
                       "the console's npm packages are not installed (make build runs npm ci)")):
        if not os.path.exists(need):
            print(f"skipped: {why}")
            return SKIP
    work = tempfile.mkdtemp(prefix="bai-browser-")
    procs = []
    try:
        data = os.path.join(work, "manager")
        m = subprocess.Popen([f"{binp}/bai-manager", "--data-dir", data, "--listen", "127.0.0.1:0",
                              "--storage-listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, "manager.log"), "w"), text=True)
        procs.append(m)
        port = None
        for line in m.stdout:
            hit = re.search(r"listening on [\d.]+:(\d+)", line)
            if hit:
                port = int(hit.group(1))
                break
        if port is None:
            print("bai-manager did not start")
            return 1
        manager = f"http://127.0.0.1:{port}"
        creds = dict(line.strip().split("=", 1) for line in
                     open(os.path.join(data, "admin-credentials.env")) if "=" in line)
        procs.append(subprocess.Popen(
            [f"{binp}/bai-agent", "--manager", manager, "--id", "browser-agent", "--backend",
             "dummy", "--cluster-secret-file", os.path.join(data, "cluster-secret"),
             "--state-dir", os.path.join(work, "agent"), "--slots", "cpu=4,mem=4g",
             "--images", "python,shell", "--dummy-prepare-ms", "50",
             # Two GPUs of the fake driver (no GPU here), shared in cuda.shares.
             "--nvml-library", os.path.join(build, "lib", "fake-driver", "libnvidia-ml.so.1")],
            env={**os.environ, "BAI_FAKE_GPU_COUNT": "2"},
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "agent.log"), "w")))
        w = subprocess.Popen([f"{binp}/bai-webserver", "--manager", manager, "--data-dir", data,
                              "--listen", "127.0.0.1:0", "--static-dir", console,
                              "--app-ports", "21200-21299"],
                             stdout=subprocess.PIPE,
                             stderr=open(os.path.join(work, "webserver.log"), "w"), text=True)
        procs.append(w)
        hit = re.search(r"console at (http://[\d.]+:\d+/)", w.stdout.readline())
        if not hit:
            print("bai-webserver did not start")
            return 1
        url = hit.group(1)
        # Another origin (another port): its page POSTs to the console with the user's cookie.
        evil_page = (f"<!doctype html><title>sending</title><script>fetch('{url}func/folders', "
                     "{method: 'POST', mode: 'no-cors', credentials: 'include', headers: "
                     "{'Content-Type': 'text/plain'}, body: JSON.stringify({name: 'csrf-evil'})})"
                     ".finally(() => { document.title = 'sent'; });</script>").encode()

        class Evil(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(evil_page)

            def log_message(self, *args):
                pass

        evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Evil)
        threading.Thread(target=evil.serve_forever, daemon=True).start()

        # An HTTP app a session serves (a simulated kernel's preopen ports are this host's): a
        # page that assumes it is at the root, and what cookies reached it.
        class App(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/echo" and self.headers.get("Upgrade", "").lower() == "websocket":
                    return self.echo_websocket()
                body = ("<!doctype html><title>bai test app</title><h1>hello from the app</h1>"
                        f"<p id=path>{self.path}</p><p id=cookies>{self.headers.get('Cookie', '')}"
                        "</p><p id=ws>connecting</p><script>"
                        "const ws = new WebSocket(`ws://${location.host}/echo`);"
                        "ws.onopen = () => ws.send('ping-' + 6 * 7);"
                        "ws.onmessage = (e) => { document.getElementById('ws').textContent = e.data; };"
                        "ws.onerror = () => { document.getElementById('ws').textContent = 'error'; };"
                        "</script>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            # A WebSocket that answers each text message with "echo:" and it (RFC 6455).
            def echo_websocket(self):
                key = self.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
                accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
                self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                  f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                                  ).encode())
                self.wfile.flush()
                while True:
                    head = self.rfile.read(2)
                    if len(head) < 2:
                        return
                    opcode, n = head[0] & 0x0F, head[1] & 0x7F
                    if n == 126:
                        n = struct.unpack(">H", self.rfile.read(2))[0]
                    elif n == 127:
                        n = struct.unpack(">Q", self.rfile.read(8))[0]
                    mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
                    data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
                    if opcode == 8:
                        self.wfile.write(b"\x88\x02\x03\xe8")
                        return
                    if opcode == 1:
                        out = b"echo:" + data
                        self.wfile.write(bytes([0x81, len(out)]) + out)
                        self.wfile.flush()

            def log_message(self, *args):
                pass

        app = http.server.ThreadingHTTPServer(("127.0.0.1", 0), App)
        threading.Thread(target=app.serve_forever, daemon=True).start()
        registry = start_registry(work, procs)
        # The agent registers within a few seconds; the first session waits for it anyway.
        time.sleep(1)
        shots = os.path.join(build, "browser-shots")
        r = subprocess.run(["node", os.path.join(here, "console.mjs"), url,
                            creds["BAI_ADMIN_EMAIL"], creds["BAI_ADMIN_PASSWORD"], shots,
                            f"http://127.0.0.1:{evil.server_address[1]}/",
                            str(app.server_address[1]), work, registry], timeout=400)
        evil.shutdown()
        app.shutdown()
        print(f"screenshots: {shots}")
        return r.returncode
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
