"""Generate suites/elements/questions.jsonl from elements.tsv (all 118 elements).

Run ``python suites/elements/generate.py`` to rewrite the file; the output is byte for byte
the same on every run. Three questions per element:

- symbol → name, short answer (accepting spelling variants such as Aluminium/Aluminum);
- name → symbol, multiple choice; distractors are real symbols with the same initial as the
  right symbol or as the element's name (potassium: P, Po, Pt …), else its neighbours' symbols;
- name → atomic number, multiple choice; distractors are off by 1, 2 or 10.

Tags: the task, and "common" (Z ≤ 36), "heavy" (Z ≤ 103) or "superheavy" (the transactinides).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import NamedTuple

SEED = 20240604
N_CHOICES = 4
HERE = Path(__file__).resolve().parent
TABLE = HERE / "elements.tsv"
OUT = HERE / "questions.jsonl"


class Element(NamedTuple):
    number: int
    symbol: str
    names: tuple[str, ...]


def read_table(path: Path = TABLE) -> list[Element]:
    rows: list[Element] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 3 or not cells[0].isdigit():
            raise ValueError(f"{path}:{number}: expected atomic number, symbol and name(s)")
        rows.append(Element(int(cells[0]), cells[1], tuple(cells[2].split("|"))))
    if [e.number for e in rows] != list(range(1, len(rows) + 1)):
        raise ValueError(f"{path}: atomic numbers must run 1, 2, 3, … without gaps")
    return rows


def symbol_distractors(rng: random.Random, element: Element, rows: list[Element]) -> list[str]:
    initials = {element.symbol[0], element.names[0][0]}
    pool = [e.symbol for e in rows if e.symbol[0] in initials and e is not element]
    if len(pool) < N_CHOICES - 1:
        pool += [rows[n - 1].symbol for n in (element.number - 1, element.number + 1, element.number - 2,
                                               element.number + 2) if 1 <= n <= len(rows)]
        pool = list(dict.fromkeys(pool))
    return rng.sample(pool, N_CHOICES - 1)


def number_distractors(rng: random.Random, element: Element, count: int) -> list[int]:
    n = element.number
    pool = [m for m in (n - 1, n + 1, n - 2, n + 2, n - 10, n + 10) if 1 <= m <= count]
    return rng.sample(pool, N_CHOICES - 1)


def mc(qid: str, text: str, right: str, wrong: list[str], rng: random.Random) -> dict[str, object]:
    choices = [right, *wrong]
    rng.shuffle(choices)
    return {"id": qid, "kind": "mc", "text": text, "choices": choices, "answer": choices.index(right)}


def tags(task: str, element: Element) -> list[str]:
    rarity = "common" if element.number <= 36 else "heavy" if element.number <= 103 else "superheavy"
    return [f"task:{task}", f"elements:{rarity}"]


def build() -> str:
    """The full text of questions.jsonl."""
    rows = read_table()
    rng = random.Random(SEED)
    items: list[dict[str, object]] = []
    for e in rows:
        items.append({"id": f"name-of-{e.symbol.lower()}", "kind": "short",
                      "text": f"Which chemical element has the symbol {e.symbol}?",
                      "aliases": list(e.names), "subject": "elements", "tags": tags("symbol-to-name", e)})
    for e in rows:
        q = mc(f"symbol-of-{e.symbol.lower()}", f"What is the chemical symbol of {e.names[0].lower()}?",
               e.symbol, symbol_distractors(rng, e, rows), rng)
        items.append(q | {"subject": "elements", "tags": tags("name-to-symbol", e)})
    for e in rows:
        wrong = [str(m) for m in number_distractors(rng, e, len(rows))]
        q = mc(f"number-of-{e.symbol.lower()}", f"What is the atomic number of {e.names[0].lower()}?",
               str(e.number), wrong, rng)
        items.append(q | {"subject": "elements", "tags": tags("name-to-number", e)})
    return "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in items)


def main() -> None:
    OUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
