#!/usr/bin/env python3
"""Observability and state tests for the ULPT CPU (docs/spec.md sections 10-11):
`info ulpt`, `info registers`, the ulpt_* trace events, and migration of the ULPT MSRs
(the cpu/ulpt vmstate subsection), on a bare-metal image that leaves state behind."""
import os, re, socket, subprocess, sys, tempfile, time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAREMETAL = os.path.join(TOP, "scripts/ulpt-baremetal")
IMAGE = os.path.join(TOP, "build/baremetal/ulpt-state.elf")
n = 0

def ok(cond, desc):
    global n
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, desc), flush=True)
    return cond

class Monitor:
    def __init__(self, path):
        for _ in range(300):
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(path)
                break
            except OSError:
                time.sleep(0.1)
        self.read_prompt()

    def read_prompt(self):
        buf = b""
        self.s.settimeout(30)
        while not buf.endswith(b"(qemu) "):
            chunk = self.s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", buf.decode(errors="replace"))

    def cmd(self, line):
        self.s.sendall(line.encode() + b"\n")
        return self.read_prompt()

def start(tmp, name, extra, cpu="ulpt"):
    out = os.path.join(tmp, name + ".out")
    mon = os.path.join(tmp, name + ".sock")
    args = [BAREMETAL, "--cpu", cpu, "--out", out, "--monitor", mon] + \
        [a for x in extra for a in ("--qemu-arg", x)] + [IMAGE]
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return p, out, Monitor(mon)

def wait_for(path, text, secs=60):
    end = time.time() + secs
    while time.time() < end:
        if os.path.exists(path) and text in open(path, errors="replace").read():
            return True
        time.sleep(0.1)
    return False

def main():
    print("1..17", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.log")
        a, out_a, mon_a = start(tmp, "a", ["-d", "trace:ulpt_*", "-D", trace])
        try:
            ok(wait_for(out_a, "# state ready"), "the state image ran to its halt")
            info = mon_a.cmd("info ulpt")
            msrs_a = re.search(r"CTL .*STATUS \S+", info)
            ok("ulpt present, enabled, in_handler 1" in info, "info ulpt: present, enabled, in handler")
            ok("HANDLER 0x7fffdead0000" in info and "STKADJ 0x1234" in info and "VIEW 0x8000000000" in info,
               "info ulpt: MSR values")
            ok(re.search(r"violations 2 delivered 1 escalated 1 returns 1", info) is not None,
               "info ulpt: counters (2 violations: 1 delivered, 1 escalated; 1 return)")
            ok("model: off" in info, "info ulpt: model: off without ulpt-model=on")
            regs = mon_a.cmd("info registers")
            ok("ULPT CTL=0000000000000001" in regs and "HANDLER=00007fffdead0000" in regs,
               "info registers shows the ULPT MSRs")
            mig = os.path.join(tmp, "state.mig")
            mon_a.cmd("stop")
            mon_a.cmd('migrate "exec:cat > %s"' % mig)
            status = ""
            for _ in range(300):
                status = mon_a.cmd("info migrate")
                if "completed" in status or "failed" in status:
                    break
                time.sleep(0.1)
            ok("Migration status: completed" in status, "migration of the ULPT guest completes")
            mon_a.cmd("quit")
        finally:
            a.wait(timeout=30)
        log = open(trace).read() if os.path.exists(trace) else ""
        for ev in ("ulpt_msr_write", "ulpt_violation", "ulpt_deliver", "ulpt_uiret", "ulpt_escalate",
                   "ulpt_view_store"):
            ok(ev in log, "trace event %s fires" % ev)

        b, _, mon_b = start(tmp, "b", ["-incoming", "exec:cat %s" % mig])
        try:
            info_b = ""
            for _ in range(300):
                if "Migration status: completed" in mon_b.cmd("info migrate"):
                    break
                time.sleep(0.1)
            info_b = mon_b.cmd("info ulpt")
            msrs_b = re.search(r"CTL .*STATUS \S+", info_b)
            ok("ulpt present, enabled, in_handler 1" in info_b and msrs_a and msrs_b and
               msrs_a.group(0) == msrs_b.group(0),
               "R-STATE-2: the ULPT MSRs arrive on the destination (%s)" % (msrs_b.group(0) if msrs_b else "none"))
            mon_b.cmd("quit")
        finally:
            b.wait(timeout=30)
        # Modeled time in `info ulpt` (docs/spec.md 11, 11.1): the parameters and the counts.
        c, out_c, mon_c = start(tmp, "c", [], "ulpt,ulpt-model=on,ulpt-model-deliver=500")
        try:
            ok(wait_for(out_c, "# state ready"), "ulpt-model=on: the state image ran to its halt")
            info = mon_c.cmd("info ulpt")
            ok("model: on, kernel off, cpi 1, deliver 500 uiret 90 " in info and
               "region closed" in info, "info ulpt with ulpt-model=on: the parameters")
            m = re.search(r"since boot: cycles (\d+) insns_user (\d+) insns_kernel (\d+) "
                          r"deliveries 1 returns 1 returns_permit 1 after_events 0 view_stores 1 "
                          r"remote_syncs 0 escalations 1 kernel_entries (\d+)", info)
            ok(m is not None and int(m.group(2)) > 0 and int(m.group(3)) > 0 and
               int(m.group(1)) == int(m.group(2)) + 500 + 90 + 100 + 230 * int(m.group(4)),
               "info ulpt with ulpt-model=on: the counts since boot and their cycles (%s)" %
               (m.group(0) if m else info.strip().splitlines()[-1]))
            mon_c.cmd("quit")
        finally:
            c.wait(timeout=30)
    return 0

if __name__ == "__main__":
    sys.exit(main())
