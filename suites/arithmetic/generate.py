"""Generate suites/arithmetic/questions.jsonl: seeded multi-digit addition and multiplication.

Run ``python suites/arithmetic/generate.py`` to rewrite the file; the output is byte for byte
the same on every run (one seeded ``random.Random`` per level, nothing else varies).

Levels go from easy (3-digit sums) to hard (4-by-4-digit products). Each level holds the same
number of multiple-choice and short-answer items. Distractors are near misses of the kind a
person (or a model) gets wrong: one digit off, off by 10 or 100, two adjacent digits swapped,
or a product with one operand off by one.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 20240601
PER_KIND = 150  # per level and kind: 8 levels x (150 mc + 150 short) = 2,400 questions
N_CHOICES = 4

# (op, digits of a, digits of b, difficulty)
LEVELS: tuple[tuple[str, int, int, str], ...] = (
    ("add", 3, 3, "easy"),
    ("add", 5, 5, "medium"),
    ("add", 8, 8, "hard"),
    ("mul", 2, 2, "easy"),
    ("mul", 3, 2, "medium"),
    ("mul", 3, 3, "medium"),
    ("mul", 4, 3, "hard"),
    ("mul", 4, 4, "hard"),
)
SYMBOL = {"add": "+", "mul": "×"}
SUBJECT = {"add": "addition", "mul": "multiplication"}

OUT = Path(__file__).resolve().parent / "questions.jsonl"


def operand(rng: random.Random, digits: int) -> int:
    """A number with exactly ``digits`` digits, avoiding trivial ones (ending in 0, or 10…0)."""
    while True:
        n = rng.randint(10 ** (digits - 1), 10**digits - 1)
        if n % 10 != 0:
            return n


def near_misses(a: int, b: int, op: str, result: int) -> list[int]:
    """Plausible wrong results; all positive, none equal to ``result``, no repeats."""
    text = str(result)
    out: list[int] = []
    # one digit off by one (the classic carry slip), from the middle digits outwards
    for pos in range(len(text)):
        for delta in (1, -1):
            digit = int(text[pos]) + delta
            if 0 <= digit <= 9 and not (pos == 0 and digit == 0):
                out.append(int(text[:pos] + str(digit) + text[pos + 1 :]))
    out += [result + 10, result - 10, result + 100, result - 100]
    for pos in range(len(text) - 1):  # adjacent digits swapped
        if text[pos] != text[pos + 1] and not (pos == 0 and text[1] == "0"):
            out.append(int(text[:pos] + text[pos + 1] + text[pos] + text[pos + 2 :]))
    if op == "mul":  # one operand off by one
        out += [result + a, result - a, result + b, result - b]
    return [n for n in dict.fromkeys(out) if n > 0 and n != result]


def item(rng: random.Random, op: str, da: int, db: int, difficulty: str, kind: str, n: int) -> dict[str, object]:
    a, b = operand(rng, da), operand(rng, db)
    result = a + b if op == "add" else a * b
    level = f"{da}x{db}"
    q: dict[str, object] = {
        "id": f"{op}-{level}-{kind}-{n:03d}",
        "kind": kind,
        "text": f"What is {a} {SYMBOL[op]} {b}?",
    }
    if kind == "mc":
        wrong = rng.sample(near_misses(a, b, op, result), N_CHOICES - 1)
        choices = [*wrong, result]
        rng.shuffle(choices)
        q["choices"] = [str(c) for c in choices]
        q["answer"] = choices.index(result)
    else:
        aliases = [str(result)]
        if result >= 1000:
            aliases.append(f"{result:,}")
        q["aliases"] = aliases
    q["subject"] = SUBJECT[op]
    q["tags"] = [f"difficulty:{difficulty}", f"digits:{level}"]
    return q


def build() -> str:
    """The full text of questions.jsonl."""
    lines: list[str] = []
    for op, da, db, difficulty in LEVELS:
        rng = random.Random(f"{SEED}:{op}:{da}x{db}")
        for kind in ("mc", "short"):
            for n in range(1, PER_KIND + 1):
                q = item(rng, op, da, db, difficulty, kind, n)
                lines.append(json.dumps(q, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
