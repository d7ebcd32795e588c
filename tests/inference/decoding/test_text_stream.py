"""UTF-8-safe streaming and stop strings, without a model: bytes in, text pieces out."""

from hypothesis import given
from hypothesis import strategies as st

from inference.decoding.stopping import StopStringMatcher
from inference.text import Utf8Stream, _decode_with_byte_escapes, _unicode_to_byte


def test_unicode_to_byte_table_covers_every_byte_once():
    table = _unicode_to_byte()
    assert sorted(table.values()) == list(range(256))
    assert table["Ġ"] == ord(" ")  # byte-level BPE writes a space as Ġ (U+0120)
    assert table["A"] == ord("A")


def test_partial_character_waits_for_the_rest():
    stream = Utf8Stream()
    euro = "€".encode()  # 3 bytes
    assert stream.push(euro[:1]) == ""
    assert stream.push(euro[1:2]) == ""
    assert stream.push(euro[2:] + b"!") == "€!"
    assert stream.finish() == ""


@given(st.lists(st.binary(max_size=6), max_size=12))
def test_pieces_concatenate_to_the_whole_decoded_bytes(chunks):
    stream = Utf8Stream()
    pieces = [stream.push(chunk) for chunk in chunks] + [stream.finish()]
    assert "".join(pieces) == b"".join(chunks).decode("utf-8", errors="replace")


@given(st.lists(st.text(max_size=5), max_size=12), st.lists(st.text(min_size=1, max_size=4), max_size=3))
def test_stop_strings_never_appear_and_nothing_else_is_lost(pieces, stops):
    matcher = StopStringMatcher(tuple(stops))
    released, stopped = [], None
    for piece in pieces:
        text, stopped = matcher.push(piece)
        released.append(text)
        if stopped:
            break
    if not stopped:
        released.append(matcher.finish())
    whole = "".join(pieces)
    out = "".join(released)
    if stopped:
        cut = min(whole.find(s) for s in stops if s in whole)
        assert out == whole[:cut]
        assert stopped in stops
    else:
        assert out == whole
        assert not any(s in whole for s in stops)


def test_stop_string_across_pieces_is_held_then_dropped():
    matcher = StopStringMatcher(("</json>",))
    assert matcher.push('{"a": 1}<') == ('{"a": 1}', None)
    assert matcher.push("/js") == ("", None)
    assert matcher.push("on> trailing") == ("", "</json>")


def test_held_prefix_is_released_when_it_turns_out_not_to_be_a_stop():
    matcher = StopStringMatcher(("STOP",))
    assert matcher.push("ST") == ("", None)
    assert matcher.push("AR") == ("STAR", None)


def test_byte_escapes_for_partial_characters():
    assert _decode_with_byte_escapes("é".encode() + b"\xf0\x9f") == "é<0xF0><0x9F>"
