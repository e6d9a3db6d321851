"""A one-line text progress bar on stderr for a job's accepted tiles (no extra dependency)."""

import sys
from typing import Optional, TextIO, Tuple


class ProgressBar:
    """Redraws `job [#####-----] done/total tiles` in place; finish() ends the line."""

    def __init__(self, job: str, stream: Optional[TextIO] = None, width: int = 30) -> None:
        self._job = job
        self._stream = stream if stream is not None else sys.stderr
        self._width = width
        self._last: Optional[Tuple[int, int]] = None

    def update(self, done: int, total: int) -> None:
        if total <= 0 or (done, total) == self._last:
            return
        self._last = (done, total)
        filled = min(self._width, self._width * done // total)
        bar = "#" * filled + "-" * (self._width - filled)
        self._stream.write("\r%s [%s] %d/%d tiles" % (self._job, bar, done, total))
        self._stream.flush()

    def finish(self) -> None:
        if self._last is not None:
            self._stream.write("\n")
            self._stream.flush()
            self._last = None
