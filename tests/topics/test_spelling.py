"""Optional spell-correction: within the topic, deterministic, acronyms left alone."""
from topics.normalise import normalise_query
from topics.spelling import correct_word, spell_correct, topic_vocabulary

STATEMENT = normalise_query("You want to learn about COVID-19 vaccine side effects in the USA.")


def test_typos_are_corrected_to_words_the_topic_uses():
    support = topic_vocabulary([STATEMENT], [("vaccine trials", 1)])
    assert spell_correct("covid vacine efects", support) == "covid vaccine effects"


def test_words_of_other_answers_need_two_people():
    one = topic_vocabulary([], [("diabetes diet", 1), ("diabetis diet", 1)])
    assert correct_word("diabetis", one) == "diabetis"  # one person each: no verdict
    two = topic_vocabulary([], [("diabetes diet", 2), ("diabetis diet", 1)])
    assert correct_word("diabetis", two) == "diabetes"


def test_english_words_acronyms_numbers_and_topic_words_are_left_alone():
    support = topic_vocabulary(["the us fda in vitro fibre fire"], [("fibre optic", 5)])
    for word in ("fire", "usa", "fda", "ivf", "bm25", "2019", "vitro", "fibre"):
        assert correct_word(word, support) == word
    # "fibre" is not in the English list, but it is the topic's own word
    assert spell_correct("", support) == ""


def test_no_dictionary_only_corrections():
    # a one-edit English corrector would make these "us", "nitro", "crypt"
    for word in ("usa", "vitro", "crypto", "gaulle"):
        assert correct_word(word, topic_vocabulary([])) == word


def test_choice_is_deterministic():
    # "abcx" is one edit from both; equal support: the smaller word wins every time
    support = topic_vocabulary([], [("abcd", 3), ("abce", 3)])
    assert {correct_word("abcx", support) for _ in range(5)} == {"abcd"}
    support = topic_vocabulary([], [("abcd", 3), ("abce", 4)])
    assert correct_word("abcx", support) == "abce"


def test_a_long_hostile_query_keeps_every_word():
    support = topic_vocabulary(["receive"])
    query = " ".join(["qwertyuiopasdfghjklzxcvbnmqwer"] * 50 + ["recieve"] * 50)
    out = spell_correct(query, support).split()
    assert len(out) == 100
    assert set(out[:50]) == {"qwertyuiopasdfghjklzxcvbnmqwer"} and set(out[50:]) == {"receive"}


def test_spelling_imports_no_django():
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, topics.spelling; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parents[2], env={"PATH": ""})
