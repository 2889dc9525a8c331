"""The Streamlit process `forge app` starts: Streamlit's own command line, plus a thread that
imports the dashboard's modules as soon as the server runs, so that the first visitor's first page
does not wait for them (pandas, DuckDB, the app's data layer and the Overview's charts: about a second
on a 2-core machine), then sets their objects apart from Python's garbage collector (`gc.freeze`): they
live as long as the process, and each full collection walked all of them (0.1 to 0.2 s each, three of them
in the Pareto page's first render of a new server)."""

import gc
import sys
import threading
import time

from streamlit import runtime
from streamlit.web import cli


def _preload() -> None:
    while not runtime.exists():  # the cached functions check their settings against the runtime's caches
        time.sleep(0.05)
    import app.data  # noqa: F401
    import app.overview_charts  # noqa: F401
    import app.overview_view  # noqa: F401
    import app.ui  # noqa: F401
    import forge_core.reports.tables  # noqa: F401

    gc.freeze()  # what is loaded now is never garbage: later full collections skip it


if __name__ == "__main__":
    threading.Thread(target=_preload, name="forge-preload", daemon=True).start()
    sys.exit(cli.main(prog_name="streamlit"))
