"""Every CLI command starts a Python process: what it imports is paid by every `longrun status`,
and by every CLI test. The model SDKs (`anthropic`, `openai`: about 4 s of CPU between them, most
of a command's start-up) load only when a provider is built, in the worker."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_and_the_console_do_not_import_the_model_sdks() -> None:
    probe = ("import sys, longrun.cli, longrun.console.app, longrun.providers as p; "
             "p.get_provider; "
             "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_building_a_provider_still_loads_its_sdk() -> None:
    probe = ("import sys; from longrun.providers import get_provider; "
             "get_provider('anthropic:claude-sonnet-4-6', api_key='x', base_url='http://127.0.0.1:9'); "
             "print('anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
