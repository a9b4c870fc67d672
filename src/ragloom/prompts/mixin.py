"""``PromptMixin``: ``get_prompts()`` / ``update_prompts()`` over a component and its parts (LlamaIndex names).

Keys of a part's prompts are prefixed with the part's name and ``":"``, e.g. a query engine's
``"response_synthesizer:text_qa_template"``.
"""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["PromptMixin"]


class PromptMixin:
    """Subclasses implement :meth:`_get_prompts`, :meth:`_update_prompts` and :meth:`_get_prompt_modules`."""

    def _get_prompts(self) -> Dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: Dict[str, Any]) -> None:
        return None

    def _get_prompt_modules(self) -> Dict[str, "PromptMixin"]:
        return {}

    def get_prompts(self) -> Dict[str, Any]:
        """Every prompt this component uses, its parts' keys prefixed ``"part:"``."""
        out = dict(self._get_prompts())
        for name, module in self._get_prompt_modules().items():
            for key, prompt in module.get_prompts().items():
                out[f"{name}:{key}"] = prompt
        return out

    def update_prompts(self, prompts_dict: Dict[str, Any]) -> None:
        """Replace prompts by key (as :meth:`get_prompts` names them).

        Raises:
            ValueError: a key names no prompt of this component or its parts.
        """
        own = self._get_prompts()
        modules = self._get_prompt_modules()
        mine: Dict[str, Any] = {}
        routed: Dict[str, Dict[str, Any]] = {}
        for key, prompt in prompts_dict.items():
            if ":" in key:
                name, sub = key.split(":", 1)
                if name not in modules:
                    raise ValueError(f"unknown prompt key {key!r}; known keys: {sorted(self.get_prompts())}")
                routed.setdefault(name, {})[sub] = prompt
            elif key in own:
                mine[key] = prompt
            else:
                raise ValueError(f"unknown prompt key {key!r}; known keys: {sorted(self.get_prompts())}")
        if mine:
            self._update_prompts(mine)
        for name, sub_prompts in routed.items():
            modules[name].update_prompts(sub_prompts)
