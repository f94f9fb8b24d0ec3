"""Graph Explorer's entry point: `python app.py` serves the web UI (`explorer/ui`) on GRADIO_SERVER_NAME and
GRADIO_SERVER_PORT (127.0.0.1:7860 by default); Hugging Face Spaces runs it the same way.

Nothing is imported at the top: a worker process started with multiprocessing's spawn imports this file as its
main module, and must get only the engine it runs, not the UI."""

if __name__ == "__main__":
    from explorer.ui.app import main

    main()
