"""Kimi-K2's remote tokenizer (``tokenization_kimi.TikTokenTokenizer``), minimal rewrite for offline checks.

Behaviour follows the hub file: tiktoken over ``tiktoken.model`` with Kimi's ``pat_str``, 256 special ids
(named ones from ``added_tokens_decoder``, the rest ``<|reserved_token_{id}|>``), and ``encode`` that treats
special tokens in the text as special. It is written against the slow-tokenizer base class of both
transformers 4.x (``PreTrainedTokenizer``) and 5.x (the same name, now the Python backend).
"""

from __future__ import annotations

import os
from shutil import copyfile

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from transformers import PreTrainedTokenizer

VOCAB_FILES_NAMES = {"vocab_file": "tiktoken.model"}


def _bytes_to_unicode() -> dict[int, str]:
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class TikTokenTokenizer(PreTrainedTokenizer):
    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012 (the transformers attribute)

    num_reserved_special_tokens = 256

    pat_str = "|".join(
        [
            r"""[\p{Han}]+""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    )

    def __init__(
        self,
        vocab_file,
        bos_token="[BOS]",
        eos_token="[EOS]",
        unk_token=None,
        pad_token=None,
        additional_special_tokens=None,
        added_tokens_decoder: dict | None = None,
        **kwargs,
    ):
        assert os.path.isfile(vocab_file), vocab_file
        if additional_special_tokens is None:
            additional_special_tokens = [
                "<|im_end|>",
                "<|im_user|>",
                "<|im_assistant|>",
                "<|start_header_id|>",
                "<|end_header_id|>",
                "[EOT]",
                "<|im_system|>",
                "<|im_middle|>",
            ]
        named = {int(i): str(getattr(t, "content", t)) for i, t in (added_tokens_decoder or {}).items()}

        self.vocab_file = vocab_file
        mergeable_ranks = load_tiktoken_bpe(vocab_file)
        # With the real tiktoken.model the specials start right after the ranks (163584); placing them from
        # added_tokens_decoder gives the same ids and keeps them when a different vocabulary stands in.
        num_base_tokens = min(named) if named else len(mergeable_ranks)
        self.special_tokens = {
            named.get(i, f"<|reserved_token_{i}|>"): i
            for i in range(num_base_tokens, num_base_tokens + self.num_reserved_special_tokens)
        }
        self.model = tiktoken.Encoding(
            name=os.path.basename(vocab_file),
            pat_str=self.pat_str,
            mergeable_ranks=mergeable_ranks,
            special_tokens=self.special_tokens,
        )
        self.n_words = num_base_tokens + self.num_reserved_special_tokens
        self.bos_id = self.special_tokens[str(bos_token)]
        self.eos_id = self.special_tokens[str(eos_token)]
        self.pad_id = self.special_tokens.get(str(pad_token), -1)
        self.unk_id = self.special_tokens.get(str(unk_token), -1)

        self.byte_encoder = _bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.decoder = {
            rank: "".join(self.byte_encoder[b] for b in token) for token, rank in mergeable_ranks.items()
        }
        self.decoder.update({i: s for s, i in self.special_tokens.items()})
        self.encoder = {s: i for i, s in self.decoder.items()}

        super().__init__(
            bos_token=bos_token,
            eos_token=eos_token,
            unk_token=unk_token,
            pad_token=pad_token,
            additional_special_tokens=additional_special_tokens,
            added_tokens_decoder=added_tokens_decoder,
            **kwargs,
        )
        self.all_special_ids_set = set(self.all_special_ids)

    def encode(self, text: str, allow_special_tokens: bool = True, **kwargs) -> list[int]:
        """tiktoken ids for ``text``; with any further argument, the base class's encode (as upstream)."""
        if len(kwargs) > 0:
            return super().encode(text, **kwargs)
        assert type(text) is str
        if allow_special_tokens:
            return self.model.encode(text, allowed_special="all")
        return self.model.encode(text, disallowed_special=())

    def decode(self, token_ids: int | list[int], **kwargs) -> str:
        if len(kwargs) > 0:
            return super().decode(token_ids, **kwargs)
        if type(token_ids) is int:
            token_ids = [token_ids]
        return self.model.decode(list(token_ids))

    @property
    def vocab_size(self) -> int:
        return self.n_words

    def get_vocab(self) -> dict[str, int]:
        return dict(self.encoder)

    def _tokenize(self, text: str, **kwargs) -> list[str]:
        return [self.decoder[t] for t in self.encode(text)]

    def _convert_token_to_id(self, token: str) -> int:
        return self.encoder.get(token, self.unk_id)

    def _convert_id_to_token(self, index: int) -> str:
        return self.decoder.get(index)

    @staticmethod
    def clean_up_tokenization(out_string: str) -> str:
        return out_string

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        text = "".join(tokens)
        return bytearray([self.byte_decoder[c] for c in text]).decode("utf-8", "replace")

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str]:
        if not os.path.isdir(save_directory):
            raise ValueError(f"vocabulary path ({save_directory}) should be a directory")
        out_vocab_file = os.path.join(
            save_directory,
            (filename_prefix + "-" if filename_prefix else "") + VOCAB_FILES_NAMES["vocab_file"],
        )
        if os.path.abspath(self.vocab_file) != os.path.abspath(out_vocab_file) and os.path.isfile(
            self.vocab_file
        ):
            copyfile(self.vocab_file, out_vocab_file)
        return (out_vocab_file,)
