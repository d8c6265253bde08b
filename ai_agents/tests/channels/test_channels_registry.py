"""The adapter registry: dotted paths resolved on first use, nothing imported for its side
effects."""

from __future__ import annotations

import subprocess
import sys
from typing import cast

from django.conf import settings

from ai_agents import channels
from ai_agents.channels import ADAPTERS, ChannelAdapter, adapter_for, adapter_installed


def test_every_pushing_channel_resolves_to_an_adapter_with_send_and_typing() -> None:
    assert set(ADAPTERS) == {"whatsapp", "email"}
    for channel, dotted in ADAPTERS.items():
        adapter = adapter_for(channel)
        assert adapter is not None
        assert f"{type(adapter).__module__}.{type(adapter).__qualname__}" == dotted
        assert callable(adapter.send)
        assert callable(adapter.typing)


def test_the_adapter_is_built_once_and_cached() -> None:
    assert adapter_for("whatsapp") is adapter_for("whatsapp")


def test_pulled_and_unknown_channels_have_no_adapter() -> None:
    assert adapter_for("webchat") is None
    assert adapter_for("api") is None
    assert adapter_for("carrier-pigeon") is None


def test_an_installed_adapter_replaces_the_channel_s_for_the_block_only() -> None:
    real = adapter_for("email")
    fake = cast(ChannelAdapter, object())  # only its identity is compared
    with adapter_installed("email", fake):
        assert adapter_for("email") is fake
    assert adapter_for("email") is real
    with adapter_installed("testchan-registry", fake):
        assert adapter_for("testchan-registry") is fake
    assert "testchan-registry" not in channels._adapters


def test_importing_the_channels_package_imports_no_channel_module() -> None:
    code = (
        "import sys, ai_agents.channels; "
        "print(sorted(m for m in sys.modules if m.startswith('ai_agents.channels.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "[]"
