"""The data notice: the one text that says research data is not encrypted while it is computed,
printed where data is sent (goblin.connect once per process, every submission with
progress=True) and quoted by the README and the node's access pages."""

from __future__ import annotations

import sys
from typing import Optional, TextIO

DATA_WARNING = ("Numbers are not encrypted while volunteers compute them: personal or medical data "
                "does not belong on the public network.")


class DataNotice:
    """Writes DATA_WARNING to stderr: `on_connect()` the first time in this process,
    `on_submit()` every time."""

    def __init__(self) -> None:
        self.shown_on_connect = False

    def show(self, stream: Optional[TextIO] = None) -> None:
        out = stream if stream is not None else sys.stderr
        out.write("goblin: " + DATA_WARNING + "\n")
        out.flush()

    def on_connect(self) -> None:
        if not self.shown_on_connect:
            self.shown_on_connect = True
            self.show()

    def on_submit(self) -> None:
        self.show()


#: The process's notice (goblin.connect and the submissions use it).
NOTICE = DataNotice()

__all__ = ["DATA_WARNING", "DataNotice", "NOTICE"]
