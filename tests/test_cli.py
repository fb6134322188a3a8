"""The CLI contract: formats, exit codes 0/2/3, no tracebacks on bad input."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import subprocess
import sys

import pytest

from gpusizer import cli
from tests.conftest import REPO

EXAMPLE = REPO / "stacks/examples/chat-8b.yaml"


def run(*args, cwd=REPO):
    """`gpusizer ARGS` in this process (as the console script calls cli.main): exit code and both streams.

    In-process keeps the quick suite quick (a fresh interpreter costs ~1.5 s here);
    test_the_module_entry_point_exits_with_mains_code runs the real entry point once.
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code
    return subprocess.CompletedProcess(["gpusizer", *map(str, args)], code, out.getvalue(), err.getvalue())


def test_the_module_entry_point_exits_with_mains_code(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "gpusizer.cli", "plan", tmp_path / "nope.yaml"], capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode == 2 and "cannot read spec file" in r.stderr and "Traceback" not in r.stderr


def test_plan_json_has_contract_fields():
    r = run("plan", EXAMPLE, "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["workload"] == "support-chat"
    assert d["requirements"]["memory_gib"]["total"] > 0
    for key in (
        "provider",
        "region",
        "zone",
        "instance_type",
        "gpu",
        "gpu_count",
        "gpu_memory_gib",
        "purchase",
        "hourly_usd",
    ):
        assert key in d["choice"]
    for c in d["candidates"]:
        assert c["feasible"] == (c["reasons"] == [])


def test_estimate_json_lists_every_gpu_model():
    from gpusizer.facts import hardware

    r = run("estimate", EXAMPLE, "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {row["gpu"] for row in d["per_gpu"]} == set(hardware.load_gpus())
    for key in ("weights", "kv_cache", "activations", "gradients", "optimizer_states", "overhead", "total"):
        assert key in d["requirements"]["memory_gib"]


@pytest.mark.parametrize("fmt, marker", [("table", "CHOICE:"), ("markdown", "| provider |")])
def test_human_formats_show_the_choice(fmt, marker):
    r = run("plan", EXAMPLE, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert marker in r.stdout
    assert "Rejections by reason" in r.stdout


def test_invalid_spec_exits_2_naming_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: chat\nmodel: {name: llama-3.1-8b}\ninference: {batch_size: -3}\n")
    r = run("plan", bad)
    assert r.returncode == 2
    assert "inference.batch_size" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_missing_file_exits_2(tmp_path):
    r = run("plan", tmp_path / "nope.yaml")
    assert r.returncode == 2
    assert "cannot read" in r.stderr


def test_infeasible_exits_3_and_still_explains(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: x\nmodel: {name: llama-3.1-405b}\nplacement: {max_hourly_usd: 1}\n")
    r = run("plan", spec, "--format", "json")
    assert r.returncode == 3
    d = json.loads(r.stdout)
    assert d["choice"] is None and d["candidates"]


def test_schema_is_json():
    r = run("schema")
    assert r.returncode == 0
    assert json.loads(r.stdout)["title"] == "gpusizer workload spec"


def test_catalog_list_filters_and_carries_provenance():
    r = run("catalog", "list", "--provider", "aws", "--gpu", "L4", "--purchase", "on-demand", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows and all(x["provider"] == "aws" and x["gpu"] == "L4" for x in rows)
    assert all(x["source"] and x["as_of"] for x in rows)


def test_cli_path_imports_no_pulumi_or_cloud_sdk():
    code = (
        "import sys, gpusizer.cli as c; c.main(['plan', %r, '--format', 'json']);"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pulumi', 'boto3', 'botocore', 'google')];"
        "print('BAD', bad)"
    ) % str(EXAMPLE)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert "BAD []" in r.stdout, r.stdout[-500:] + r.stderr


def test_top_trims_plan_json_and_all_keeps_every_candidate(capsys):
    from gpusizer import cli

    assert cli.main(["plan", str(EXAMPLE), "--format", "json", "--top", "3"]) == 0
    top = json.loads(capsys.readouterr().out)
    assert cli.main(["plan", str(EXAMPLE), "--format", "json", "--all"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert len(full["candidates"]) == full["candidates_total"] > len(top["candidates"])
    assert top["rejections_by_reason"] == full["rejections_by_reason"]
    assert sum(full["rejections_by_reason"].values()) == sum(not c["feasible"] for c in full["candidates"])
    # Top 3 feasible, then one rejected candidate per reason.
    assert [c["feasible"] for c in top["candidates"][:3]] == [True] * 3
    assert sorted(c["reason_code"] for c in top["candidates"][3:]) == sorted(full["rejections_by_reason"])


@pytest.mark.parametrize("bad", ["0", "-2", "many", "²"])
def test_top_must_be_a_whole_number_of_at_least_one(bad, capsys):
    from gpusizer import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["plan", str(EXAMPLE), "--top", bad])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--top" in err and ">= 1" in err and "Traceback" not in err


@pytest.fixture
def settings_seen(monkeypatch):
    """What a command sees of the process settings main() makes (the models command records them)."""
    seen = {}
    monkeypatch.setitem(
        cli._COMMANDS,
        "models",
        cli._COMMANDS["models"]._replace(
            run=lambda args: seen.update(plugins=os.environ.get("PYDANTIC_DISABLE_PLUGINS"), gc=gc.isenabled()) or 0
        ),
    )
    return seen


@pytest.mark.parametrize("collecting", [True, False])
def test_a_command_skips_pydantic_plugin_discovery_and_garbage_collection_then_restores_both(
    monkeypatch, settings_seen, collecting
):
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        assert cli.main(["models"]) == 0
        assert settings_seen == {"plugins": "__all__", "gc": False}
        assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ and gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()


def test_a_users_pydantic_plugin_setting_is_left_as_given(monkeypatch, settings_seen):

    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # empty: discover every plugin
    assert cli.main(["models"]) == 0
    assert settings_seen["plugins"] == "" and os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""


_ENTRY = (
    "import atexit, gc, sys, threading\n"
    "from gpusizer import cli\n"
    "atexit.register(print, 'exit handler ran')\n"
    "released = threading.Event()\n"
    "if sys.argv[1] == 'with a thread':  # it runs until main() has returned\n"
    "    threading.Thread(target=released.wait, args=(60,)).start()\n"
    "sys.argv = ['gpusizer', 'plan', sys.argv[2], '--format', 'json', '--all']\n"
    "code = cli.main()\n"
    "print('main returned', code, gc.get_freeze_count() > 0)\n"
    "released.set()\n"
)


@pytest.mark.parametrize("case", ["alone", "with a thread"])
def test_the_command_line_entry_ends_the_process_once_its_output_and_exit_handlers_are_done(case):
    """Run as the command, main() ends the process itself (no interpreter teardown), after the exit
    handlers and with all output written; while another thread runs, it returns as before, every
    object frozen. Called with argv (tests, embedding), it only returns (every other test here)."""
    r = subprocess.run(
        [sys.executable, "-c", _ENTRY, case, REPO / "stacks/examples/chat-8b.yaml"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    plan, _, rest = r.stdout.partition("\n}\n")  # the JSON's last line closes it, unindented
    assert json.loads(plan + "}")["choice"]["instance_type"]  # the whole JSON (--all: ~0.8 MB) came through
    expected = ["exit handler ran"] if case == "alone" else ["main returned 0 True", "exit handler ran"]
    assert rest.splitlines() == expected


@pytest.mark.parametrize(
    "redirect, code, err",
    [
        pytest.param("> /dev/full", 120, "gpusizer: error: cannot write the output: [Errno 28]", id="a full disk"),
        pytest.param(">&-", 0, "", id="stdout closed"),
        pytest.param("2>&-", 0, None, id="stderr closed"),
        pytest.param("| head -c 10 >/dev/null", 0, "", id="the reader leaves"),
    ],
)
def test_ending_the_process_reports_output_that_could_not_be_written_as_the_interpreter_would(redirect, code, err):
    # Buffered stdout (PYTHONUNBUFFERED unset), so the last flush is the one that fails; bash runs the redirection.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    r = subprocess.run(
        [
            "bash",
            "-c",
            f'"$0" -m gpusizer.cli estimate stacks/examples/chat-8b.yaml {redirect}; exit "${{PIPESTATUS[0]}}"',
            sys.executable,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
    )
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr and (err is None or r.stderr.startswith(err))


def test_under_a_profiler_the_command_returns_so_the_profiler_reports():
    r = subprocess.run(
        [sys.executable, "-m", "cProfile", "-s", "tottime", "-m", "gpusizer.cli", "models"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert "ncalls" in r.stdout and "llama-3.1-8b" in r.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "spec.yaml", "--format", "json", "--top", "3", "--debug"],
        ["--debug", "estimate", "spec.yaml", "--catalog", "c.csv"],
        ["schema"],
        ["tco", "spec.yaml", "--pools", "p.yaml", "--months", "12"],
        ["models", "--format", "json"],
        ["preview", "--stack", "dev", "--serial"],
        ["diff", "a.json", "b.json", "--format", "markdown"],
        ["calibrate", "r1.json", "r2.json", "--gpu", "L4"],
        ["observe", "s.yaml", "--prometheus", "http://p:9090", "--window", "1d"],
        ["catalog", "list", "--provider", "aws", "--debug"],
        ["catalog", "refresh", "--provider", "gcp", "--region", "us-east1"],
    ],
)
def test_a_named_subcommand_alone_parses_as_the_whole_parser_does(argv):
    """Only the named subcommand's parser is built; it must read the command line exactly as the full one."""
    alone = cli._parser(argv)
    (command,) = next(a for a in alone._actions if a.dest == "command").choices
    assert command == next(a for a in argv if not a.startswith("-"))
    assert alone.parse_args(argv) == cli._parser().parse_args(argv)


def test_usage_lists_every_subcommand_even_when_one_is_built(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli._parser(["plan", "x", "--bogus"]).parse_args(["plan", "x", "--bogus"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "{plan,estimate,schema,tco,models,preview,diff,calibrate,observe,catalog}" in err
    assert "unrecognized arguments: --bogus" in err


def test_top_level_help_before_a_subcommand_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit):
        cli._parser(["-h", "plan"]).parse_args(["-h", "plan"])
    out = capsys.readouterr().out
    assert "cheapest adequate offer" in out and "inspect the offers" in out  # plan's and catalog's help lines


def test_tco_months_are_bounded_by_the_longest_pool_lifetime(tmp_path, capsys):
    """--months past the longest pool lifetime (fields.MAX_LIFETIME_YEARS: 50 years, 600 months) would
    build a table month by month for hours; not a whole number >= 1 is refused by the parser."""
    from gpusizer.base import fields

    assert 12 * fields.MAX_LIFETIME_YEARS == 600
    pools = tmp_path / "pools.yaml"
    pools.write_text("- {name: r, location: l, gpu: L4, gpus_per_node: 1, usd_per_gpu_hour: 0.5}\n")
    for bad, says in (("0", ">= 1"), ("²", ">= 1"), ("601", ">= 1 and <= 600"), ("100000000", ">= 1 and <= 600")):
        try:
            code = cli.main(["tco", str(EXAMPLE), "--pools", str(pools), "--months", bad])
        except SystemExit as e:  # the parser's refusal
            code = e.code
        assert code == 2
        err = capsys.readouterr().err
        assert "--months" in err and says in err and "Traceback" not in err


def test_catalog_without_its_subcommand_names_the_choices(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["catalog"])
    assert e.value.code == 2 and "{list,refresh}" in capsys.readouterr().err
