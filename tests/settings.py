"""Settings for the test run: the service's settings with DEBUG on unless set."""
import os

os.environ.setdefault("DEBUG", "1")

from config.settings import *  # noqa: E402,F401,F403
