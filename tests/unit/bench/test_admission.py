"""How many contexts ran at once, counted from the streams' own first and last token times."""

from ds41f.bench import admission


def _r(first, last):
    return {"t_first": first, "t_last": last}


def test_four_streams_that_overlap_count_four_and_a_waiting_one_does_not():
    assert admission.streaming_at_once([_r(0, 10), _r(1, 11), _r(2, 9), _r(3, 12)]) == 4
    # two slots: the third and fourth start only when the first two have ended
    assert admission.streaming_at_once([_r(0, 5), _r(0.5, 5.5), _r(5, 9), _r(5.5, 10)]) == 2


def test_a_stream_that_starts_as_another_ends_is_not_overlapping():
    assert admission.streaming_at_once([_r(0, 5), _r(5, 9)]) == 1
    assert admission.streaming_at_once([]) == 0
