"""Imports every extension module Debian's packages installed for this Python.

Every extension module (`*.cpython-*.so`, `*.abi3.so`) under /usr/lib/python3/dist-packages (numpy, scipy, mpi4py,
torch, ... whatever the test setup installed) and the interpreter's
lib-dynload, in one process and in sorted order; prints one line per module,
"NAME ok" or "NAME ExceptionType: first line of the message", then a count.
A crash prints the Python stack (faulthandler), which names the module.
Run by tests/realworld/realworld_test.sh (plainly and under ldshim's hooks).
"""

import faulthandler
import importlib
import os
import sys
import sysconfig

faulthandler.enable()


def names(root, dotted):
    """Module names of the extension modules under root."""
    found = []
    for top, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(top, root)
        parts = [] if rel == "." else rel.split(os.sep)
        if not all(p.isidentifier() for p in parts):
            continue
        for f in sorted(files):
            # An extension module's name carries the interpreter's ABI tag
            # (torch/lib's libraries are plain shared objects).
            if not (f.endswith(".abi3.so") or (".cpython-" in f and f.endswith(".so"))):
                continue
            stem = f.split(".", 1)[0]
            if not stem.isidentifier():
                continue
            if dotted:
                found.append(".".join(parts + [stem]))
            elif not parts:
                found.append(stem)
    return found


def main():
    dynload = os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload")
    modules = sorted(set(names("/usr/lib/python3/dist-packages", True) + names(dynload, False)))
    ok = 0
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001 - ImportError, SystemExit, anything a module raises
            first = str(e).splitlines()[0] if str(e) else ""
            print(f"{name} {type(e).__name__}: {first}", flush=True)
        else:
            ok += 1
            print(f"{name} ok", flush=True)
    print(f"imported {ok} of {len(modules)} extension modules", flush=True)
    return 0 if modules else 1


if __name__ == "__main__":
    sys.exit(main())
