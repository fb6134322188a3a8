"""The input boundary (issue 15): every hostile file is a one-line SpecError, fast, in bounded memory."""

from __future__ import annotations

import json
import os

import pytest

import gpusizer
from gpusizer import cli
from gpusizer.base import fields, inputs, redact
from gpusizer.facts import registry
from tests.conftest import EXAMPLE_SPECS, REPO

HF = REPO / "tests/data"
SPEC = "name: chat\nmodel: {name: llama-3.1-8b}\n"


def _spec_error(path, capsys) -> str:
    """Run `gpusizer plan PATH`: it must exit 2 with one `gpusizer: error:` message and no traceback."""
    assert cli.main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusizer: error:") and "Traceback" not in err
    return err


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "directory"])
def test_only_regular_files_are_read(special, tmp_path, capsys):
    path = special
    if special == "fifo":
        path = tmp_path / "spec.yaml"
        os.mkfifo(path)  # no writer: a blocking open would hang forever
    elif special == "directory":
        path = tmp_path
    assert "not a regular file" in _spec_error(path, capsys)


def test_a_file_over_the_size_cap_is_refused_before_parsing(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text(SPEC + "# " + "x" * inputs.MAX_INPUT_BYTES + "\n")
    assert "byte limit" in _spec_error(path, capsys)


def test_non_utf8_is_named_with_line_and_column(tmp_path, capsys):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(SPEC.encode() + b"growth: 1\n# caf\xe9\n")
    err = _spec_error(path, capsys)
    assert "not UTF-8" in err and "byte 0xe9 at line 4, column 6" in err


def test_a_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + SPEC.encode())
    assert gpusizer.load_spec(path).name == "chat"


def test_duplicate_keys_are_refused_not_last_wins(tmp_path, capsys):
    # The case: a 70B model sized as 8B because the later key silently won.
    path = tmp_path / "dup.yaml"
    path.write_text("name: chat\nmodel: {name: llama-3.1-70b}\nmodel: {name: llama-3.1-8b}\n")
    err = _spec_error(path, capsys)
    assert "duplicate key 'model'" in err and "line 3" in err


def test_deep_nesting_is_refused_without_recursion(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text("name: chat\nmodel: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert f"nesting deeper than {inputs.MAX_DEPTH}" in _spec_error(path, capsys)


def test_an_alias_bomb_is_measured_not_expanded(tmp_path, capsys):
    # Nine levels of nine aliases: 9**9 = 387M values if expanded ("billion laughs").
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert "expands to more than" in _spec_error(path, capsys)


def test_too_many_aliases_are_refused():
    doc = "x: &x 1\n" + "".join(f"k{i}: *x\n" for i in range(inputs.MAX_ALIASES + 1))
    with pytest.raises(gpusizer.SpecError) as e:
        inputs.load_yaml(doc, "doc")
    assert "aliases" in str(e.value)


def test_a_recursive_alias_is_refused():
    with pytest.raises(gpusizer.SpecError) as e:
        inputs.load_yaml("a: &a [1, *a]\n", "doc")
    assert "enclosing anchor" in str(e.value)


def test_a_few_aliases_still_work():
    doc = inputs.load_yaml("base: &p {purchase: spot}\nplacement: *p\n", "doc")
    assert doc["placement"] == {"purchase": "spot"}


def test_errors_quote_at_most_80_characters_of_a_value():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({"name": "chat", "model": {"name": "llama-3.1-8b"}, "growth": "9" * 1_000_000})
    assert len(str(e.value)) < 400


def test_ten_thousand_bad_values_make_one_short_message():
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({"name": "chat", "model": {"name": "llama-3.1-8b"}, "placement": {"regions": [1] * 10**4}})
    assert "more problem(s)" in str(e.value) and len(str(e.value)) < 2000


@pytest.mark.parametrize(
    "patch, field",
    [
        # YAML `true` is not 1 ms
        ({"inference": {"targets": {"ttft_ms": True}}}, "inference.targets.ttft_ms"),
        ({"inference": {"batch_size": True}}, "inference.batch_size"),
        # .inf / 1e308 overflowed downstream
        ({"growth": float("inf")}, "growth"),
        ({"model": {"params_b": 1e308, "layers": 32, "hidden_size": 4096, "attention_heads": 32}}, "model.params_b"),
        ({"inference": {"targets": {"tokens_per_second": float("nan")}}}, "inference.targets.tokens_per_second"),
        # 1e-308 tokens/s made $ per million tokens infinite
        ({"inference": {"targets": {"tokens_per_second": 1e-308}}}, "inference.targets.tokens_per_second"),
        # replicas >= 17 crashed the fit with a TypeError
        ({"deploy": {"replicas": 17}}, "deploy.replicas"),
        # "false" is a string, which Python reads as true
        ({"placement": {"allow_opt_in": "false"}}, "placement.allow_opt_in"),
    ],
)
def test_numbers_are_strict_finite_and_bounded(patch, field):
    with pytest.raises(gpusizer.SpecError) as e:
        gpusizer.load_spec({"name": "chat", "model": {"name": "llama-3.1-8b"}, **patch})
    assert e.value.field == field


def test_numbers_spelled_as_yaml_strings_still_parse():
    # PyYAML reads 2.0e9 (no sign in the exponent) as a string; the contract's example uses it.
    s = gpusizer.load_spec(inputs.load_yaml(SPEC + "task: training\ntraining: {tokens: 2.0e9}\n", "doc"))
    assert s.train.tokens == 2.0e9


def test_field_types_are_reusable_in_other_models():
    import pydantic

    class Autoscaling(pydantic.BaseModel):
        max_replicas: fields.Replicas = 1

    assert Autoscaling(max_replicas=4).max_replicas == 4
    with pytest.raises(pydantic.ValidationError):
        Autoscaling(max_replicas=True)


def _llama(**patch):
    return {**json.loads((HF / "hf_config_llama31_8b.json").read_text()), **patch}


def _mixtral(**patch):
    return {**json.loads((HF / "hf_config_mixtral.json").read_text()), **patch}


@pytest.mark.parametrize(
    "config, key",
    [
        (_llama(num_hidden_layers="32x"), "num_hidden_layers"),
        (_llama(num_hidden_layers=32.5), "num_hidden_layers"),
        (_llama(num_hidden_layers=1e12), "num_hidden_layers"),  # spun forever counting layers
        (_llama(num_hidden_layers=True), "num_hidden_layers"),
        (_llama(num_attention_heads=0), "num_attention_heads"),
        (_llama(num_key_value_heads=0), "num_key_value_heads"),
        (_llama(num_key_value_heads=3), "num_key_value_heads"),
        (_llama(hidden_size=-4096), "hidden_size"),
        (_llama(text_config=[1, 2]), "text_config"),
        ({k: v for k, v in _mixtral().items() if k != "num_experts_per_tok"}, "num_experts_per_tok"),
        (_mixtral(num_experts_per_tok=9), "num_experts_per_tok"),
        (_llama(kv_lora_rank=512), "qk_rope_head_dim"),
        (_llama(sliding_window="4k"), "sliding_window"),
        (_llama(sliding_window=-1), "sliding_window"),  # dropped the KV cache
        (_llama(tie_word_embeddings="false"), "tie_word_embeddings"),  # read as true
        (_llama(vocab_size=None), "vocab_size"),
        ([_llama()], "JSON object"),
    ],
)
def test_malformed_hf_config_names_the_key(config, key):
    with pytest.raises(gpusizer.SpecError) as e:
        registry.parse_hf_config(config, "config.json")
    assert e.value.field == "model.hf_config"
    assert key in str(e.value)


@pytest.mark.parametrize(
    "content, words",
    [
        ('{"num_hidden_layers": NaN}', "NaN"),
        ('{"a": 1, "a": 2}', "duplicate key"),
        ('{"a": Infinity}', "Infinity"),
    ],
)
def test_hf_config_json_is_strict(tmp_path, content, words):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(gpusizer.SpecError) as e:
        registry.from_hf_config(path)
    assert words in str(e.value)


def test_pools_errors_name_the_pools_file(tmp_path, capsys):
    spec, pools = tmp_path / "spec.yaml", tmp_path / "pools.yaml"
    spec.write_text(SPEC)
    pools.write_text('- name: rack\n  location: "dc\\n1"\n  gpu: L4\n  gpus_per_node: 1\n  usd_per_gpu_hour: 1\n')
    assert cli.main(["plan", str(spec), "--pools", str(pools)]) == 2
    err = capsys.readouterr().err
    assert "pools file" in err and "pools.yaml" in err and "spec file" not in err
    assert "pools.0.location" in err  # a newline would break markdown tables


def test_pools_file_that_is_dev_zero_is_refused(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    assert cli.main(["plan", str(spec), "--pools", "/dev/zero"]) == 2
    assert "pools file '/dev/zero' is not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, secret",
    [
        ("endpoint http://admin:hunter2@localhost:4566/ refused", "hunter2"),
        ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Signature=abcdef0123&X-Amz-Expires=60", "abcdef0123"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc", "eyJhbGciOiJIUzI1NiJ9"),
        ("token hf_abcdefghijklmnopqrstuvwxyzABCDEF12 expired", "hf_abcdefghijklmnopqrstuvwxyz"),
        ('{"hub_token": "0123456789"}', "0123456789"),  # a JSON string, even all digits, is masked
        ("password=123456", "123456"),
        (
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\nnext",
            "MIIEowIBAAKCAQEA7",
        ),
        ("clone with ghp_0123456789abcdefghijABCDEFGHIJklmn failed", "ghp_0123456789abcdefghij"),
        ("maps key AIzaSyA0123456789abcdefghijABCDEFGHIJ_k in use", "AIzaSyA0123456789abcdefghij"),
        ("slack xoxb-1234567890-abcdefghij posted", "xoxb-1234567890-abcdefghij"),
        ("Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
        # Case-insensitive where the pattern says so (re.I, passed apart from the pattern since it compiles on first use):
        ("PASSWORD=hunter2", "hunter2"),
        ("authorization: token abcdefgh", "abcdefgh"),
        ("https://b.s3.amazonaws.com/k?x-amz-signature=abc123", "abc123"),
    ],
)
def test_redaction_removes_credentials_and_keeps_the_rest(text, secret):
    out = redact.redact(text)
    assert secret not in out and redact.MASK in out


def test_spec_errors_never_echo_credentials(capsys, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC + "colour: 'https://bob:s3cr3t@registry.example/x'\ngrowth: 'https://bob:s3cr3t@h/'\n")
    assert cli.main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "s3cr3t" not in err and "growth" in err


@pytest.mark.parametrize("example", [p.name for p in EXAMPLE_SPECS])
def test_redaction_leaves_ordinary_reports_unchanged(example, tiny_catalog):
    """Measurements under secret-sounding JSON keys ("pipeline_ms_per_token": 0.5) stay, and the JSON stays valid."""
    from gpusizer.render import report

    decision = gpusizer.plan(REPO / "stacks/examples" / example, catalog=tiny_catalog)
    for fmt in report.FORMATS:
        text = report.render(decision, fmt)
        assert redact.redact(text) == text, fmt


def test_a_date_like_plain_scalar_is_read_as_the_text_written():
    """YAML 1.2's core schema has no timestamp: `name: 2026-01-01` is a name, `as_of` parses its own text."""
    doc = inputs.load_yaml("name: 2026-01-01\nwhen: 2026-01-01 10:00:00\nn: 3\n", "spec")
    assert doc == {"name": "2026-01-01", "when": "2026-01-01 10:00:00", "n": 3}
    assert gpusizer.load_spec({"name": doc["name"], "model": {"name": "llama-3.1-8b"}}).name == "2026-01-01"
    (pool,) = gpusizer.parse_pools(
        inputs.load_yaml(
            "- {name: r, location: l, gpu: L4, gpus_per_node: 1, usd_per_gpu_hour: 0.5, as_of: 2026-11-01}", "pools"
        )
    )
    assert pool.as_of.isoformat() == "2026-11-01"


def test_a_number_past_pythons_digit_limit_is_an_input_error():
    import sys

    digits = sys.get_int_max_str_digits() + 1
    with pytest.raises(gpusizer.SpecError, match=f"more than {digits - 1:,} digits. To fix: give a realistic value"):
        inputs.load_yaml("n: 1" + "0" * (digits - 1), "spec", "field")
