"""A job's progress on stderr: tqdm's bar when tqdm is installed (``tqdm.auto``: a widget in
Jupyter), else a bar redrawn in place on a terminal, else plain lines (a log file or a pipe gets
a line per tenth done, not a stream of carriage returns). The unit is what the job counts: tiles
for a matmul, tasks for a graph job."""

import sys
from typing import Any, Optional, TextIO, Tuple


def find_tqdm() -> Any:
    try:
        from tqdm.auto import tqdm  # type: ignore[import]  # optional; ships no stubs
    except ImportError:
        return None
    return tqdm


class ProgressBar:
    """`update(done, total)` as the node reports progress, `note(text)` for a line beside the bar,
    `finish()` when the job ends. Uses tqdm when it is installed and `stream` is stderr (the
    default), unless `use_tqdm=False`."""

    def __init__(self, job: str, stream: Optional[TextIO] = None, width: int = 30,
                 unit: str = "tiles", use_tqdm: Optional[bool] = None) -> None:
        self._job = job
        self._stream = stream if stream is not None else sys.stderr
        self._width = width
        self._unit = unit
        self._last: Optional[Tuple[int, int]] = None
        self._tenth = -1
        tqdm = find_tqdm() if (use_tqdm is None and stream is None) or use_tqdm else None
        self._tqdm_class = tqdm
        self._tqdm: Any = None
        isatty = getattr(self._stream, "isatty", None)
        self._terminal = bool(isatty()) if callable(isatty) else False

    def update(self, done: int, total: int) -> None:
        if total <= 0 or (done, total) == self._last:
            return
        self._last = (done, total)
        if self._tqdm_class is not None:
            return self._update_tqdm(done, total)
        if self._terminal:
            filled = min(self._width, self._width * done // total)
            bar = "#" * filled + "-" * (self._width - filled)
            self._stream.write("\r%s [%s] %d/%d %s" % (self._job, bar, done, total, self._unit))
            self._stream.flush()
            return
        tenth = min(10, 10 * done // total)
        if tenth != self._tenth:
            self._tenth = tenth
            self._stream.write("%s: %d/%d %s\n" % (self._job, done, total, self._unit))
            self._stream.flush()

    def _update_tqdm(self, done: int, total: int) -> None:
        if self._tqdm is None:
            self._tqdm = self._tqdm_class(total=total, desc=self._job, unit=self._unit[:-1]
                                          if self._unit.endswith("s") else self._unit,
                                          leave=True)
        if self._tqdm.total != total:
            self._tqdm.total = total
        self._tqdm.n = done
        self._tqdm.refresh()

    def note(self, text: str) -> None:
        """A line of its own (the job waits for volunteers, say), without breaking the bar."""
        if self._tqdm is not None:
            self._tqdm.write(text, file=self._stream)
            return
        self._stream.write(("\n" if self._terminal and self._last is not None else "") + text
                           + "\n")
        self._stream.flush()

    def finish(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        elif self._last is not None and self._terminal:
            self._stream.write("\n")
            self._stream.flush()
        self._last = None
