"""The compile report as the app gives it: the session's compiles replayed with TORCH_TRACE in a fresh worker, each
row of the compile timeline linked to its compile id's entry in tlparse's report, which the app serves to read in
the browser (sandboxed), never a file outside a job's directory."""

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.testclient import TestClient

from explorer.compile.options import CompileOptions
from explorer.runs.session import Session
from explorer.ui.downloads import PREFIX, Downloads
from explorer.views.export import ExportDir, tlparse_files
from explorer.workers.process import WorkerProcess


def test_each_timeline_row_links_to_its_entry_in_the_report_served_sandboxed():
    session = Session()
    session.configure("transformer", {"layers": 1})
    service = WorkerProcess()
    try:
        for text in ("The cat sat.", "The cat sat on the mat, and then it slept."):
            session.run(text)
            for _ in session.run_compiled(service, CompileOptions("eager", "false")):  # static: a compile each
                pass
    finally:
        service.stop()
    exports = ExportDir()
    files = tlparse_files(exports, session)
    assert files.zip.endswith("-tlparse.zip") and [r[0] for r in files.rows] == ["0/0", "0/1"]
    client = TestClient(Starlette(middleware=[Middleware(Downloads, root=exports.path)]))
    for compile_id, _, _, page in files.rows:
        path, anchor = page.split("#")
        shown = client.get(PREFIX + path)
        assert shown.status_code == 200 and anchor == f"[{compile_id}]" and f'<a id="{anchor}">' in shown.text
        assert shown.headers["content-security-policy"] == "sandbox allow-scripts"
        assert "attachment" not in shown.headers.get("content-disposition", "")
    job = files.rows[0][3].split("/")[0]
    assert client.get(f"{PREFIX}{job}/../../etc/passwd").status_code == 404
    assert client.get(f"{PREFIX}{job}").status_code == 404  # a directory is no file
