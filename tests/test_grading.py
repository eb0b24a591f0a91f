from probe.grading import mc_choice, normalize_answer, parse_label, short_correct
from probe.prompts import answer_prompt
from probe.suite import DEFAULT_VARIANTS, Question

MC = Question(id="q", kind="mc", text="Capital of France?", choices=("Lyon", "Paris", "Nice", "Lille"), answer=1)
SHORT = Question(id="s", kind="short", text="How many?", aliases=("1000", "one thousand"))


def test_normalize_numbers_articles_punctuation() -> None:
    assert normalize_answer("1,000") == "1000"
    assert normalize_answer("one thousand") == "1000"
    assert normalize_answer("The  Paris.") == "paris"
    assert normalize_answer("12.0") == "12"
    assert normalize_answer("twenty-one") == "21"


def test_parse_label_forms() -> None:
    labels = ("A", "B", "C", "D")
    for text, want in [("A", "A"), ("(B)", "B"), ("**C**", "C"), ("Answer: D", "D"), ("b.", "B"),
                       (" C) Nice", "C"), ("Paris", None), ("E", None), ("", None)]:
        assert parse_label(text, labels) == want, text


def test_mc_choice_by_label_and_text_and_shuffle() -> None:
    plain, _, shuffled = DEFAULT_VARIANTS
    p = answer_prompt(MC, plain)
    assert mc_choice("B", MC, p) == 1
    assert mc_choice("paris", MC, p) == 1
    assert mc_choice("Marseille", MC, p) is None
    s = answer_prompt(MC, shuffled)
    label = s.label_of_choice(1)
    assert mc_choice(label, MC, s) == 1
    assert s.labels[s.order.index(1)] == label


def test_short_correct() -> None:
    assert short_correct("1,000", SHORT)
    assert short_correct("One thousand.", SHORT)
    assert not short_correct("100", SHORT)
    assert not short_correct("", SHORT)
