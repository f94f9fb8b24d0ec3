import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
