"""goblin.progress: tqdm's bar when tqdm is installed, a bar redrawn in place on a terminal,
plain lines elsewhere (a log gets one line per tenth done); the job's own unit."""

import io

import pytest

from goblin.progress import ProgressBar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_when_the_stream_is_not_a_terminal():
    out = io.StringIO()
    bar = ProgressBar("g-1", stream=out, unit="tasks")
    for done in range(0, 101):
        bar.update(done, 100)
    bar.note("goblin: job g-1 waits: no volunteer is connected")
    bar.finish()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[:2] == ["g-1: 0/100 tasks", "g-1: 10/100 tasks"]
    assert lines[-2:] == ["g-1: 100/100 tasks", "goblin: job g-1 waits: no volunteer is connected"]
    assert len(lines) == 12  # one per tenth, and the note


def test_a_terminal_gets_one_line_redrawn_in_place():
    out = Terminal()
    bar = ProgressBar("j-1", stream=out, width=10)
    bar.update(1, 4)
    bar.update(1, 4)  # unchanged: not redrawn
    bar.update(4, 4)
    bar.finish()
    assert out.getvalue() == "\rj-1 [##--------] 1/4 tiles\rj-1 [##########] 4/4 tiles\n"


def test_tqdm_draws_the_bar_when_it_is_installed(capsys):
    pytest.importorskip("tqdm", reason="tqdm is optional (Debian's python3-tqdm)")
    bar = ProgressBar("g-2", unit="tasks")
    bar.update(3, 8)
    bar.note("a note")
    bar.update(8, 8)
    bar.finish()
    err = capsys.readouterr().err
    assert "g-2" in err and "8/8" in err and "task" in err and "a note" in err


def test_without_tqdm_the_default_stream_gets_the_plain_bar(monkeypatch, capsys):
    import goblin.progress as progress
    monkeypatch.setattr(progress, "find_tqdm", lambda: None)
    bar = ProgressBar("g-3", unit="tasks")
    bar.update(2, 2)
    bar.finish()
    assert capsys.readouterr().err == "g-3: 2/2 tasks\n"
