"""The one strict reader of the data files (issue 32): every data file (catalog, engine presets, kernel
table, model families) refuses a key its reader does not know, naming the file, the table and the
nearest known key. The catalog's, presets' and kernels' own cases are in test_catalog.py,
test_engines.py and test_kernels.py; here the reader itself and the model-family file."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

import pytest

from shardbudget.datacache import read_builtin
from shardbudget.datafile import Table, check_name, find, key, read_record, record_keys
from shardbudget.errors import CatalogError, UnknownNameError, closest
from shardbudget.model import families


@dataclass(frozen=True, kw_only=True)
class Inner:
    floor_s: float = key("floor", "seconds")
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class Outer:
    name: str
    size_bytes: float = key("size", "size")
    count: int = key("count", default=1)
    kind: str = key("kind", "choice", allowed=("a", "b"), default="a")
    inner: Inner | None = key("inner", Inner, default=None)
    source: str = key("source")


def _read(data: dict) -> Outer:
    return read_record(Outer, Table(data, "things.x", "my.toml"), name="x")


def test_a_record_is_its_tables_schema():
    o = _read({"size": "2 KiB", "source": "s", "inner": {"floor": "1.5 us", "source": "t"}, "size_basis": "why"})
    assert (o.size_bytes, o.count, o.kind, o.inner.floor_s) == (2048.0, 1, "a", 1.5e-6)
    assert record_keys(Outer) == ("size", "count", "kind", "inner", "source")


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"size": "1 B", "source": "s", "sise": "2 B"},
            "my.toml: things.x: unknown field 'sise'; did you mean 'size'?",
        ),
        ({"sise": "1 B", "source": "s"}, "my.toml: things.x: unknown field 'sise'; did you mean 'size'?"),
        (
            {"size": "1 B", "source": "s", "zzz": 1},
            "my.toml: things.x: unknown field 'zzz' (its fields: size, count, kind, inner, source)",
        ),
        ({"size": "1 B"}, "my.toml: things.x: missing field 'source'"),
        ({"size": 1024, "source": "s"}, "my.toml: things.x.size 1024 has no unit; expected e.g. 16KiB, 1 MB, 2GiB"),
        ({"size": "1 B", "count": True, "source": "s"}, "my.toml: things.x.count: expected an integer, got True"),
        ({"size": "1 B", "kind": "c", "source": "s"}, "my.toml: things.x.kind: 'c' is not one of a, b"),
        (
            {"size": "1 B", "source": "s", "inner": {"flor": "1 us", "source": "t"}},
            "my.toml: things.x.inner: unknown field 'flor'; did you mean 'floor'?",
        ),
        ({"size": "1 B", "source": "s", "inner": "no"}, "my.toml: things.x.inner: expected a table, got 'no'"),
        ({"size": "1 B", "source": "s", "size_note": 3}, "my.toml: things.x.size_note: a note ('size_note') is text"),
    ],
)
def test_what_the_reader_refuses(data, message):
    with pytest.raises(CatalogError) as err:
        _read(data)
    assert str(err.value).startswith(message)


def test_closest_compares_ignoring_case():
    assert closest("VLLM", ["vllm", "sglang"]) == ["vllm"]
    assert closest("HGX-H10", ["hgx-h100", "hgx-h200"])[0] == "hgx-h100"


@pytest.mark.parametrize("name", ["a\nb", "a\x1b[2J", "a\x00", "a\x7f", "a\u2028b", "-x", " x", "x ", ""])
def test_names_with_control_characters_or_a_leading_dash_are_refused(name):
    with pytest.raises(CatalogError, match="systems.y"):
        check_name(name, "systems.y")


def test_names_are_found_in_any_case():
    assert find("HGX-H100", {"hgx-h100": 1}) == "hgx-h100" and find("hgx-h100", ["hgx-h100"]) == "hgx-h100"
    assert find("hgx-h10", ["hgx-h100"]) is None and find(None, ["x"]) is None


# --- the model-family file (catalog/families.toml) ---------------------------------------------------


def _families_raw() -> dict:
    return tomllib.loads(read_builtin(families.WHERE))


def test_the_family_table_is_read_from_its_file():
    fams, signatures, text_only = families.read_families(_families_raw())
    assert fams == families.FAMILIES and signatures == families.SIGNATURES and text_only == families.TEXT_ONLY
    qwen2 = families.BY_MODEL_TYPE["qwen2"]
    assert (qwen2.qkv_bias, qwen2.o_bias, qwen2.windows) == (True, False, "qwen")
    assert dict(families.BY_MODEL_TYPE["gemma2"].defaults)["vocab_size"] == 256_000
    assert families.SIGNATURES[0] == ("deepseek_v32", ("kv_lora_rank", "index_topk"))


@pytest.mark.parametrize(
    "family, typo, near",
    [
        ("qwen2", "qkv_biass", "qkv_bias"),
        ("llama4", "dense_width_kee", "dense_width_key"),
        ("gemma2", "window", "windows"),
    ],
)
def test_a_misspelt_family_key_names_the_file_the_family_and_the_nearest_key(family, typo, near):
    raw = _families_raw()
    raw["families"][family][typo] = raw["families"][family].get(near, "x")
    with pytest.raises(CatalogError) as err:
        families.read_families(raw)
    assert str(err.value) == f"catalog/families.toml: families.{family}: unknown field '{typo}'; did you mean '{near}'?"


def test_a_family_value_outside_its_choices_or_a_signature_of_no_family_is_refused():
    raw = _families_raw()
    raw["families"]["llama"]["attention"] = "mqa"
    with pytest.raises(CatalogError, match=r"families.llama.attention: 'mqa' is not one of gqa, mla"):
        families.read_families(raw)
    raw = _families_raw()
    raw["signatures"][0]["family"] = "deepseek_v23"
    with pytest.raises(UnknownNameError, match=r"'deepseek_v23'; did you mean .*'deepseek_v32'"):
        families.read_families(raw)
    raw = _families_raw()
    raw["families"]["Llama"] = raw["families"]["llama"]
    with pytest.raises(CatalogError, match=r"families.Llama: the family 'llama' has this name in another case"):
        families.read_families(raw)
