"""The evaluation's own readers (assessors' labels, the TREC 2010 crowd file, intent
scores, system scores) open files through common.fileio like every importer: gzip is read,
a fake .gz and bytes that are not UTF-8 are refused naming the file and the line, and the
file is closed when the read ends."""
import gc
import gzip
import warnings

import pandas as pd
import pytest

from common.fileio import InputError
from evaluation import agreement, ranking, variance

READERS = {
    "labels": ("labels.tsv", "1 0 d1 a 1\n1 0 d1 b 0\n1 0 d2 a 1\n",
               agreement.read_labels_tsv, 3),
    "trec rf10 crowd": ("crowd.tsv", "topicID\tworkerID\tdocID\tgold\tlabel\n"
                                     "20542\tw1\tclueweb09-en0000-00-00000\t1\t1\n"
                                     "20542\tw2\tclueweb09-en0000-00-00000\t1\t-2\n",
                        agreement.read_trec_rf10_crowd, 1),
    "intent scores": ("s.tsv", "s1 q1 i1 0.5\ns1 q1 i2 0.25\n",
                      variance.read_intent_scores, 2),
    "system scores": ("m.tsv", "s1 0.5\ns2 0.25\n", ranking.read_scores, 2),
    "evaluate json": ("e.json", '{"runs": {"s1": {"mean": {"P@10": 0.5}}, '
                                '"s2": {"mean": {"P@10": 0.25}}}}',
                      ranking.read_scores, 2),
}


@pytest.mark.parametrize("name", READERS)
def test_gzip_is_read_as_the_plain_file(tmp_path, name):
    fname, text, read, size = READERS[name]
    plain = tmp_path / fname
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / (fname + ".gz")
    packed.write_bytes(gzip.compress(text.encode()))
    frame = read(packed)
    assert len(frame) == size
    pd.testing.assert_frame_equal(frame, read(plain))


@pytest.mark.parametrize("name", READERS)
def test_bytes_not_utf8_are_refused_with_their_line(tmp_path, name):
    fname, text, read, _ = READERS[name]
    p = tmp_path / fname
    lines = text.encode().split(b"\n")
    lines[1 if len(lines) > 2 else 0] = lines[1 if len(lines) > 2 else 0] + b" \xe9"
    p.write_bytes(b"\n".join(lines))
    line = 2 if len(lines) > 2 else 1
    with pytest.raises(InputError, match=rf"{fname}, line {line}: not valid utf-8"):
        read(p)


@pytest.mark.parametrize("name", READERS)
def test_a_fake_gzip_file_is_refused(tmp_path, name):
    fname, text, read, _ = READERS[name]
    p = tmp_path / (fname + ".gz")
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="the name ends in .gz but the file is not gzip"):
        read(p)


@pytest.mark.parametrize("name", READERS)
def test_the_file_is_closed_after_the_read(tmp_path, name):
    fname, text, read, _ = READERS[name]
    p = tmp_path / fname
    p.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        read(p)
        gc.collect()
