"""Importing public question sets into probe suites.

Four source formats, each read by a pure function from text to questions:

- ``mmlu-csv``: MMLU-style CSV, no header; question, four options, answer letter (A–D).
  A directory of such files imports them all, one subject per file.
- ``triviaqa-json``: ``{"Data": [{"Question", "QuestionId", "Answer": {"Value", "Aliases"}}]}``
  (or a plain list of such records); short answer, every alias accepted.
- ``truthfulqa-mc1-json``: a list of ``{"question", "mc1_targets": {"choice": 0|1, …}}``
  with exactly one correct target; options kept in the source order.
- ``jsonl``: one JSON object per line, fields named by a mapping (``--map question=q,…``).

Every problem is reported as ``path:line: field: what is wrong`` (``path: record[i]: …``
for JSON documents, which have no useful line per record), all at once, and nothing is
written unless the whole source is good. ``write_suite`` writes a suite directory
atomically: into a temporary sibling directory, checked with the suite loader, then renamed.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tempfile
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probe.errors import Failure, UsageError
from probe.suite import DEFAULT_LABELS, DEFAULT_VARIANTS, PromptVariant, Question
from probe.suite_io import QUESTIONS_FILE, SUITE_FILE, SuiteError, load_suite

MAX_REPORTED = 20
SUITE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
MMLU_LETTERS = ("A", "B", "C", "D")


class ImportFormat(StrEnum):
    """Source formats ``probe suites import`` reads."""

    MMLU_CSV = "mmlu-csv"
    TRIVIAQA_JSON = "triviaqa-json"
    TRUTHFULQA_MC1_JSON = "truthfulqa-mc1-json"
    JSONL = "jsonl"


class SourceError(UsageError):
    """A source that cannot be imported; ``problems`` holds one ``path:line: field: msg`` each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_REPORTED]
        more = len(problems) - len(shown)
        super().__init__("\n".join(shown) + (f"\n… and {more} more problem(s)" if more > 0 else ""))


class FieldMap(BaseModel):
    """Where the generic JSONL importer finds each question field in a source record.

    Values are field names in the source; dotted names (``answer.value``) reach into objects.
    A record with a choices field is multiple choice, one without it is short answer.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default="id", description="Question id; the line number when absent.")
    question: str = Field(default="question", description="Question text.")
    choices: str = Field(default="choices", description="List of options (mc).")
    answer: str = Field(
        default="answer",
        description="Correct option (mc: 0-based index, option letter or option text) or answer text (short).",
    )
    aliases: str = Field(default="aliases", description="Accepted answers (short): a list or one string.")
    subject: str = Field(default="subject", description="Subject area, if any.")

    @classmethod
    def parse(cls, text: str | None) -> FieldMap:
        """Parse ``question=q,choices=opts`` (unnamed fields keep their default source names)."""
        if not text:
            return cls()
        pairs: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key or not value:
                raise UsageError(f"--map: {part.strip()!r} is not field=source_field (e.g. question=q)")
            if key not in cls.model_fields:
                known = ", ".join(cls.model_fields)
                raise UsageError(f"--map: unknown field {key!r} (known: {known})")
            if key in pairs:
                raise UsageError(f"--map: field {key!r} is mapped twice")
            pairs[key] = value
        return cls.model_validate(pairs)


class SuiteMeta(BaseModel):
    """Metadata written to the imported suite's ``suite.toml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=SUITE_NAME_RE.pattern, description="Suite name.")
    version: str = Field(default="1", min_length=1, description="Content version.")
    description: str = Field(default="", description="What the suite measures.")
    license: str = Field(default="", description="License of the content.")
    source: str = Field(default="", description="Where the questions come from.")
    variants: tuple[PromptVariant, ...] = Field(default=DEFAULT_VARIANTS, min_length=1)


# -- shared helpers ---------------------------------------------------------------------------


def _problems_from(where: str, err: ValidationError, rename: dict[str, str]) -> list[str]:
    out = []
    for e in err.errors():
        msg = str(e["msg"]).removeprefix("Value error, ")
        loc = ".".join(str(p) for p in e["loc"]) or "(record)"
        if loc == "(record)" and ": " in msg:  # model-level checks name their field first
            loc, msg = msg.split(": ", 1)
        head = loc.split(".")[0].split("[")[0]
        out.append(f"{where}: {rename.get(head, head)}: {msg}")
    return out


def _question(fields: dict[str, Any], where: str, rename: dict[str, str], problems: list[str]) -> Question | None:
    try:
        return Question.model_validate(fields)
    except ValidationError as e:
        problems.extend(_problems_from(where, e, rename))
        return None


def _check_ids(items: Iterable[tuple[str, Question]], id_field: str, problems: list[str]) -> list[Question]:
    seen: dict[str, str] = {}
    out: list[Question] = []
    for where, q in items:
        if q.id in seen:
            problems.append(f"{where}: {id_field}: duplicate id {q.id!r} (first at {seen[q.id]})")
            continue
        seen[q.id] = where
        out.append(q)
    return out


def _finish(questions: list[Question], problems: list[str], path: str) -> list[Question]:
    if problems:
        raise SourceError(problems)
    if not questions:
        raise SourceError([f"{path}:1: (file): no questions found"])
    return questions


def decode(path: Path) -> str:
    """A source file's text; not UTF-8 → ``SourceError`` naming the line."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SourceError([f"{path}: (file): cannot read: {e.strerror or e}"]) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise SourceError([f"{path}:{line}: (encoding): not valid UTF-8 (byte {e.start})"]) from None


class _Pairs(dict[str, Any]):
    """A JSON object that remembers keys it saw more than once (json keeps only the last)."""

    duplicates: list[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(pairs)
    keys = [k for k, _ in pairs]
    obj.duplicates = sorted({k for k in keys if keys.count(k) > 1})
    return obj


def _load_json(text: str, path: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_pairs_hook)
    except json.JSONDecodeError as e:
        raise SourceError([f"{path}:{e.lineno}: (json): {e.msg} (column {e.colno})"]) from None


def _dig(record: dict[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _dedup(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v.strip() for v in values if v.strip()))


# -- MMLU CSV ---------------------------------------------------------------------------------


def parse_mmlu_csv(text: str, path: str, subject: str | None = None, id_prefix: str = "q") -> list[Question]:
    """MMLU-style CSV rows (question, A, B, C, D, answer letter), no header."""
    rename = {"text": "question", "choices": "options", "answer": "answer"}
    problems: list[str] = []
    items: list[tuple[str, Question]] = []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    try:
        for number, row in enumerate(reader, start=1):
            where = f"{path}:{start}"
            start = reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != 6:
                problems.append(f"{where}: (row): expected 6 columns (question, four options, answer "
                                f"letter), got {len(row)}")
                continue
            letter = row[5].strip().upper()
            if letter not in MMLU_LETTERS:
                problems.append(f"{where}: answer: {row[5]!r} is not one of {', '.join(MMLU_LETTERS)}")
                continue
            fields = {"id": f"{id_prefix}{number:05d}", "kind": "mc", "text": row[0].strip(),
                      "choices": [c.strip() for c in row[1:5]], "answer": MMLU_LETTERS.index(letter),
                      "subject": subject}
            q = _question(fields, where, rename, problems)
            if q is not None:
                items.append((where, q))
    except csv.Error as e:
        problems.append(f"{path}:{reader.line_num}: (csv): {e}")
    return _finish(_check_ids(items, "(row)", problems), problems, path)


def _mmlu_subject(stem: str) -> str:
    return re.sub(r"_(test|dev|val|validation|train|auxiliary_train)$", "", stem)


# -- TriviaQA JSON ----------------------------------------------------------------------------


def parse_triviaqa_json(text: str, path: str) -> list[Question]:
    """TriviaQA-style records: ``Question``, ``QuestionId``, ``Answer.Value`` and ``Answer.Aliases``."""
    doc = _load_json(text, path)
    records = doc.get("Data") if isinstance(doc, dict) else doc
    label = "Data" if isinstance(doc, dict) else "record"
    if not isinstance(records, list):
        raise SourceError([f"{path}:1: Data: expected a list of records (or an object with a 'Data' list)"])
    rename = {"id": "QuestionId", "text": "Question", "aliases": "Answer.Aliases"}
    problems: list[str] = []
    items: list[tuple[str, Question]] = []
    for i, rec in enumerate(records):
        where = f"{path}: {label}[{i}]"
        if not isinstance(rec, dict):
            problems.append(f"{where}: (record): expected an object, got {type(rec).__name__}")
            continue
        answer = rec.get("Answer")
        if not isinstance(answer, dict):
            problems.append(f"{where}: Answer: missing or not an object")
            continue
        value = answer.get("Value")
        aliases = _str_list(answer.get("Aliases", []))
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{where}: Answer.Value: missing or empty")
            continue
        if aliases is None:
            problems.append(f"{where}: Answer.Aliases: expected a list of strings")
            continue
        qid = rec.get("QuestionId", f"q{i + 1:05d}")
        fields = {"id": str(qid) if isinstance(qid, int | str) else qid, "kind": "short",
                  "text": rec.get("Question"), "aliases": _dedup([value, *aliases])}
        if isinstance(fields["text"], str):
            fields["text"] = fields["text"].strip()
        q = _question(fields, where, rename, problems)
        if q is not None:
            items.append((where, q))
    return _finish(_check_ids(items, "QuestionId", problems), problems, path)


# -- TruthfulQA MC1 JSON ----------------------------------------------------------------------


def parse_truthfulqa_mc1_json(text: str, path: str, max_choices: int | None = None) -> list[Question]:
    """TruthfulQA MC1 records: ``question`` and ``mc1_targets`` (choice text → 0 or 1, one 1).

    A question with more options than labels (``len(DEFAULT_LABELS)``) is an error unless
    ``max_choices`` is given: then the correct option and the first others are kept.
    """
    limit = max_choices or len(DEFAULT_LABELS)
    if not 2 <= limit <= len(DEFAULT_LABELS):
        raise UsageError(f"--max-choices: must be between 2 and {len(DEFAULT_LABELS)}, got {limit}")
    doc = _load_json(text, path)
    if not isinstance(doc, list):
        raise SourceError([f"{path}:1: (file): expected a JSON list of records"])
    rename = {"text": "question", "choices": "mc1_targets", "answer": "mc1_targets"}
    problems: list[str] = []
    items: list[tuple[str, Question]] = []
    for i, rec in enumerate(doc):
        where = f"{path}: record[{i}]"
        if not isinstance(rec, dict):
            problems.append(f"{where}: (record): expected an object, got {type(rec).__name__}")
            continue
        targets = rec.get("mc1_targets")
        if not isinstance(targets, dict) or not targets:
            problems.append(f"{where}: mc1_targets: missing or not an object of choice → 0/1")
            continue
        dupes = getattr(targets, "duplicates", [])
        if dupes:
            problems.append(f"{where}: mc1_targets: choice {dupes[0]!r} appears more than once")
            continue
        bad = [k for k, v in targets.items() if v not in (0, 1) or isinstance(v, bool)]
        if bad:
            problems.append(f"{where}: mc1_targets: value of {bad[0]!r} must be 0 or 1")
            continue
        correct = [k for k, v in targets.items() if v == 1]
        if len(correct) != 1:
            problems.append(f"{where}: mc1_targets: expected exactly one choice marked 1, got {len(correct)}")
            continue
        choices = [k.strip() for k in targets]
        if len(choices) > limit:
            if max_choices is None:
                problems.append(f"{where}: mc1_targets: {len(choices)} choices, more than the "
                                f"{len(DEFAULT_LABELS)} supported; pass --max-choices {len(DEFAULT_LABELS)} "
                                "to keep the correct one and the first others")
                continue
            keep = correct[0].strip()
            others = [c for c in choices if c != keep][: limit - 1]
            choices = [c for c in choices if c == keep or c in others]
        fields = {"id": f"q{i + 1:04d}", "kind": "mc", "text": rec.get("question"), "choices": choices,
                  "answer": choices.index(correct[0].strip())}
        if isinstance(fields["text"], str):
            fields["text"] = fields["text"].strip()
        q = _question(fields, where, rename, problems)
        if q is not None:
            items.append((where, q))
    return _finish(_check_ids(items, "(record)", problems), problems, path)


# -- generic JSONL ----------------------------------------------------------------------------


def _mc_answer(value: Any, choices: list[str]) -> int | str:
    """0-based index, option text or option letter → index; else a message."""
    if isinstance(value, bool):
        return "expected an option index, letter or text, got a boolean"
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value in choices:
            return choices.index(value)
        letter = value.strip().upper()
        if len(letter) == 1 and letter in DEFAULT_LABELS[: len(choices)]:
            return DEFAULT_LABELS.index(letter)
        return f"{value!r} is neither an option's text nor an option letter"
    return f"expected an option index, letter or text, got {type(value).__name__}"


def _generic_record(obj: dict[str, Any], number: int, m: FieldMap) -> tuple[dict[str, Any], str | None]:
    """Question fields from a mapped record, or (partial fields, problem ``field: msg``)."""
    qid = _dig(obj, m.id)
    fields: dict[str, Any] = {"id": str(qid) if isinstance(qid, int | str) else f"q{number:05d}",
                              "text": _dig(obj, m.question), "subject": _dig(obj, m.subject)}
    if isinstance(fields["text"], str):
        fields["text"] = fields["text"].strip()
    raw_choices = _dig(obj, m.choices)
    answer = _dig(obj, m.answer)
    if raw_choices is not None:
        if not isinstance(raw_choices, list) or not all(isinstance(c, str) for c in raw_choices):
            return fields, f"{m.choices}: expected a list of strings"
        if answer is None:
            return fields, f"{m.answer}: missing (an mc question needs its correct option)"
        index = _mc_answer(answer, raw_choices)
        if isinstance(index, str):
            return fields, f"{m.answer}: {index}"
        fields.update(kind="mc", choices=[c.strip() for c in raw_choices], answer=index)
        return fields, None
    raw_aliases = _dig(obj, m.aliases)
    aliases = _str_list(raw_aliases) if raw_aliases is not None else []
    if aliases is None:
        return fields, f"{m.aliases}: expected a list of strings or one string"
    if answer is not None and not isinstance(answer, str | int):
        return fields, f"{m.answer}: expected the answer as text"
    head = [str(answer)] if answer is not None else []
    fields.update(kind="short", aliases=_dedup([*head, *aliases]))
    if not fields["aliases"]:
        return fields, f"{m.aliases}: no accepted answer (no {m.choices}, {m.answer} or {m.aliases})"
    return fields, None


def parse_jsonl(text: str, path: str, mapping: FieldMap | None = None) -> list[Question]:
    """Generic JSONL: one object per line, fields found through ``mapping``."""
    m = mapping or FieldMap()
    rename = {"id": m.id, "text": m.question, "choices": m.choices, "answer": m.answer,
              "aliases": m.aliases, "subject": m.subject}
    lines = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        lines = lines[:-1]
    problems: list[str] = []
    items: list[tuple[str, Question]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            what = "truncated last line" if number == len(lines) and not complete else "invalid JSON"
            problems.append(f"{where}: (line): {what} ({e.msg}; column {e.colno})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: (line): expected a JSON object, got {type(obj).__name__}")
            continue
        fields, problem = _generic_record(obj, number, m)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        q = _question(fields, where, rename, problems)
        if q is not None:
            items.append((where, q))
    return _finish(_check_ids(items, m.id, problems), problems, path)


# -- reading sources and writing suites -------------------------------------------------------


def read_source(
    fmt: ImportFormat, src: Path, mapping: FieldMap | None = None, max_choices: int | None = None
) -> list[Question]:
    """Read and parse a source file (or, for mmlu-csv, a directory of CSV files)."""
    if not src.exists():
        raise SourceError([f"{src}: (file): no such file or directory"])
    if fmt is ImportFormat.MMLU_CSV and src.is_dir():
        files = sorted(src.glob("*.csv"))
        if not files:
            raise SourceError([f"{src}: (directory): no *.csv files"])
        questions: list[Question] = []
        problems: list[str] = []
        for f in files:
            subject = _mmlu_subject(f.stem)
            try:
                questions += parse_mmlu_csv(decode(f), str(f), subject=subject, id_prefix=f"{subject}-")
            except SourceError as e:
                problems += e.problems
        return _finish(questions, problems, str(src))
    if src.is_dir():
        raise SourceError([f"{src}: (file): is a directory; {fmt.value} reads one file"])
    text = decode(src)
    match fmt:
        case ImportFormat.MMLU_CSV:
            return parse_mmlu_csv(text, str(src), subject=_mmlu_subject(src.stem))
        case ImportFormat.TRIVIAQA_JSON:
            return parse_triviaqa_json(text, str(src))
        case ImportFormat.TRUTHFULQA_MC1_JSON:
            return parse_truthfulqa_mc1_json(text, str(src), max_choices=max_choices)
        case ImportFormat.JSONL:
            return parse_jsonl(text, str(src), mapping)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):  # a JSON string is a valid TOML basic string, bar DEL
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def suite_toml(meta: SuiteMeta) -> str:
    """The text of ``suite.toml`` for ``meta``, every variant written out."""
    lines = [f"{key} = {_toml_value(getattr(meta, key))}"
             for key in ("name", "version", "description", "license", "source")]
    for v in meta.variants:
        lines += ["", "[[variants]]"]
        data = v.model_dump(mode="json", exclude_defaults=True)
        lines += [f"{key} = {_toml_value(value)}" for key, value in data.items()]
    return "\n".join(lines) + "\n"


def questions_jsonl(questions: Iterable[Question]) -> str:
    """The text of ``questions.jsonl``: one compact object per line, defaults left out."""
    return "".join(
        json.dumps(q.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False) + "\n" for q in questions
    )


def write_suite(questions: list[Question], out: Path, meta: SuiteMeta, force: bool = False) -> Path:
    """Write a suite directory atomically; an existing directory is replaced only with ``force``."""
    if out.exists() and not force:
        raise UsageError(f"{out}: already exists; pass --force to replace it")
    if out.exists() and not (out / SUITE_FILE).is_file():
        raise UsageError(f"{out}: exists and is not a suite directory; refusing to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    old: Path | None = None
    try:
        (tmp / SUITE_FILE).write_text(suite_toml(meta), encoding="utf-8")
        (tmp / QUESTIONS_FILE).write_text(questions_jsonl(questions), encoding="utf-8")
        load_suite(tmp)  # what we wrote must load; a failure here is a bug, not the user's
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            if old.exists():
                shutil.rmtree(old)
            out.rename(old)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and old.exists() and not out.exists():
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out


def import_suite(
    fmt: ImportFormat,
    src: Path,
    out: Path,
    *,
    name: str | None = None,
    mapping: FieldMap | None = None,
    max_choices: int | None = None,
    force: bool = False,
    description: str | None = None,
    license: str = "",
) -> tuple[Path, int]:
    """Import ``src`` into the suite directory ``out``; returns the directory and question count."""
    suite_name = name or out.name
    if not SUITE_NAME_RE.match(suite_name):
        hint = "" if name else " (taken from the output directory; pass --name)"
        raise UsageError(f"--name: {suite_name!r} is not a valid suite name{hint}: use lower-case letters, "
                         "digits, '-' and '_', starting with a letter or digit")
    if out.exists() and not force:  # say so before reading a large source
        raise UsageError(f"{out}: already exists; pass --force to replace it")
    questions = read_source(fmt, src, mapping, max_choices)
    meta = SuiteMeta(
        name=suite_name,
        description=description or f"Imported from {src.name} ({fmt.value}).",
        license=license,
        source=f"{src.name}, imported with probe suites import --format {fmt.value}",
    )
    try:
        write_suite(questions, out, meta, force=force)
    except SuiteError as e:  # the parsers validate all the loader checks: this would be a bug
        raise Failure(f"the imported suite does not load (a bug in the importer): {e}") from e
    return out, len(questions)
