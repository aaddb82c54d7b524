"""Key texts taken out of a block of bytes: all at once (ASCII) or one by one (other UTF-8), as the plain
reference decodes each span."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.keys import _span_texts, key_codes


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(st.text(max_size=8), st.text(alphabet="abc019 ,", max_size=8), st.none()), max_size=30))
def test_span_texts_decode_each_span_as_the_plain_reference(texts):
    data, spans = bytearray(), []
    for text in texts:
        if text is None:
            spans.append((-1, -1))
            continue
        raw = text.encode("utf-8")
        spans.append((len(data), len(data) + len(raw)))
        data += raw + b","
    data = np.frombuffer(bytes(data), dtype=np.uint8)
    spans = np.array(spans, dtype=np.int64).reshape(-1, 2)
    expected = tuple("" if text is None else text for text in texts)
    assert _span_texts(data, spans) == expected
    codes, names = key_codes(data, spans)
    assert [names[code] for code in codes] == list(expected)
