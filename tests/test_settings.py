"""Settings: the embedded stack's addresses and the default model."""

from longrun.service.settings import DEFAULT_CLAUDE, Settings


def test_scripted_is_the_default_without_a_key(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("LONGRUN_MODEL", raising=False)
    assert Settings.from_env().default_model == "scripted"


def test_a_key_makes_claude_the_default_unless_told_otherwise(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.delenv("LONGRUN_MODEL", raising=False)
    assert Settings.from_env().default_model == DEFAULT_CLAUDE
    monkeypatch.setenv("LONGRUN_MODEL", "scripted")
    assert Settings.from_env().default_model == "scripted"


def test_env_overrides_the_stack_file(monkeypatch, tmp_path):
    (tmp_path / "stack.json").write_text('{"database_url": "postgresql://a/b", "temporal_address": "127.0.0.1:1"}')
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path))
    monkeypatch.delenv("LONGRUN_DATABASE_URL", raising=False)
    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    s = Settings.from_env()
    assert (s.database_url, s.temporal_address) == ("postgresql://a/b", "127.0.0.1:1")
    monkeypatch.setenv("TEMPORAL_ADDRESS", "10.0.0.1:7233")
    assert Settings.from_env().temporal_address == "10.0.0.1:7233"
