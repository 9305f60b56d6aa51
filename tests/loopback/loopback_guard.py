#!/usr/bin/env python3
"""Runs COMMAND under `strace -f` and fails if any process it starts sends to,
or binds, an address outside loopback.

    loopback_guard.py [--keep LOG] -- COMMAND [ARG...]

Every connect, sendto, sendmsg and sendmmsg of every process is recorded with
its address; each IPv4 or IPv6 address must be on loopback (127.0.0.0/8, ::1,
or ::ffff:127.x.y.z).  A bind may also take the unspecified address (0.0.0.0,
::): a wildcard listener sends nothing, and Open MPI 4.1's out-of-band
listener binds it whatever oob_tcp_if_include says.  Local families
(AF_UNIX, AF_NETLINK, AF_UNSPEC) are not network traffic; any other family
fails.  A failed call counts like a successful one: a refused connect still
sent its SYN.

Exit status: the command's own if it failed; else 1 if an address outside
loopback was used; else 0.  Without strace, or where this system does not
let strace trace (ptrace), the command runs unguarded and one line says
"loopback guard: SKIPPED" with the reason, so the suite it wraps still runs.
"""
import ipaddress
import os
import re
import subprocess
import sys
import tempfile

SYSCALLS = "connect,bind,sendto,sendmsg,sendmmsg"
# One socket address as strace writes it: the family, then its fields up to
# the closing brace (no sockaddr nests another).
SOCKADDR = re.compile(r"\{sa_family=(AF_[A-Z0-9]+)([^{}]*)\}")
IPV4 = re.compile(r'inet_addr\("([^"]+)"\)')
IPV6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')
CALL = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]")
LOCAL_FAMILIES = {"AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_UNSPEC"}


def on_loopback(addr: str) -> bool:
    ip = ipaddress.ip_address(addr)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def verdict(call: str, family: str, fields: str):
    """(address, allowed, wildcard) of one socket address; None if local."""
    if family in LOCAL_FAMILIES:
        return None
    m = IPV4.search(fields) if family == "AF_INET" else IPV6.search(fields) if family == "AF_INET6" else None
    if m is None:
        return (family + fields, False, False)
    addr = m.group(1)
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return (addr, False, False)
    if on_loopback(addr):
        return (addr, True, False)
    if call == "bind" and ip.is_unspecified:
        return (addr, True, True)
    return (addr, False, False)


def check(log_path: str):
    """(checked, wildcard binds, processes, violations) of one strace log."""
    checked = wildcard = 0
    pids = set()
    bad = []
    with open(log_path, errors="replace") as log:
        for line in log:
            m = CALL.match(line)
            if not m:
                continue
            pid, call = m.groups()
            for family, fields in SOCKADDR.findall(line):
                v = verdict(call, family, fields)
                if v is None:
                    continue
                checked += 1
                pids.add(pid)
                if not v[1]:
                    bad.append(line.rstrip())
                elif v[2]:
                    wildcard += 1
    return checked, wildcard, len(pids), bad


def unguarded(reason: str, command) -> int:
    print(f"loopback guard: SKIPPED ({reason}); {command[0]} runs unguarded", flush=True)
    return subprocess.call(command)


def main(argv) -> int:
    keep = None
    if argv[:1] == ["--keep"] and len(argv) > 1:
        keep, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else 2
    try:
        probe = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"], capture_output=True)
    except FileNotFoundError:
        return unguarded("strace is not installed (Debian package strace)", argv)
    if probe.returncode != 0:
        why = probe.stderr.decode(errors="replace").strip().splitlines()
        return unguarded("strace cannot trace here: " + (why[0] if why else f"exit {probe.returncode}"), argv)
    with tempfile.TemporaryDirectory(prefix="loopback-guard.") as tmp:
        log = keep or os.path.join(tmp, "strace.log")
        strace = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "signal=none", "-e", "trace=" + SYSCALLS,
                  "-s", "0", "-o", log, "--"]
        status = subprocess.call(strace + argv)
        checked, wildcard, procs, bad = check(log)
    if status < 0:  # killed by a signal: the shell's way of saying so
        status = 128 - status
    name = os.path.basename(argv[0])
    for line in bad:
        print(f"loopback guard: OUTSIDE LOOPBACK: {line}", flush=True)
    if bad:
        print(f"loopback guard: {name}: {len(bad)} of {checked} socket addresses in {procs} processes "
              "outside loopback", flush=True)
    else:
        print(f"loopback guard: {name}: {checked} socket addresses in {procs} processes, all on loopback "
              f"({wildcard} wildcard binds: listeners, which send nothing)", flush=True)
    if status != 0:
        return status
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
