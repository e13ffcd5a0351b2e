"""CRC-32C (Castagnoli), the checksum of every segment header, record and block.

The ``crc32c`` package's compiled function, loaded without running the package's
``__init__``: that asks ``importlib.metadata`` for the package's own version and imports its
command line (``argparse``), 11–20 ms of every command's start, more than all of the log's
own modules.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
from importlib.util import find_spec, module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

_NAME = "crc32c._crc32c"


def _extension() -> ModuleType:
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    package = find_spec("crc32c")  # found, not imported
    for folder in (package and package.submodule_search_locations) or ():
        for suffix in EXTENSION_SUFFIXES:
            path = Path(folder, f"_crc32c{suffix}")
            if path.is_file():
                loader = ExtensionFileLoader(_NAME, str(path))
                spec = spec_from_loader(_NAME, loader)
                assert spec is not None
                module = module_from_spec(spec)
                loader.exec_module(module)
                sys.modules[_NAME] = module  # the package, imported later, takes this one
                return module
    raise ImportError("the crc32c package's compiled module is missing", name=_NAME)


crc32c: Callable[..., int] = _extension().crc32c
