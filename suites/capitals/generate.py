"""Generate suites/capitals/questions.jsonl from countries.tsv (the hand-checked facts).

Run ``python suites/capitals/generate.py`` to rewrite the file; the output is byte for byte
the same on every run. Each country gets a short-answer question (accepting every alias in
the table) and, unless its row says ``no``, a multiple-choice question whose distractors are
the country's big non-capital cities (the classic confusions: Sydney, Toronto, Istanbul …)
and capitals of other countries in the same region.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from pathlib import Path
from typing import NamedTuple

SEED = 20240603
N_CHOICES = 4
HERE = Path(__file__).resolve().parent
TABLE = HERE / "countries.tsv"
OUT = HERE / "questions.jsonl"


class Country(NamedTuple):
    name: str
    region: str
    capitals: tuple[str, ...]
    decoys: tuple[str, ...]
    mc: bool


def slug(name: str) -> str:
    plain = unicodedata.normalize("NFKD", name.removeprefix("the ").split(" (")[0])
    plain = plain.encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", plain).strip("-")


def read_table(path: Path = TABLE) -> list[Country]:
    rows: list[Country] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 5 or cells[4] not in ("yes", "no"):
            raise ValueError(f"{path}:{number}: expected 5 tab-separated cells ending in yes/no")
        name, region, capitals, decoys, mc = cells
        rows.append(Country(name, region, tuple(capitals.split("|")),
                            tuple(d for d in decoys.split("|") if d), mc == "yes"))
    capitals_anywhere = {c for row in rows for c in row.capitals}
    for row in rows:
        clash = set(row.decoys) & capitals_anywhere
        if clash:
            raise ValueError(f"{path}: decoy(s) {sorted(clash)} of {row.name} are a capital")
    return rows


def distractors(rng: random.Random, country: Country, rows: list[Country]) -> list[str]:
    decoys = rng.sample(country.decoys, min(2, len(country.decoys)))
    pool = sorted({r.capitals[0] for r in rows if r.region == country.region and r is not country} - set(decoys))
    return decoys + rng.sample(pool, N_CHOICES - 1 - len(decoys))


def build() -> str:
    """The full text of questions.jsonl."""
    rows = read_table()
    rng = random.Random(SEED)
    lines: list[str] = []
    for kind in ("mc", "short"):
        for country in rows:
            if kind == "mc" and not country.mc:
                continue
            q: dict[str, object] = {
                "id": f"{kind}-{slug(country.name)}",
                "kind": kind,
                "text": f"What is the capital of {country.name}?",
            }
            if kind == "mc":
                choices = [country.capitals[0], *distractors(rng, country, rows)]
                rng.shuffle(choices)
                q["choices"] = choices
                q["answer"] = choices.index(country.capitals[0])
            else:
                q["aliases"] = list(country.capitals)
            q["subject"] = "capitals"
            q["tags"] = [f"region:{country.region.lower()}"]
            lines.append(json.dumps(q, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
