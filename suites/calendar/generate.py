"""Generate suites/calendar/questions.jsonl: the day of the week of dates across eight centuries.

Run ``python suites/calendar/generate.py`` to rewrite the file; the output is byte for byte the
same on every run. Dates are drawn with a seeded ``random.Random`` from 1600 to 2399 (the
Gregorian calendar, in use in much of Europe from 1582; ``datetime`` is proleptic Gregorian,
so the question says which calendar it means) and the answer is ``datetime.date.weekday()``.

Each question offers four weekdays: the right one and three others, two of them the days just
before and after, the classic off-by-one slips of a mental day-of-week calculation.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

SEED = 20240602
FIRST_YEAR, CENTURIES = 1600, 8
PER_CENTURY = 30  # 8 x 30 = 240 questions
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")

OUT = Path(__file__).resolve().parent / "questions.jsonl"


def random_date(rng: random.Random, century_start: int) -> dt.date:
    start = dt.date(century_start, 1, 1).toordinal()
    end = dt.date(century_start + 99, 12, 31).toordinal()
    return dt.date.fromordinal(rng.randint(start, end))


def item(rng: random.Random, day: dt.date) -> dict[str, object]:
    right = day.weekday()
    near = [(right - 1) % 7, (right + 1) % 7]
    others = [d for d in range(7) if d != right and d not in near]
    options = [right, *near, rng.choice(others)]
    rng.shuffle(options)
    text = f"In the Gregorian calendar, what day of the week is {day.day} {MONTHS[day.month - 1]} {day.year}?"
    return {
        "id": f"dow-{day.isoformat()}",
        "kind": "mc",
        "text": text,
        "choices": [WEEKDAYS[d] for d in options],
        "answer": options.index(right),
        "subject": "day of week",
        "tags": [f"years:{day.year // 100 * 100}s", f"leap:{str(_is_leap(day.year)).lower()}"],
    }


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def build() -> str:
    """The full text of questions.jsonl."""
    lines: list[str] = []
    seen: set[dt.date] = set()
    for c in range(CENTURIES):
        century_start = FIRST_YEAR + 100 * c
        rng = random.Random(f"{SEED}:{century_start}")
        count = 0
        while count < PER_CENTURY:
            day = random_date(rng, century_start)
            if day in seen:
                continue
            seen.add(day)
            lines.append(json.dumps(item(rng, day), ensure_ascii=False))
            count += 1
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
