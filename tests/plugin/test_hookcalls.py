"""Our hooks are called through pluggy (pytest_plugin/hookcalls.py), each result paired with its plugin."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_tokcompat.pytest_plugin.hookcalls import results_by_plugin

HOOK = "pytest_tokcompat_loaders"


class _Plugin:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    @pytest.hookimpl
    def pytest_tokcompat_loaders(self, config: pytest.Config) -> Any:
        return self.answer


class _First(_Plugin):
    @pytest.hookimpl(tryfirst=True)
    def pytest_tokcompat_loaders(self, config: pytest.Config) -> Any:
        return self.answer


def _config(pytester: pytest.Pytester, *plugins: object) -> pytest.Config:
    config = pytester.parseconfig()
    for index, plugin in enumerate(plugins):
        config.pluginmanager.register(plugin, f"test-plugin-{index}")
    return config


def test_results_come_in_pluggys_call_order_each_with_its_plugin(pytester: pytest.Pytester) -> None:
    early, late, first, silent = _Plugin(["early"]), _Plugin(["late"]), _First(["first"]), _Plugin(None)
    config = _config(pytester, early, first, silent, late)
    answers = results_by_plugin(config, HOOK)
    assert [a.value for a in answers] == [["first"], ["late"], ["early"]]  # tryfirst, then last registered
    assert all(a.where.endswith(f"({HOOK})") for a in answers)
    assert "test-plugin-1" in answers[0].where  # the plugin that answered, by its registered name
    # control: a plain pluggy call gives the same values in the same order (and loses who gave them)
    assert config.hook.pytest_tokcompat_loaders(config=config) == [a.value for a in answers]


class _WrapperOnly:
    @pytest.hookimpl(wrapper=True)
    def pytest_tokcompat_loaders(self, config: pytest.Config) -> Generator[None, Any, Any]:
        result = yield
        return [*result, ["wrapped"]]


def test_another_plugins_wrapper_takes_part_in_each_call(pytester: pytest.Pytester) -> None:
    plain = _config(pytester, _Plugin(["plain"]))
    assert [a.value for a in results_by_plugin(plain, HOOK)] == [["plain"]]  # control: no wrapper
    wrapped = _config(pytester, _Plugin(["plain"]), _WrapperOnly())
    assert [a.value for a in results_by_plugin(wrapped, HOOK)] == [["plain"], ["wrapped"]]


def test_an_undeclared_hook_gives_nothing(pytester: pytest.Pytester) -> None:
    assert results_by_plugin(pytester.parseconfig(), "pytest_tokcompat_no_such_hook") == []
