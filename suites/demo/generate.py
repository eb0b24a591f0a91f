"""Generate suites/demo/questions.jsonl: a mixed sample of 60 questions from the other suites.

Run ``python suites/demo/generate.py`` to rewrite the file; the output is byte for byte the
same on every run as long as the source suites are unchanged. Ids are prefixed with the source
suite (``capitals-mc-france``) and each item gets a ``source:<suite>`` tag; everything else is
copied as is.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 20240606
SUITES = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "questions.jsonl"

# (suite, multiple-choice items, short-answer items): 48 mc + 12 short = 60
PLAN: tuple[tuple[str, int, int], ...] = (
    ("arithmetic", 8, 4),
    ("calendar", 10, 0),
    ("capitals", 8, 4),
    ("elements", 8, 4),
    ("science", 14, 0),
)


def read(suite: str) -> list[dict[str, object]]:
    path = SUITES / suite / "questions.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build() -> str:
    """The full text of questions.jsonl."""
    lines: list[str] = []
    for suite, n_mc, n_short in PLAN:
        rng = random.Random(f"{SEED}:{suite}")
        items = read(suite)
        for kind, n in (("mc", n_mc), ("short", n_short)):
            pool = [q for q in items if q["kind"] == kind]
            picked = sorted(rng.sample(range(len(pool)), n))
            for i in picked:
                q = dict(pool[i])
                q["id"] = f"{suite}-{q['id']}"
                tags = q.get("tags", [])
                assert isinstance(tags, list)
                q["tags"] = [f"source:{suite}", *tags]
                lines.append(json.dumps(q, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
