"""quoting.py: the one check a name gets and the one quoting per language, each read back by that
language's own reader (bash, PyYAML, tomllib), and the launch layout's words and here-documents."""

from __future__ import annotations

import subprocess
import tomllib

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from shardbudget.decide.launch.layout import heredoc, shell_word, to_yaml
from shardbudget.errors import CatalogError, ShardbudgetError
from shardbudget.quoting import check_name, one_line, shell_quote, terminal, yaml_quote

ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # what a str may hold, UTF-8


def _bash_echo(script: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, env={"PATH": "/usr/bin:/bin", **(env or {})}, check=True
    )
    return out.stdout.decode()


@pytest.mark.parametrize(
    "text,escaped",
    [
        ("plain name", "plain name"),
        ("a\nb", "a\\nb"),
        ("\x1b[31m", "\\x1b[31m"),
        ("\x07\r\t", "\\x07\\r\\t"),
        ("line\u2028sep", "line\\u2028sep"),
        ("nel\x85", "nel\\x85"),
        ("bidi\u202e", "bidi\\u202e"),
        ("bad\udcff", "bad\\udcff"),
        ("µs – ok é", "µs – ok é"),
    ],
)
def test_one_line_escapes_what_is_not_printable(text, escaped):
    assert one_line(text) == escaped
    assert one_line(text).isprintable()


def test_terminal_keeps_the_layout_and_escapes_the_rest():
    assert terminal("a\n\tb\x1b]0;title\x07") == "a\n\tb\\x1b]0;title\\x07"
    assert terminal("ok\n") == "ok\n"


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_one_line_is_always_one_printable_line(text):
    assert one_line(text).isprintable() and "\n" not in one_line(text)
    assert all(c.isprintable() or c in "\n\t" for c in terminal(text))


@pytest.mark.parametrize(
    "name,fault",
    [
        ("x\ntouch PWNED", "control character '\\n'"),
        ("m\x1b[31m", "control character '\\x1b'"),
        ("bad\udcff", "not valid UTF-8"),
        ("zw\u200bj", "control character '\\u200b'"),
        ("ls\u2028", "\\u2028"),
    ],
)
def test_check_name_refuses_in_one_line(name, fault):
    with pytest.raises(CatalogError) as err:
        check_name(name, "model name", error=CatalogError)
    assert fault in str(err.value) and str(err.value).isprintable()


def test_check_name_takes_metacharacters_and_refuses_an_option_only_as_an_argument():
    for ok in ("meta-llama/Llama-3.1-8B", "x$(touch P)`id`'\"$HOME #;&|*?~{a,b} é😀", "-leading"):
        assert check_name(ok, "model") == ok
    with pytest.raises(ShardbudgetError, match="starts with '-'"):
        check_name("--trust-remote-code", "model", argument=True)
    with pytest.raises(ShardbudgetError, match="must be text"):
        check_name(b"x", "model")


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_yaml_quote_reads_back_as_written(text):
    quoted = yaml_quote(text)
    assert quoted.isascii() and "\n" not in quoted
    assert yaml.safe_load(quoted) == text
    assert yaml.safe_load(f"key: {quoted}  # comment") == {"key": text}


def test_yaml_quote_is_json_for_ascii():
    assert yaml_quote('a "b" \\ c') == '"a \\"b\\" \\\\ c"' and yaml_quote("é") == '"\\u00e9"'
    assert yaml_quote("😀") == '"\\U0001f600"'  # JSON's surrogate pair would read back as two characters


def test_to_yaml_quotes_odd_keys_and_every_string():
    doc = {"plain": "x\n- injected: true", "odd key: x": ["$(id)", None, 3, True], "yes": {}}
    assert yaml.safe_load(to_yaml(doc)) == doc


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT.filter(lambda s: "\x00" not in s), min_size=1, max_size=4))
def test_shell_quote_runs_as_one_word_each(words):
    script = "printf '%s\\0' " + " ".join(shell_quote(w) for w in words)
    assert _bash_echo(script).split("\0")[:-1] == words


def test_shell_word_expands_the_placeholders_alone():
    env = {"NODE0_IP": "10.0.0.1", "NODE1_IP": "10.0.0.2", "LWS_LEADER_ADDRESS": "lead", "HOME": "/root"}
    cases = {
        "$NODE0_IP:5000": "10.0.0.1:5000",
        "$NODE0_IPx": "10.0.0.1x",
        "http://$NODE1_IP:8000": "http://10.0.0.2:8000",
        "$NODE0_IP:4,$NODE1_IP:4": "10.0.0.1:4,10.0.0.2:4",
        "a b $NODE1_IP": "a b 10.0.0.2",
        "$HOME": "$HOME",
        "x$(touch P)": "x$(touch P)",
        "$NODE0IP": "$NODE0IP",
        "": "",
    }
    for word, value in cases.items():
        assert _bash_echo(f"printf '%s' {shell_word(word)}", env) == value, word
    assert _bash_echo(f"printf '%s' {shell_word('$NODE0_IP:1', {0: 'LWS_LEADER_ADDRESS'})}", env) == "lead:1"
    assert shell_word("$NODE0_IP:5000") == "$NODE0_IP:5000" and shell_word("m-1.5/x") == "m-1.5/x"  # as printed before


def test_heredoc_writes_its_body_as_is_and_fills_in_only_the_addresses(tmp_path):
    body = 'a: "$NODE0_IP:8000"\nb: "$NODE10_IP:1"\nc: "$(touch P)`id`$HOME\\\\n $NODE1_IPS"\nEOF\n'
    script = heredoc("f.yaml", body)
    assert script.startswith("cat > f.yaml <<'EOF_'")  # a body line equal to the delimiter would end it
    env = {"NODE0_IP": "10.0.0.1", "NODE10_IP": "10.0.0.11", "NODE1_IP": "&&"}
    subprocess.run(["bash", "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", **env}, check=True)
    assert (tmp_path / "f.yaml").read_text() == body.replace("$NODE0_IP", "10.0.0.1").replace(
        "$NODE10_IP", "10.0.0.11"
    ).replace("$NODE1_IPS", "&&S")
    assert not (tmp_path / "P").exists()
    assert heredoc("g.yaml", "x: 1\n") == "cat > g.yaml <<'EOF'\nx: 1\nEOF"  # nothing to fill: as before


def test_a_toml_comment_from_one_line_stays_a_comment():
    name = "x\n[nccl]\nversion = '9'"
    assert tomllib.loads(f"# {one_line(name)}\n[a]\nb = 1\n") == {"a": {"b": 1}}
