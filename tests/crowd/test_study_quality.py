"""The pure answer rules and assignment choice, with hand-computed values."""
import subprocess
import sys
from pathlib import Path

from hypothesis import given, strategies as st

from crowd.assignment import choose_statements, order_items
from crowd.quality import (
    COPY, DUPLICATE, EMPTY, TOO_LONG, attention_passed, contains_run, gold_passed, is_copy,
    is_too_fast, jaccard, query_problems,
)

ROOT = Path(__file__).resolve().parents[2]
STATEMENT = "You are planning a trip to Melbourne and want to know the cost of living there."
# normalised tokens: you are planning a trip to melbourne and want to know the cost of
# living there -> 16 tokens, 15 distinct ("to" twice)
RULES = dict(max_chars=200, jaccard_threshold=0.8, copy_min_tokens=6)


def problems(raw, statement=STATEMENT, previous=()):
    return query_problems(raw, statement, previous=previous, **RULES)


def test_rules_import_no_django():
    code = "import sys, crowd.quality, crowd.assignment; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PATH": ""})


def test_jaccard_hand_computed():
    assert jaccard("abc", "bcd") == 2 / 4
    assert jaccard([], []) == 0.0
    assert jaccard(["x"], ["x", "x"]) == 1.0


def test_contains_run():
    assert contains_run("a b c d".split(), "b c".split())
    assert not contains_run("a b c d".split(), "b d".split())
    assert not contains_run("a b".split(), "a b c".split())
    assert not contains_run("a b".split(), [])


def test_ordinary_queries_pass():
    assert problems("cost of living melbourne") == []  # 4/15 shared, not one run
    assert problems("cost of living there") == []  # a run, but 4 < 6 tokens


def test_empty_and_punctuation_only():
    assert problems("") == [EMPTY]
    assert problems("   ?! ...  ") == [EMPTY]


def test_length_limit_is_inclusive():
    assert problems("x" * 200) == []
    assert problems("x" * 201) == [TOO_LONG]


def test_copies_are_refused():
    assert problems(STATEMENT) == [COPY]  # exact
    assert problems(STATEMENT.upper().replace(" ", "  ")) == [COPY]  # equal once normalised
    assert problems("want to know the cost of living there") == [COPY]  # 8-token run
    assert problems("planning a trip to melbourne") == []  # 5-token run: short phrase
    reordered = "there living of cost the know want and melbourne to trip a planning are you"
    assert problems(reordered) == [COPY]  # Jaccard 15/15


def test_short_statement_typed_as_query_is_not_a_copy():
    # CACM query 1's statement is two words; typing them is a plausible query
    assert query_problems("Parallel algorithms", "Parallel algorithms", **RULES) == []
    assert query_problems("parallel algorithms", "Parallel Algorithms.", **RULES) == []
    # five words of a five-word statement: still under copy_min_tokens (6)
    assert query_problems("a b c d e", "a b c d e", **RULES) == []
    # a long statement copied whole, or its long passages, is still refused
    six = "parallel algorithms for sorting large arrays"
    assert query_problems(six, six, **RULES) == [COPY]
    assert query_problems(STATEMENT, STATEMENT, **RULES) == [COPY]


def test_near_copy_threshold_hand_computed():
    s = "you are planning a trip to melbourne and want to know the cost of living there"
    # drop "you", "are", "and" and reorder: 12 of 15 distinct tokens -> 12/15 = 0.8
    twelve = "there living of cost the know want melbourne to trip a planning"
    assert jaccard(twelve.split(), s.split()) == 12 / 15
    assert is_copy(twelve, s, jaccard_threshold=0.8, copy_min_tokens=6)
    eleven = "there living of cost the know want melbourne trip a planning"  # 11/15
    assert jaccard(eleven.split(), s.split()) == 11 / 15
    assert not is_copy(eleven, s, jaccard_threshold=0.8, copy_min_tokens=6)


def test_duplicate_of_own_earlier_answer():
    assert problems("Cost of living, Melbourne!", previous=["cost of living melbourne"]) == [DUPLICATE]
    assert problems("cost of living sydney", previous=["cost of living melbourne"]) == []


def test_attention_check_has_no_copy_rule():
    assert query_problems("purple", "", **RULES) == []


def test_too_fast():
    assert is_too_fast(4.9, 5.0)
    assert not is_too_fast(5.0, 5.0)
    assert is_too_fast(None, 5.0)  # posted without the item ever being shown
    assert is_too_fast(None, 0.0)


def test_attention_and_gold():
    assert attention_passed(" Purple. ", "purple")
    assert not attention_passed("purple please", "purple")
    assert not attention_passed("", "purple")
    assert not attention_passed("anything", "")
    # {melbourne, living, costs} vs {cost, of, living, melbourne}: 2/5 = 0.4
    assert not gold_passed("melbourne living costs", "cost of living melbourne")
    # {cost, of, living, in, melbourne} vs {cost, of, living, melbourne}: 4/5 = 0.8
    assert gold_passed("cost of living in melbourne", "melbourne rent\ncost of living melbourne")


def test_choose_fewest_first_within_quota():
    counts = {"a": 0, "b": 2, "c": 1, "d": 5}
    assert choose_statements(counts, quota=5, k=2, seed=1) == ["a", "c"]
    assert choose_statements(counts, quota=5, k=2, seed=1, exclude={"a"}) == ["c", "b"]
    assert choose_statements(counts, quota=5, k=10, seed=1) == ["a", "c", "b"]  # d is full
    assert choose_statements(counts, quota=1, k=3, seed=1) == ["a"]
    assert choose_statements(counts, quota=5, k=0, seed=1) == []


def test_choose_ties_are_seeded():
    counts = {str(i): 0 for i in range(20)}
    first = choose_statements(counts, quota=1, k=5, seed=7)
    assert first == choose_statements(dict(reversed(list(counts.items()))), quota=1, k=5, seed=7)
    picks = {tuple(choose_statements(counts, quota=1, k=5, seed=s)) for s in range(10)}
    assert len(picks) > 1


def test_order_items_is_a_seeded_permutation():
    ids = [str(i) for i in range(10)]
    a = order_items(ids, 42)
    assert sorted(a) == sorted(ids)
    assert a == order_items(list(reversed(ids)), 42)
    assert any(order_items(ids, s) != a for s in range(5))


def test_attention_check_is_never_first():
    ids = [str(i) for i in range(6)]
    firsts = set()
    for seed in range(200):
        order = order_items(ids, seed, not_first={"0"})
        assert sorted(order) == ids
        assert order[0] != "0"
        firsts.add(order[0])
    assert firsts == set(ids) - {"0"}  # every other item can still open
    # two checks: neither opens; only checks: nothing to swap with
    assert all(order_items(ids, s, not_first={"0", "1"})[0] not in {"0", "1"} for s in range(50))
    assert sorted(order_items(["a"], 3, not_first={"a"})) == ["a"]


@given(
    counts=st.dictionaries(st.text("abcdef", min_size=1, max_size=3), st.integers(0, 9), max_size=30),
    quota=st.integers(1, 10), k=st.integers(0, 12), seed=st.integers(0, 2**32),
)
def test_choose_properties(counts, quota, k, seed):
    chosen = choose_statements(counts, quota=quota, k=k, seed=seed)
    eligible = [i for i, n in counts.items() if n < quota]
    assert len(chosen) == len(set(chosen)) == min(k, len(eligible))
    assert all(counts[i] < quota for i in chosen)
    rest = [counts[i] for i in eligible if i not in chosen]
    if chosen and rest:
        assert max(counts[i] for i in chosen) <= min(rest)
