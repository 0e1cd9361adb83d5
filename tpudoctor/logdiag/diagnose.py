"""From log events to findings: match signatures, pull numbers, count repeats, rank root cause first.

Each recognised failure is one ``Finding`` (kind LOG, id = the signature id) aggregated over all its
occurrences; where it was seen and how often are in its evidence (``DIAGNOSIS_FACTS``).

Ranking: the first fatal error in time is the root cause; fatal errors that follow are
listed after it in the order they first appeared (they are usually consequences), and
non-fatal warnings come last and stay WARN.
"""

from __future__ import annotations

import collections
import dataclasses
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tpudoctor.findings import Finding, Scope, Severity
from tpudoctor.logdiag import errorlevel, outcome
from tpudoctor.logdiag.benign import load_benign
from tpudoctor.logdiag.catalog import Catalog, Signature, load_catalog
from tpudoctor.logdiag.errorlevel import ErrorMark
from tpudoctor.logdiag.events import MAX_MESSAGE_LINES, Gap, LogEvent, group_events
from tpudoctor.logdiag.log_finding import Occurrences
from tpudoctor.logdiag.parsers import PARSERS
from tpudoctor.logs import prefilter
from tpudoctor.logs.clock import sort_key
from tpudoctor.logs.prefixes import unwrapped
from tpudoctor.logs.sources import LinePiece, count_lines, split_lines

BATCH_LINES = 4096
BATCH_CHARS = 1 << 20
MAX_SOURCES_LISTED = 10
MAX_OTHER_ERRORS = 5
SHORT_PASTE_LINES = 5
SHORT_PASTE_CHARS = 65536
"""A source of at most this many lines is a pasted excerpt: its lines are read for failure words too."""


class Diagnoser:
    """Feed it events from one or more sources, then ask for the ranked findings.

    Deny by default: an event a signature matches is named by it; any other error-level event
    (``errorlevel``: an exception line in any form, an E/F line, a signal, a non-zero exit, an error
    status...) is the catalog's fallback finding (``unrecognised-failure``, a WARN) quoting the
    strongest such line, so a log is clean only when it holds no error-level event at all.

    Memory stays bounded: one aggregate per signature, whatever the log's length. A source that
    belongs to a known worker or host is fed with its ``scope``; a finding's scope is the union of
    the scopes of the sources it was seen in (empty: the caller did not say where).
    """

    def __init__(self, catalog: Catalog | None = None):
        self.catalog = catalog or load_catalog()
        self._fallback = next((s for s in self.catalog.signatures if s.fallback), None)
        self._unknown = next((s for s in self.catalog.signatures if s.outcome_unknown), None)
        self._weak: tuple[LogEvent, str, int, str, Scope | None, str] | None = None
        """The first line that reads as a failure by its words alone (default deny), kept until the end."""
        self._frames: dict[str, _OpenTraceback] = {}
        self._short: list[tuple[str, Scope | None, list[str]]] = []
        """Sources of at most ``outcome.SHORT_PASTE_MAX_LINES`` lines, with their lines."""
        self._benign = load_benign()
        self._found: dict[str, Occurrences] = {}
        self._context: dict[str, Any] = {}  # latest value of each catalog context (bounded: one per name)
        self._sequence = 0
        self._recorded = 0
        self._prefilter: prefilter.Literals | None = None
        self.events_scanned = 0
        self.lines_scanned = 0

    def _may_hold(self, text: str) -> bool:
        return self.catalog.may_match(text) or errorlevel.may_hold(text)

    def feed(self, events: Iterable[LogEvent], source: str, *, scope: Scope | None = None) -> None:
        """Pre-grouped events (Cloud Logging entries, say)."""
        for event in events:
            self._scan(event, source, True, scope)

    def feed_lines(self, lines: Iterable[str], source: str, *, scope: Scope | None = None) -> None:
        """Raw lines, streamed. Lines are pre-filtered in batches: one substring pass over a
        batch decides whether any event touching it can match, which keeps a 1 GB log fast."""
        hot: collections.deque[tuple[int, int]] = collections.deque()

        def batches() -> Iterator[str]:
            batch: list[str] = []
            chars = 0
            line_no = 0  # real lines seen; the windows of an overlong line (LinePiece) share its number
            first = 1
            for line in lines:
                if not batch:
                    first = line_no if isinstance(line, LinePiece) else line_no + 1
                    chars = 0
                if not isinstance(line, LinePiece):
                    line_no += 1
                batch.append(line)
                chars += len(line)
                if len(batch) == BATCH_LINES or chars >= BATCH_CHARS:
                    if self._may_hold("\n".join(batch)):
                        hot.append((first, line_no))
                    yield from batch
                    batch = []
            if batch and self._may_hold("\n".join(batch)):
                hot.append((first, line_no))
            yield from batch

        recorded_before = self._recorded
        lines_before = self.lines_scanned
        head: list[str] = []
        short: list[LogEvent] | None = []  # the events of a pasted excerpt: read once more if nothing matched
        short_chars = 0
        for event in group_events(_head_kept(batches(), head)):
            while hot and hot[0][1] < event.first_line_no:
                hot.popleft()
            is_hot = bool(hot) and hot[0][0] <= event.last_line_no
            self._scan(event, source, is_hot, scope)
            if short is not None and event.last_line_no <= SHORT_PASTE_LINES:
                short.append(event)
                short_chars += sum(len(line) for line in event.lines)
                if short_chars > SHORT_PASTE_CHARS:
                    short = None
            elif short:
                short = None
        if short and self._recorded == recorded_before and self._fallback is not None \
                and short[-1].last_line_no <= SHORT_PASTE_LINES:
            self._bare_message(self._fallback, short, source, scope)
        self._end_source(source, scope, self.lines_scanned - lines_before, head)

    def _end_source(self, source: str, scope: Scope | None, n_lines: int, head: list[str]) -> None:
        """A traceback left open at the end of the source was cut; a short source is kept to judge its outcome."""
        open_tb = self._frames.pop(source, None)
        if open_tb is not None and open_tb.event is not None and open_tb.frames >= 2 and self._fallback is not None \
                and n_lines - open_tb.line_no <= outcome.CUT_TRACEBACK_TAIL_LINES:
            mark = ErrorMark(open_tb.offset, open_tb.line, errorlevel.CUT_TRACEBACK, errorlevel.CRASH)
            self._record(self._fallback, open_tb.event, open_tb.event.text, open_tb.offset, source, scope, mark)
        if 0 < n_lines <= outcome.SHORT_PASTE_MAX_LINES:
            self._short.append((source, scope, head[:outcome.SHORT_PASTE_MAX_LINES]))

    def _bare_message(self, fallback: Signature, events: list[LogEvent], source: str, scope: Scope | None) -> None:
        """A pasted excerpt of a few lines with no error-level form: a message printed without its class or
        level (``Failed to connect to ...``) still says the job failed when its words do."""
        for event in events:
            text = event.text
            offset = 0
            for line in text.split("\n"):
                if line.strip() and errorlevel.is_bare_failure(line):
                    mark = ErrorMark(offset, line, "a failure message", errorlevel.ERROR_LINE)
                    self._record(fallback, event, text, offset, source, scope, mark)
                    return
                offset += len(line) + 1

    def feed_blocks(self, items: Iterable[bytes | str], source: str, *, scope: Scope | None = None) -> None:
        """A file or stream read as blocks of whole lines in raw bytes (``sources.blocks_then_lines``): a block in
        which one RE2 pass finds no trigger of any signature or error-level form is skipped unread (its lines
        only counted), so a long healthy log costs little more than reading it; a block that holds one is
        decoded and grouped into events as ``feed_lines`` does, with the lines after it that may still belong
        to its last event. Text lines (after an overlong line) are read one by one."""
        hot: collections.deque[tuple[int, float]] = collections.deque()
        prefilter = self._block_prefilter()
        lines_before = self.lines_scanned
        head: list[str] = []
        items = _head_of_blocks(items, head)

        def lines() -> Iterator[str | Gap]:
            line_no = 0
            margin = 0  # lines of a cold block that may still belong to the last event of a hot one
            held = b""  # the last lines of the cold stretch before: the start of a record a hot block continues
            held_lines = 0
            for item in items:
                if isinstance(item, str):  # the line reader took over (an overlong line): read everything
                    if held:
                        yield from split_lines(held)
                        held, held_lines = b"", 0
                    if not hot or hot[-1][1] != float("inf"):
                        hot.append((line_no + 1 - held_lines, float("inf")))
                    if not isinstance(item, LinePiece):
                        line_no += 1
                    yield item
                    continue
                n = count_lines(item)
                if prefilter.search(item) >= 0 or item.startswith(errorlevel.LINE_START_TRIGGERS):
                    if held:
                        yield from split_lines(held)
                        held, held_lines = b"", 0
                    hot.append((line_no + 1, line_no + n))
                    yield from split_lines(item)
                    line_no += n
                    margin = MAX_MESSAGE_LINES
                    continue
                kept = 0
                if margin:
                    head = split_lines(item)[:margin]
                    kept = len(head)
                    yield from head
                    margin -= kept
                    if kept == n:
                        line_no += n
                        continue
                    item = b"\n".join(item.split(b"\n", kept)[kept:]) if kept else item
                # hold the cold stretch's last lines back; what falls out of the look-behind is skipped unread
                stretch = held + item
                cut = _tail_start(stretch, LOOK_BEHIND_LINES)
                skipped = count_lines(stretch[:cut]) if cut else 0
                held, held_lines = stretch[cut:], held_lines + (n - kept) - skipped
                if skipped:
                    self.lines_scanned += skipped
                    yield Gap(skipped)
                line_no += n
            if held:
                self.lines_scanned += held_lines
                yield Gap(held_lines)

        for event in group_events(lines()):
            while hot and hot[0][1] < event.first_line_no:
                hot.popleft()
            self._scan(event, source, bool(hot) and hot[0][0] <= event.last_line_no, scope)
        self._end_source(source, scope, self.lines_scanned - lines_before, head)

    def _block_prefilter(self) -> prefilter.Literals:
        if self._prefilter is None:
            self._prefilter = prefilter.Literals(
                (*self.catalog.exact_keywords, *errorlevel.TRIGGERS, *errorlevel.LEVEL_TRIGGERS),
                self.catalog.folded_keywords)
        return self._prefilter

    def _scan(self, event: LogEvent, source: str, hot: bool, scope: Scope | None = None) -> None:
        """``hot``: the batch around the event may hold a match (a cheap test already made)."""
        self.events_scanned += 1
        self.lines_scanned += event.last_line_no - event.first_line_no + 1
        self._sequence += 1
        if not hot:
            return
        text = event.text
        known = self.catalog.may_match(text)
        if not known and not event.severity and not errorlevel.may_hold(text):
            return
        for context in self.catalog.contexts:
            if context.keyword is not None and context.keyword in text and (value := context.extract(text)) is not None:
                self._context[context.name] = value
        hits = self._matches(text) if known else []
        for signature, offset in hits:
            self._record(signature, event, text, offset, source, scope)
        mark = None
        if not hits and self._fallback is not None:
            mark = errorlevel.find(text, benign=self._benign, given_level=event.severity)
            if mark is not None:
                self._record(self._fallback, event, text, mark.offset, source, scope, mark)
        self._follow_traceback(event, text, source)
        if not hits and mark is None and self._weak is None:
            offset = 0
            for line in event.lines:
                if outcome.failure_words(line) is not None:
                    self._weak = (event, text, offset, source, scope, line)
                    break
                offset += len(line) + 1

    def _follow_traceback(self, event: LogEvent, text: str, source: str) -> None:
        """Frames of a traceback printed one record per line (a launcher's prefix on each) are followed across
        events; an exception line closes them. One that starts with its header is ``errorlevel.find``'s."""
        if event.lines and event.lines[0].startswith("Traceback (most recent call last):"):
            self._frames.pop(source, None)
            return
        offset = 0
        for line in event.lines:
            if outcome.is_frame(line):
                open_tb = self._frames.setdefault(source, _OpenTraceback())
                open_tb.frames += 1
                open_tb.event, open_tb.offset, open_tb.line = event, offset, line
                open_tb.line_no = event.line_no_at(offset) if event.numbered else 0
            elif source in self._frames and errorlevel.is_exception_line(unwrapped(line).strip()):
                del self._frames[source]
            offset += len(line) + 1

    def _matches(self, text: str) -> list[tuple[Signature, int]]:
        """The signatures that name this event (the fallback is not one of them)."""
        hits: list[tuple[Signature, int]] = []
        folded = text.lower() if self.catalog.has_folded_keywords else None
        for signature in self.catalog.signatures:
            if signature.fallback or signature.outcome_unknown:
                continue
            match = signature.first_match(text, folded)
            if match is not None and not _on_backend_probe(text, match.start()):
                hits.append((signature, match.start()))
        if len(hits) > 1:
            superseded = {sid for sig, _ in hits for sid in sig.supersedes}
            specific = [h for h in hits if not h[0].wrapper]
            if specific:
                hits = [h for h in specific if h[0].id not in superseded]
            else:  # only generic wrappers: the most telling one
                hits = [max(hits, key=lambda h: h[0].priority)]
        return hits

    def _record(self, signature: Signature, event: LogEvent, text: str, offset: int, source: str,
                scope: Scope | None, mark: ErrorMark | None = None) -> None:
        self._recorded += 1
        evidence = signature.evidence(text)
        if mark is not None:
            evidence["error_kind"] = mark.kind
        for name in signature.parsers:
            for key, value in PARSERS[name](text, offset).items():
                evidence.setdefault(key, value)
        for name in signature.context:
            if name in self._context:
                evidence.setdefault(name, self._context[name])
        pair = signature.suppress_when_equal
        if pair and all(k in evidence for k in pair) and len({evidence[k] for k in pair}) == 1:
            return
        line_no = event.line_no_at(offset) if event.numbered else None
        known = self._found.get(signature.id)
        if known is not None and mark is not None:
            if mark.strength <= known.strength:
                self._note_other_error(known, f"{source}:{line_no}" if line_no else source, mark.line)
            else:  # quote the line that says most clearly that the job failed; the other joins the list
                self._note_other_error(known, known.location, str(known.pulled.get("failure", "")))
                stronger = self._accumulated(signature, event, text, offset, source, scope, evidence, line_no)
                stronger.strength = mark.strength
                stronger.count = known.count
                stronger.sources = known.sources
                stronger.scope = known.scope
                stronger.other_errors = known.other_errors
                known = self._found[signature.id] = stronger
        if known is not None:
            known.count += 1
            known.last_line_no = line_no if known.source == source else known.last_line_no
            if source not in known.sources and len(known.sources) < MAX_SOURCES_LISTED:
                known.sources.append(source)
            for key, value in evidence.items():
                known.pulled.setdefault(key, value)
            if scope is not None:
                known.scope = known.scope.union(scope)
            return
        accumulated = self._accumulated(signature, event, text, offset, source, scope, evidence, line_no)
        accumulated.strength = mark.strength if mark is not None else 0
        self._found[signature.id] = accumulated

    def _accumulated(self, signature: Signature, event: LogEvent, text: str, offset: int, source: str,
                     scope: Scope | None, evidence: dict[str, Any], line_no: int | None) -> Occurrences:
        return Occurrences.first(signature, event, text, offset, source, scope, evidence, line_no,
                                 (self._sequence, line_no or 0))

    @staticmethod
    def _note_other_error(known: Occurrences, where: str, line: str) -> None:
        if len(known.other_errors) >= MAX_OTHER_ERRORS:
            return
        quoted = f"{where}: {line.strip()[:300]}"
        if quoted not in known.other_errors:
            known.other_errors.append(quoted)

    def diagnoses(self) -> list[Finding]:
        """Root cause first: fatal before non-fatal, then by first appearance.

        A known fatal signature explains the unrecognised errors (they are dropped). Without one, the
        unrecognised failure and the known warnings that can stop a job (severity medium or more) are
        ranked by first appearance, since the first error in time is usually the cause; minor
        warnings (low severity) come last. Within one source, appearance is line order. Across
        sources (one log per worker, say), it is the timestamp when every finding has one, since the
        files were fed one by one.
        """
        if not self._found and self._weak is not None and self._fallback is not None:  # default deny
            event, text, offset, source, scope, line = self._weak
            words = outcome.failure_words(line)
            mark = ErrorMark(offset, line, f"a line that reads as a failure ({words!r})", errorlevel.ERROR_LINE)
            self._record(self._fallback, event, text, offset, source, scope, mark)
        if not self._found and self._unknown is not None:
            for source, scope, lines in self._short:
                if not any(outcome.shows_health(line) or outcome.is_levelled(line) for line in lines):
                    event = LogEvent(lines=list(lines), first_line_no=1, last_line_no=len(lines))
                    self._record(self._unknown, event, event.text, len(event.text) - len(lines[-1]), source, scope)
                    break
        found = list(self._found.values())
        # a specific signature seen anywhere explains the generic one it supersedes, also when a paste split
        # the message over two events (XLA's scheckne line, then the launch-group sentence after a rule)
        superseded = {sid for a in found for sid in a.signature.supersedes}
        found = [a for a in found if a.signature.id not in superseded]
        if any(a.signature.fatal for a in found):  # a known root cause: an unrecognised crash is its consequence
            found = [a for a in found if not a.signature.fallback]
        keys = {id(a): sort_key(a.first_timestamp) for a in found}
        by_time = len({a.source for a in found}) > 1 and all(keys.values())

        def minor(a: Occurrences) -> bool:
            return not a.signature.fallback and a.signature.severity is Severity.LOW

        ranked = sorted(found, key=lambda a: (not a.signature.fatal, minor(a),
                                              keys[id(a)] if by_time else "", a.order))
        return [a.finding() for a in ranked]


@dataclasses.dataclass
class _OpenTraceback:
    """Frames seen since the last exception line of one source."""

    frames: int = 0
    event: LogEvent | None = None
    offset: int = 0
    line: str = ""
    line_no: int = 0


def _head_kept(lines: Iterable[str], head: list[str]) -> Iterator[str]:
    """The lines, unchanged; the first ones (up to one more than a short paste has) are also put in ``head``."""
    for line in lines:
        if len(head) <= outcome.SHORT_PASTE_MAX_LINES and isinstance(line, str):
            head.append(line.rstrip("\r\n"))
        yield line


def _head_of_blocks(items: Iterable[bytes | str], head: list[str]) -> Iterator[bytes | str]:
    """``feed_blocks``' items, unchanged; the first lines are also decoded into ``head``."""
    for item in items:
        if len(head) <= outcome.SHORT_PASTE_MAX_LINES:
            if isinstance(item, str):
                head.append(item.rstrip("\r\n"))
            else:
                head.extend(split_lines(item)[:outcome.SHORT_PASTE_MAX_LINES + 1 - len(head)])
        yield item


LOOK_BEHIND_LINES = MAX_MESSAGE_LINES + 1
"""Cold lines kept before a hot block: a record that starts there and goes on into the block is read whole."""


def _tail_start(data: bytes, lines: int) -> int:
    """The offset where the last ``lines`` lines of ``data`` (whole lines, newline-ended) begin."""
    at = len(data) - 1 if data.endswith(b"\n") else len(data)
    for _ in range(lines):
        at = data.rfind(b"\n", 0, at)
        if at < 0:
            return 0
    return at + 1


def diagnose_lines(lines: Iterable[str], source: str = "<text>", *, catalog: Catalog | None = None,
                   scope: Scope | None = None) -> list[Finding]:
    """Log findings of streamed lines, root cause first."""
    diagnoser = Diagnoser(catalog)
    diagnoser.feed_lines(lines, source, scope=scope)
    return diagnoser.diagnoses()


def diagnose_text(text: str, source: str = "<text>", *, catalog: Catalog | None = None,
                  scope: Scope | None = None) -> list[Finding]:
    """Diagnose a whole log held in memory; ordered root cause first."""
    return diagnose_lines(io.StringIO(text), source, catalog=catalog, scope=scope)


def diagnose_file(path: str | Path, *, catalog: Catalog | None = None, scope: Scope | None = None) -> list[Finding]:
    """Stream a log file (or FIFO, or folder of logs) line by line: bounded memory, any size. A binary or
    empty file gives no finding: ``reading.feed_path`` tells what was read."""
    from tpudoctor.logdiag.reading import feed_path

    diagnoser = Diagnoser(catalog)
    feed_path(diagnoser, str(path), scope=scope)
    return diagnoser.diagnoses()


def _on_backend_probe(text: str, offset: int) -> bool:
    """The match sits on JAX's info-level note that a backend is not installed, not on a failure."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return errorlevel.is_absent_backend_probe(text[start:end if end >= 0 else len(text)])
