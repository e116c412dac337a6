# lit configuration for poot_mlir's IR tests. It needs no configure step:
# `poot-opt` comes from POOT_OPT, else PATH (the installed console script),
# and FileCheck is the `filecheck` package's command.
import os
import shutil

import lit.formats

config.name = "poot_mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs", "python", "lit.cfg.py", "test_lit.py", "conftest.py"]

poot_opt = os.environ.get("POOT_OPT") or shutil.which("poot-opt")
if not poot_opt:
    lit_config.fatal("poot-opt not found: install the package or set POOT_OPT")
# Tests run in their own folders: a relative POOT_OPT / PYTHONPATH (the dev
# tree's `POOT_OPT=build/bin/poot-opt`) must not depend on that.
poot_opt = os.path.abspath(poot_opt)
filecheck = shutil.which("filecheck") or shutil.which("FileCheck")
if not filecheck:
    lit_config.fatal("FileCheck not found: pip install filecheck")

config.substitutions.append(("poot-opt", poot_opt))
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(("%python", shutil.which("python3") or "python3"))
config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("PYTHONPATH", "POOT_OPT", "HOME", "VK_ICD_FILENAMES", "XDG_RUNTIME_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p
    )
config.environment["POOT_OPT"] = poot_opt
