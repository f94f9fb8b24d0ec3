"""Real attacks on the code worker's walls. Each probe is an edit of the RNN's file whose first lines reach for
something outside the worker, run through the same confined worker the Code tab uses. Its last line raises
`PROBE-DONE <what it saw>`, so an edit that failed to start cannot pass for a wall. With the walls up nothing is
reached, the probe's effect is absent afterwards, and the server (a process of the same user here) still answers;
with them switched off (GE_WALLS_OFF_=all, a test's switch) the same probes reach, which shows that each one detects
its breach. The module runs once more under a server that holds no capability at all (setpriv), as an
unprivileged user's server would: the worker cannot be switched to `nobody` on this machine (Python lives under
root's 700 home), so that run is the one where the walls alone hold."""

import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from explorer.code.job import CodeJob, CodeRun
from explorer.core.confine import OFF_ENV, WALLS, offered
from explorer.core.inputs import tokenize
from explorer.sources.edited import CodeError
from explorer.workers.process import WorkerProcess
from explorer.workers.protocol import WorkerFailure
from tests.helpers import ROOT

RNN = (ROOT / "models" / "rnn.py").read_text()
IDS = tuple(tokenize("The cat sat.").ids[0].tolist())
SECRET = "hunter2-walls"


CAPLESS = os.environ.get("GE_PROBES_CAPLESS_") == "1"  # this module again, under a server without privileges


@pytest.fixture(scope="module", params=["walls up"] if CAPLESS else ["walls up", "walls off"])
def walled(request):
    """(the code worker, whether its walls are up)."""
    up = request.param == "walls up"
    if up and offered().missing:
        pytest.fail(f"this machine's kernel lacks walls the suite needs: {offered().missing}")
    os.environ[OFF_ENV] = "" if up else "all"
    service = WorkerProcess(timeout_s=20, name="code", confined=True)
    yield service, up
    service.stop()
    os.environ.pop(OFF_ENV)


@pytest.fixture
def server():
    """A process of the server's user holding a secret in its environment (the server itself is one such)."""
    proc = subprocess.Popen(["sleep", "600"], env={**os.environ, "GE_PROBE_SECRET": SECRET})
    # until it has exec'd, the child's environment is still this process's, without the secret (a probe that read
    # it first once saw no secret with the walls off)
    deadline = time.monotonic() + 60  # a bound on a hang (sleep never starting), not on this machine's speed
    while SECRET.encode() not in Path(f"/proc/{proc.pid}/environ").read_bytes():
        assert time.monotonic() < deadline, "the probes' server did not start within 60 s"
        time.sleep(0.01)
    yield proc
    proc.kill()
    proc.wait()


def _probe(worker: WorkerProcess, body: str) -> str:
    """What the probe saw: 'REACHED ...' or 'blocked: ...' (from its PROBE-DONE line, which it must reach)."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    probe = (f"try:\n{lines}\n    seen = 'REACHED ' + str(locals().get('got', ''))[:200]\n"
             "except Exception as e:\n    seen = f'blocked: {type(e).__name__}: {e}'\n"
             "raise RuntimeError('PROBE-DONE ' + seen)\n")
    head, future, rest = RNN.partition("from __future__ import annotations\n")  # first lines: after the docstring
    edit = head + future + probe + rest
    try:
        *_, reply = worker.run(CodeJob("rnn", edit, {}, IDS))
        said = reply.text() if isinstance(reply, CodeError) else "the edit ran without its PROBE-DONE line"
    except WorkerFailure as e:
        said = str(e)
    assert "PROBE-DONE" in said, f"the probe did not run to its end: {said}"
    return said.split("PROBE-DONE ", 1)[1]


def _answers(worker: WorkerProcess) -> None:
    *_, reply = worker.run(CodeJob("rnn", RNN, {}, IDS))
    assert isinstance(reply, CodeRun)  # the next edit runs: the worker (replaced if need be) answers


def _check(walled, body: str) -> str:
    worker, up = walled
    seen = _probe(worker, body)
    assert seen.startswith("blocked" if up else "REACHED"), seen
    _answers(worker)
    return seen


def test_a_kill_of_another_process_of_the_servers_user(walled, server):
    _check(walled, f"import os, signal\nos.kill({server.pid}, signal.SIGKILL)")
    if walled[1]:
        assert server.poll() is None  # alive behind the walls
    else:  # killed without them (on a loaded machine a killed process takes a moment to end: a bound, not a speed)
        assert server.wait(timeout=30) == -signal.SIGKILL


def test_ptrace_of_the_server(walled, server):
    _check(walled, f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, {server.pid}, 0, 0) != 0:  # PTRACE_ATTACH
    raise PermissionError(ctypes.get_errno(), 'ptrace')
import os
os.waitpid({server.pid}, 0x40000000)  # its stop (__WALL)
libc.ptrace(17, {server.pid}, 0, 0)  # PTRACE_DETACH: the probe lets go
""")
    assert server.poll() is None


def test_reading_the_servers_environment(walled, server):
    _check(walled, f"got = open('/proc/{server.pid}/environ', 'rb').read()\nassert b'{SECRET}' in got\n"
                   "got = 'the secret'")


def test_writing_in_another_directory_of_tmp(walled, tmp_path):
    target = tmp_path / "written-by-an-edit"
    _check(walled, f"open({str(target)!r}, 'w').write('x')")
    assert target.exists() != walled[1]


def test_writing_a_model_file_every_later_visitor_would_import(walled):
    target = ROOT / "models" / "written_by_an_edit.py"
    try:
        _check(walled, f"open({str(target)!r}, 'w').write('x = 1')")
        assert target.exists() != walled[1]
    finally:
        target.unlink(missing_ok=True)


@pytest.fixture
def secret_file():
    """A file in the operator's home directory (where ~/.ssh lives)."""
    path = Path.home() / ".graph-explorer-probe-secret"
    path.write_text(SECRET)
    yield path
    path.unlink(missing_ok=True)


def test_reading_a_file_in_the_operators_home(walled, secret_file):
    _check(walled, f"got = open({str(secret_file)!r}).read()\nassert got == {SECRET!r}")


def test_a_symlink_out_of_its_own_directory(walled, secret_file):
    _check(walled, f"import os\nos.symlink({str(secret_file)!r}, 'out')\ngot = open('out').read()\n"
                   f"assert got == {SECRET!r}")


@pytest.mark.parametrize("where", ["another session's export directory", "Gradio's upload directory"])
def test_reading_what_other_visitors_left(walled, where):
    uploads = Path(os.environ.get("GRADIO_TEMP_DIR", Path(tempfile.gettempdir()) / "gradio"))
    uploads.mkdir(parents=True, exist_ok=True)
    base = tempfile.mkdtemp(prefix="graph-explorer-export-") if where.startswith("another") else \
        tempfile.mkdtemp(dir=uploads)
    try:
        (Path(base) / "report.html").write_text(SECRET)
        _check(walled, f"got = open({base + '/report.html'!r}).read()\nassert got == {SECRET!r}")
    finally:
        shutil.rmtree(base)


@pytest.fixture
def listener():
    """A TCP port on this machine, as the app's own is, and what reached it."""
    got: list[bytes] = []
    sock = socket.create_server(("127.0.0.1", 0))
    sock.settimeout(5)

    def accept():
        try:
            conn, _ = sock.accept()
            got.append(conn.recv(100))
            conn.close()
        except OSError:
            pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield sock.getsockname()[1], got
    sock.close()
    thread.join()


def test_a_tcp_connection_to_a_local_port(walled, listener):
    port, got = listener
    _check(walled, f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                   "s.sendall(b'probe')\ns.close()")
    if walled[1]:
        assert got == []


def test_a_tcp_port_of_its_own_to_listen_on(walled):
    _check(walled, "import socket\ns = socket.create_server(('127.0.0.1', 0))\ngot = s.getsockname()")


def test_a_call_to_the_apps_own_http_port(walled):
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        _check(walled, f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{httpd.server_port}/"
                       "gradio_api/info', timeout=2).read()")
        assert (seen == []) == walled[1]
    finally:
        httpd.shutdown()


def test_a_unix_socket_to_another_process(walled):
    name = f"\0graph-explorer-probe-{os.getpid()}"  # an abstract socket: no file a path rule could guard
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(name)
        server.listen()
        _check(walled, f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({name!r})")


def test_setuid_0_after_the_drop_regains_nothing(walled):
    _check(walled, """
import os
os.setuid(0)
caps = next(line for line in open('/proc/self/status') if line.startswith('CapEff'))
if int(caps.split()[1], 16) == 0:
    raise PermissionError('no capability after setuid(0): ' + caps.strip())
got = caps
""")


def test_a_write_through_an_inherited_file_descriptor(walled):
    """The server's log was the worker's standard output and error; any other file or socket it inherited (its job's
    connection aside, which reaches only its own parent's end) would be another way out."""
    _check(walled, """
import os
ways = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        ways[int(fd)] = os.readlink(f'/proc/self/fd/{fd}')
    except OSError:
        pass
out = {fd: t for fd, t in ways.items() if fd in (1, 2) and t != '/dev/null' or fd > 2 and t.startswith('/')}
got = {}
for fd, target in out.items():
    try:
        os.write(fd, b'written by an edit\\n')
        got[fd] = target
    except OSError:  # open for reading only
        pass
if not got:
    raise PermissionError('nothing to write through: ' + repr(ways))
""")


def test_the_switch_names_every_wall_and_the_kernel_offers_them_all(monkeypatch):
    monkeypatch.setenv(OFF_ENV, "")
    assert offered().missing == ()  # this machine: Landlock ABI 7, seccomp on x86-64
    monkeypatch.setenv(OFF_ENV, "landlock-tcp")
    assert offered().missing == ("landlock-tcp",) and "MISSING: landlock-tcp" in offered().said()
    assert set(WALLS) >= {"landlock-files", "landlock-tcp", "landlock-scope", "seccomp", "capabilities"}


@pytest.mark.skipif(os.geteuid() != 0 or CAPLESS, reason="as root, once: it runs this module under a server "
                    "without privileges")
def test_the_probes_hold_under_a_server_without_any_privilege():
    """This module's walled probes again, from a server that holds no capability (uid 0 with every capability
    cleared: none, as an unprivileged user's server has none): the worker's own drop is then no wall, and what
    holds is the kernel's."""
    command = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--", sys.executable,
               "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", __file__]
    env = {k: v for k, v in os.environ.items() if k != OFF_ENV} | {"GE_PROBES_CAPLESS_": "1"}
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and " passed" in run.stdout and " failed" not in run.stdout, \
        run.stdout[-3000:] + run.stderr[-2000:]
