"""Graph Explorer's entry point: `python app.py` serves the web UI (`explorer/ui`) on GRADIO_SERVER_NAME and
GRADIO_SERVER_PORT (127.0.0.1:7860 by default); Hugging Face Spaces runs it the same way.

Nothing is imported at the top: a worker process started with multiprocessing's spawn imports this file as its
main module, and must get only the engine it runs, not the UI."""

if __name__ == "__main__":
    import atexit
    import os
    import sys

    status = 0

    def _end() -> None:
        """The last exit handler (registered before any other: they run last-first), after the workers stopped and
        the directories went: end here, before C++'s static destructors, where the profiler's thread, still joinable
        when a SIGTERM came mid-measurement, aborted the exit ("terminate called without an active exception",
        status -6 instead of 143)."""
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    atexit.register(_end)
    from explorer.ui.app import main

    try:
        main()
    except SystemExit as stop:  # a SIGTERM (explorer/server.py) or sys.exit
        status = stop.code if isinstance(stop.code, int) else 1
        raise
    except KeyboardInterrupt:
        status = 130  # 128 + SIGINT, as a shell reports Ctrl-C
        raise
