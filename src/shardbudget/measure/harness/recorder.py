"""Bookkeeping shared by both launch modes: completed sizes, the output file, the progress bar.

The output is rewritten atomically (temp file + ``os.replace``) after every completed size, so a
run that dies keeps everything it measured.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from rich.console import Console
from rich.progress import Progress as RichProgress

from ...atomic import write_atomic
from ...errors import MeasureError
from ...units import format_bytes
from .peers import node_count
from .results import MeasureResult, PlannedSize, SizeResult, summarize


class Recorder:
    """Collects completed sizes, saves them after each one, drives progress and the callback."""

    def __init__(
        self,
        result: MeasureResult,
        plan: list[PlannedSize],
        on_size: Callable[[SizeResult], None] | None,
        progress: bool,
        *,
        force: bool = False,
    ):
        self.result, self.plan, self.on_size = result, plan, on_size
        self._replace = force  # the first save replaces a file only with --force; later ones their own
        self._bar = Progress(len(plan), result.op) if progress else None
        try:
            self.save()  # claims the output name early: an unwritable file fails before any work
        except OSError as exc:
            self.close()
            raise MeasureError(f"cannot write output {result.out_path!r}: {exc.strerror or exc}") from None

    def started(self, index: int) -> None:
        if self._bar:
            self._bar.update(index, self.plan[index].size_bytes)

    def hosts(self, hosts: list[str], addrs: list[str | None] | None = None) -> None:
        """Every rank's hostname (and address on the route to the store, where known)."""
        unique = list(dict.fromkeys(hosts))
        nodes = node_count(hosts, addrs)
        self.result.n_nodes = nodes
        self.result.env.update(hosts=unique, n_nodes=nodes)
        if addrs:
            self.result.env["addrs"] = list(addrs)

    def completed(self, index: int, samples_s: list[float], wrong_by_rank: list[int] | None) -> None:
        row = summarize(
            self.plan[index],
            samples_s,
            op=self.result.op,
            world_size=self.result.world_size,
            wrong_by_rank=wrong_by_rank,
        )
        self.result.results.append(row)
        self.save()
        if self._bar:
            self._bar.update(index + 1, None)
        if self.on_size:
            self.on_size(row)

    def close(self) -> None:
        if self._bar:
            self._bar.close()
            self._bar = None

    def finish(self, error: str | None) -> MeasureResult:
        self.close()
        self.result.complete = len(self.result.results) == len(self.plan)
        self.result.error = error
        self.save()
        return self.result

    def save(self) -> None:
        if self.result.out_path:
            write_atomic(self.result.out_path, json.dumps(self.result.to_dict(), indent=1) + "\n", force=self._replace)
            self._replace = True

    def kept(self) -> str:
        done = f"{len(self.result.results)} of {len(self.plan)} sizes completed"
        return done + (f" and kept in {self.result.out_path}" if self.result.out_path else "")


class Progress:
    """A rich progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, op: str):
        self._bar = None
        if not sys.stderr.isatty():
            return
        # Redirect stdout through the bar only when it shares the terminal; a redirected stdout
        # (a table piped to a file) must stay untouched.
        self._bar = RichProgress(
            console=Console(stderr=True), transient=True, redirect_stdout=sys.stdout.isatty(), redirect_stderr=False
        )
        self._task = self._bar.add_task(op, total=total)
        self._op = op
        self._bar.start()

    def update(self, done: int, size_bytes: int | None) -> None:
        if self._bar:
            text = f"{self._op} {format_bytes(size_bytes)}" if size_bytes else self._op
            self._bar.update(self._task, completed=done, description=text)

    def close(self) -> None:
        if self._bar:
            self._bar.stop()
