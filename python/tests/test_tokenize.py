# tokenize/detokenize round trips: emoji, invalid UTF-8, special tokens; ordo.Tokenizer alone.
import ordo
from conftest import STORIES


def test_round_trip_text_and_emoji(stories):
    for text in ["Once upon a time", "héllo wörld 日本語", "emoji 🦊🎉 and 👩‍👩‍👧", "spaces   kept  inside"]:
        ids = stories.tokenize(text, add_special=False)
        assert stories.detokenize(ids) == text
        with_bos = stories.tokenize(text)
        assert with_bos[0] == stories.info["bos_id"] and with_bos[1:] == ids


def test_invalid_utf8(stories):
    # Invalid input bytes are read as U+FFFD (as sentencepiece does); byte-fallback ids that do not
    # form UTF-8 decode to U+FFFD instead of raising, and ones that do form a character decode to it.
    assert stories.tokenize(b"ok \xff\xfe", add_special=False) == stories.tokenize("ok \ufffd\ufffd", add_special=False)
    byte = lambda b: 3 + b  # <0x00> is id 3
    assert stories.tokenizer.id_to_piece(byte(0xC3)) == "<0xC3>"
    assert stories.detokenize([byte(0xC3)]) == "\ufffd"
    assert stories.detokenize([byte(b) for b in "🦊".encode()]) == "🦊"
    assert stories.detokenize([byte(0xF0), byte(0x9F)] + stories.tokenize("fox", add_special=False)).endswith("fox")


def test_special_tokens(stories):
    bos, eos = stories.info["bos_id"], stories.info["eos_id"]
    tok = stories.tokenizer
    assert tok.bos_id == bos and tok.eos_id == eos
    ids = stories.tokenize("The end.", add_special=False)
    assert stories.detokenize([bos] + ids + [eos]).strip().endswith("The end.") or "The end." in stories.detokenize(
        [bos] + ids + [eos])
    assert tok.detokenize([bos] + ids + [eos], skip_special=True) == "The end."


def test_tokenizer_only(stories):
    t = ordo.Tokenizer(str(STORIES))
    assert t.vocab_size == stories.info["vocab"]
    text = "Lily saw a cat 🐱."
    assert t.tokenize(text) == stories.tokenize(text)
    assert t.detokenize(t.tokenize(text, add_special=False)) == text
