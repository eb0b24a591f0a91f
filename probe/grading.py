"""Grading (pure): map an answer text to an option or a normalized short answer, and judge it."""

from __future__ import annotations

import re
import string
import unicodedata

from probe.prompts import RenderedPrompt
from probe.suite import Question

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation if c not in "-"})
_NUM_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
# label at the start: "A", "(A)", "A.", "A)", "**A**", "Answer: A", "Option A"
_LEAD_LABEL = re.compile(
    r"^\s*(?:\*\*)?\s*(?:(?:final\s+)?answer\s*(?:is)?\s*[:\-]?\s*|option\s+)?[\(\[\*]*\s*([A-Za-z0-9]{1,2})\s*[\)\]\.:\*,]*(?:\s|$)",
    re.IGNORECASE,
)


def _words_to_number(words: list[str]) -> int | None:
    total, current, seen = 0, 0, False
    for w in words:
        if w in _NUM_WORDS:
            current += _NUM_WORDS[w]
            seen = True
        elif w in _SCALES:
            current = max(current, 1) * _SCALES[w]
            if _SCALES[w] >= 1000:
                total, current = total + current, 0
            seen = True
        elif w == "and" and seen:
            continue
        else:
            return None
    return total + current if seen else None


def normalize_answer(text: str) -> str:
    """Lower case, no accents on the comparison, no punctuation or articles, numbers canonical."""
    s = unicodedata.normalize("NFKC", text).strip().lower()
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)  # 1,000 -> 1000
    s = re.sub(r"(?<=\d)\.0+\b", "", s)  # 12.0 -> 12
    s = s.translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    words = s.replace("-", " ").split()
    number = _words_to_number(words) if words else None
    if number is not None:
        return str(number)
    return " ".join(s.split())


def parse_label(text: str, labels: tuple[str, ...]) -> str | None:
    """The option label a reply starts with (case-insensitive), or None."""
    m = _LEAD_LABEL.match(text)
    if not m:
        return None
    found = m.group(1)
    for label in labels:
        if found.upper() == label.upper():
            return label
    return None


def mc_choice(text: str, question: Question, prompt: RenderedPrompt) -> int | None:
    """Original choice index a reply names, by label or by exact option text; None if neither."""
    label = parse_label(text, prompt.labels)
    if label is not None:
        return prompt.choice_of_label(label)
    assert question.choices is not None
    norm = normalize_answer(text)
    hits = [i for i, c in enumerate(question.choices) if normalize_answer(c) == norm]
    return hits[0] if len(hits) == 1 else None


def short_correct(text: str, question: Question) -> bool:
    """Normalized match against any alias."""
    assert question.aliases is not None
    norm = normalize_answer(text)
    return bool(norm) and any(normalize_answer(a) == norm for a in question.aliases)
