"""Merge tools for EchoesVault pages: the Git merge driver, `resolve`, and their installers.

Every protocol rule (frontmatter parsing, summary limits, conflict markers, validation) comes from
the engine; these modules only orchestrate Git around it.
"""

from __future__ import annotations

DRIVER_NAME = "echoes-vault"
ATTRIBUTES_PATTERN = "EchoesVault/pages/*.md"
ATTRIBUTES_LINE = f"{ATTRIBUTES_PATTERN} merge={DRIVER_NAME}"
