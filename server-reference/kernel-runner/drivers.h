// SPDX-License-Identifier: Apache-2.0
// The query-mode drivers the kernel runner starts inside a container. They are embedded in the
// runner binary so that an image needs nothing of ours besides the runner itself.
//
// Both drivers read snippets on fd 0 (python) or as shell text (sh), and report on fd 4:
//   "done N\n"            the snippet finished with exit code N
//   "input JSON\n"        python only: input() wants a line; the prompt (JSON string) is already
//                         on stdout, and the reply arrives on fd 3 as a length-prefixed frame
// Snippets reach the python driver on fd 3 as "LENGTH\nBYTES" frames.
#pragma once

namespace bai::runner {

/// A persistent interpreter: one globals dict for the kernel's life; a trailing expression is
/// printed like an interactive prompt would; an exception prints its traceback on stderr and
/// gives exit code 1 (DECISIONS.md); SystemExit gives its code and keeps the interpreter.
inline constexpr char const kPythonDriver[] = R"PY(
import ast, builtins, json, os, signal, sys, traceback
_rin = os.fdopen(3, "rb", 0)
_wout = os.fdopen(4, "wb", 0)
def _read():
    hdr = _rin.readline()
    if not hdr:
        os._exit(0)
    n = int(hdr)
    data = b""
    while len(data) < n:
        chunk = _rin.read(n - len(data))
        if not chunk:
            os._exit(0)
        data += chunk
    return data.decode("utf-8", "replace")
def _send(kind, value):
    _wout.write((kind + " " + json.dumps(value) + "\n").encode())
def _input(prompt=""):
    sys.stdout.write(str(prompt))
    sys.stdout.flush()
    sys.stderr.flush()
    _send("input", str(prompt))
    return _read()
builtins.input = _input
sys.stdin = open(os.devnull)
_g = {"__name__": "__main__", "__builtins__": builtins}
while True:
    # An interrupt between snippets must not end the interpreter.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _code = _read()
    _rc = 0
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _tree = ast.parse(_code, "<query>", "exec")
        _last = None
        if _tree.body and isinstance(_tree.body[-1], ast.Expr):
            _last = ast.Expression(_tree.body.pop().value)
        exec(compile(_tree, "<query>", "exec"), _g)
        if _last is not None:
            _v = eval(compile(_last, "<query>", "eval"), _g)
            if _v is not None:
                print(repr(_v))
    except SystemExit as _e:
        _rc = _e.code if isinstance(_e.code, int) else (0 if _e.code is None else 1)
        if not isinstance(_e.code, int) and _e.code is not None:
            print(_e.code, file=sys.stderr)
    except BaseException:
        _t, _v, _tb = sys.exc_info()
        traceback.print_exception(_t, _v, _tb.tb_next if _tb is not None else None)
        _rc = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    _send("done", _rc & 255)
)PY";

}  // namespace bai::runner
