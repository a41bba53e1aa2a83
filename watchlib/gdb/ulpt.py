# ulpt-gdb's GDB extension: watchpoints of any number and size, kept by the ulpt-watch agent
# in the program (ULPT lines, or pages on the mprotect backend), with GDB's commands and output.
#
#   ulpt watch [-l|-location] EXPR [thread N] [if COND]     (and rwatch, awatch)
#   ulpt info watchpoints | ulpt delete [N...] | ulpt disable [N...] | ulpt enable [N...]
#   ulpt condition N [COND]
#   commands [N] ... end       right after a ulpt watch, as after GDB's own watch
#
# How a hit stops (see watchlib/preload/gdb.c). Once the access has completed, the agent
# puts the hits in the thread's stop record and sends the program on through its stub
# ulpt_gdb_trap, every register the program's; TrapBreakpoint's stop() there reads the
# record, moves the PC to the program's next instruction and decides: one stop per hit, in
# the program's own frame, as after a hardware watchpoint, and GDB never steps over the
# breakpoint (the PC has left it). Where the machine's debug registers trap, the stub is the
# door instead: its last jump reads a slot that DoorWatchpoint, a hardware access watchpoint of
# GDB's, watches, so the program stops at its next instruction with no PC to write (one
# debug register: the trap stub serves when none is free). On the mprotect backend, a single
# step of GDB's that ran into an access without a hit (and a hit without an after-call) goes through
# ulpt_gdb_stop: StopBreakpoint's stop() puts a thread-specific ResumeBreakpoint at the
# program's next instruction, where the program stops once the agent's handler returns.
# Either way bt, up,
# step, next and finish work as usual, the agent's frames are never the top of the stack,
# and conditions are evaluated in the frame of the code that accessed the memory.
#
# Numbers. A watchpoint's number is a GDB breakpoint number: a disabled placeholder
# breakpoint holds it so that GDB's own `commands` (which reads its lines itself) finds it
# right after `ulpt watch`; its commands move to the watchpoint, and the placeholder goes as
# soon as they have (or at the next ulpt command, stop or resume).
#
# SPDX-License-Identifier: MIT
import ctypes
import errno
import os
import struct

import gdb

WL_READ, WL_WRITE = 1, 2
GDB_CHANGES = 0x100     # gdb.c: stop for a write only if it changed the value (GDB's watch)
KINDS = {  # command: (agent mode, GDB's name in a stop, in info watchpoints)
    "watch": (WL_WRITE, "Hardware watchpoint", "hw watchpoint"),
    "rwatch": (WL_READ, "Hardware read watchpoint", "read watchpoint"),
    "awatch": (WL_READ | WL_WRITE, "Hardware access (read/write) watchpoint", "acc watchpoint"),
}
AGENT_VERSION = 7   # watchlib/preload/gdb.c's ulpt_gdb_version


def silent_commands(cmds):
    """Whether breakpoint commands begin with GDB's `silent'."""
    return bool(cmds) and cmds.lstrip().split("\n", 1)[0].strip() == "silent"


class Watch:
    def __init__(self, num, kind, expr, location, addr, size, vtype, thread, cond):
        self.num, self.kind, self.expr, self.location = num, kind, expr, location
        self.addr, self.size, self.type = addr, size, vtype
        self.thread, self.cond = thread, cond
        self.enabled = True
        self.agent_id = None        # the agent's watchpoint id while it watches for us
        self.queued = False         # its request waits in the agent's queue (queue_watch)
        self.cancel = False         # ... and it was deleted or disabled meanwhile
        self.hits = 0
        self.old = None             # the value last seen (bytes)
        self.commands = None
        self.scope = None           # a local's frame end (ScopeBreakpoint), without -l

    def title(self):
        return "-location " + self.expr if self.location else self.expr

    @property
    def silent(self):
        """GDB's `silent' first in its commands: a stop prints nothing of its own."""
        return silent_commands(self.commands)

    def value(self, data=None):
        """The value as GDB prints it (value_print, as in a watchpoint's report)."""
        if data is None:
            data = read_bytes(self.addr, self.size)
        if data is None:
            return "<unreadable>"
        gdb.set_convenience_variable("_ulpt_value", gdb.Value(data, self.type))
        return gdb.execute("output $_ulpt_value", to_string=True)


class State:
    def __init__(self):
        self.watches = {}           # number: Watch
        self.by_agent = {}          # agent id: Watch
        self.pending = {}           # global thread number: Pending
        self.unwatch = []           # agent ids to remove at the next chance
        self.proxy = None           # the placeholder breakpoint of the last watch
        self.proxy_events = False   # on_cont and on_modified connected (proxy_events)
        self.listening = True       # on_stop connected (listen)
        self.queue = None           # ulpt_gdb_queue's address (gdb.c), once per process
        self.queued = []            # the watches whose requests it holds, in its order
        self.queue_sig = 0          # the signal that starts them
        self.queue_max = 0
        self.handle_saved = None    # (signal, GDB's handling of it before the first batch)
        self.stop_bp = None
        self.ready_bp = None
        self.checked_pid = 0        # the process whose agent was found ready (agent_watch)
        self.last_reports = None
        self.loading = False        # load_agent's dlopen is under way
        self.mprotect = False       # the program's agent runs on the mprotect backend
        self.backend = 0            # the agent's backend: 1 ULPT, 2 mprotect, 0 not known yet
        self.trap_bp = None         # TrapBreakpoint, on ULPT
        self.door_bp = None         # DoorWatchpoint, on ULPT while a debug register is free
        self.door = None            # ulpt_gdb_door's address
        self.tpoff = None           # the stop record's offset from the thread pointer
        self.last = None            # ulpt_gdb_last's address: the last thread at the stub
        self.bp_addrs = None        # where the user's breakpoints are (breakpoint_at)
        self.calling = False        # an inferior call of the agent is under way
        self.signal_bp = None       # SignalBreakpoint, on mprotect
        self.signal_stop = False    # it stopped: the stop shows the signal
        self.step_from = 0          # a step ended without a report: where it began
        self.scope_ended = None     # the watch whose scope's end stopped (ScopeBreakpoint)
        self.reported_early = False # ResumeBreakpoint.stop printed the stop's reports
        # Breakpoints of ours to delete once GDB is done with them: not in their stop(), nor
        # by gdb.post_event, whose pending calls crash GDB at its exit.
        self.done = []


S = State()


def inferior_live():
    inf = gdb.selected_inferior()
    return inf is not None and inf.pid != 0


def read_bytes(addr, size):
    try:
        return bytes(gdb.selected_inferior().read_memory(addr, size))
    except gdb.MemoryError:
        return None


def agent_loaded():
    try:
        return int(gdb.parse_and_eval("ulpt_gdb_version")) == AGENT_VERSION
    except gdb.error:
        return False


def load_agent():
    """The agent in a program that does not have it (ulpt-gdb -p): dlopen'ed there."""
    path = os.environ.get("ULPT_GDB_AGENT", "")
    if not path:
        raise gdb.GdbError("ulpt: the ulpt-watch agent is not in this program, and "
                           "ULPT_GDB_AGENT does not name it")
    S.loading = True        # its start's ulpt_gdb_ready is inside this call: no stop there
    try:
        # No userfaultfd write protection, as ulpt-gdb starts programs (see ulpt-gdb).
        gdb.parse_and_eval('((int (*)(const char *, const char *, int)) setenv)'
                           '("ULPT_NO_UFFD", "1", 1)')
        h = int(gdb.parse_and_eval('((void *(*)(const char *, int)) dlopen)("%s", 2)' % path))
        why = "" if h else gdb.parse_and_eval("((char *(*)(void)) dlerror)()").string()
    except gdb.error as e:
        raise gdb.GdbError("ulpt: cannot load the agent into the program: %s" % e)
    finally:
        S.loading = False
    if not h or not agent_loaded():
        # Its per-thread state (about 1.1 KiB) is static TLS, which a running program may
        # have used up: then only a program started with the agent (LD_PRELOAD) can watch.
        raise gdb.GdbError("ulpt: cannot load the agent into the program (%s); start it with "
                           "LD_PRELOAD=%s" % (why or "no agent after dlopen", path))


def agent_call(fmt, *args):
    S.calling = True        # its resume is not the user's (on_cont)
    try:
        return int(gdb.parse_and_eval(fmt % args))
    finally:
        S.calling = False


def errno_text(code):
    return os.strerror(-code) if code < 0 else "error %d" % code


def agent_watch(w):
    """Starts the agent's watch for w (the program stopped and live)."""
    pid = gdb.selected_inferior().pid
    if S.checked_pid != pid:        # once per process: an inferior call costs a stop
        if not agent_loaded():
            load_agent()
        backend = agent_call("((int (*)(void)) ulpt_gdb_backend)()")
        if backend == 0:
            raise gdb.GdbError("ulpt: the agent did not start in this program (its message "
                               "says why); the program runs unwatched")
        if backend == 2:
            # The agent's faults go to the program silently; the program's own stop at
            # SignalBreakpoint, where libulpt passes them on.
            gdb.execute("handle SIGSEGV nostop noprint pass", to_string=True)
            S.mprotect = True
        S.backend = backend
        ensure_stop_bp()
        if backend == 1:
            open_door()
        # The agent has started: its start's breakpoint has served, and would cost a write of
        # the program's code at each stop and resume.
        if S.ready_bp is not None:
            S.done.append(S.ready_bp)
            S.ready_bp = None
            listen()
        S.checked_pid = pid
    mode = KINDS[w.kind][0] | (GDB_CHANGES if w.kind == "watch" else 0)
    tid = 0
    if w.thread is not None:
        tid = next((t.ptid[1] for t in gdb.selected_inferior().threads() if t.num == w.thread), 0)
    if queue_watch(w, mode, tid):
        return
    flush_queue()
    r = agent_call("((int (*)(unsigned long, unsigned long, unsigned int, int)) ulpt_gdb_watch)"
                   "(%d, %d, %d, %d)", w.addr, w.size, mode, tid)
    if r < 0:
        raise gdb.GdbError("ulpt: cannot watch %s (0x%x, %d bytes): %s"
                           % (w.expr, w.addr, w.size, errno_text(r)))
    w.agent_id = r
    S.by_agent[r] = w
    agent_first_watch()


def agent_first_watch():
    if S.tpoff is None:
        # Set by the agent's first watch: where a thread's stop record is (gdb.c).
        S.tpoff = int(gdb.parse_and_eval("ulpt_gdb_rec_tpoff"))
        S.last = int(gdb.parse_and_eval("(long)&ulpt_gdb_last"))


def agent_unwatch(w, call=True):
    """Ends the agent's watch for w: now (call, from a command), or at the next command (from
    an event, where GDB must not run the program)."""
    if w.queued and call:
        flush_queue()
    elif w.queued:
        w.cancel = True             # its id, once known, goes to S.unwatch (harvest)
        return
    if w.agent_id is None:
        return
    S.by_agent.pop(w.agent_id, None)
    if call and inferior_live():
        try:
            agent_call("((int (*)(int)) ulpt_gdb_unwatch)(%d)", w.agent_id)
        except gdb.error:
            S.unwatch.append(w.agent_id)
    elif inferior_live():
        S.unwatch.append(w.agent_id)
    w.agent_id = None


def flush_unwatch():
    while S.unwatch and inferior_live():
        aid = S.unwatch.pop()
        if aid not in S.by_agent:
            agent_call("((int (*)(int)) ulpt_gdb_unwatch)(%d)", aid)


# ---- watches in a batch (gdb.c: ulpt_gdb_queue) ------------------------------------------

QUEUE_HEAD = struct.Struct("<iIIIII")   # sig, max, n, done, knock, pad
QUEUE_N, QUEUE_KNOCK = 8, 16            # offsets of n (then done) and knock
QUEUE_REQ = struct.Struct("<QQIiii")    # addr, len, mode, tid, result, pad
_libc = ctypes.CDLL(None, use_errno=True)
SYS_TGKILL = 234                        # x86-64


def queue_watch(w, mode, tid):
    """Queues w's request for the agent to start at the program's resume, in the handler of
    the signal sent here to the stopped thread (gdb.c): True; False where a call must start
    it now: the agent has no queue (its signal is the program's), the program has other
    threads (they could run before the handler), the thread blocks the signal, the process
    is not this machine's, or the queue is full."""
    if S.loading or S.calling:
        return False
    inf = gdb.selected_inferior()
    th = gdb.selected_thread()
    try:
        if S.queue is None:
            S.queue = int(gdb.parse_and_eval("(long) &ulpt_gdb_queue"))
        if not S.queued:
            sig, qmax = QUEUE_HEAD.unpack(bytes(inf.read_memory(S.queue, QUEUE_HEAD.size)))[:2]
            if not sig:
                restore_handle()    # the program has the signal now: GDB shows it again
            conn = getattr(inf, "connection", None)
            if (not sig or th is None or len(inf.threads()) != 1 or conn is None or
                    conn.type != "native" or signal_blocked(inf.pid, th.ptid[1], sig)):
                return False
            S.queue_sig, S.queue_max = sig, qmax
        elif len(S.queued) >= S.queue_max:
            return False
        n = len(S.queued)
        inf.write_memory(S.queue + QUEUE_HEAD.size + n * QUEUE_REQ.size,
                         QUEUE_REQ.pack(w.addr, w.size, mode, tid, 0, 0))
        if not n:
            inf.write_memory(S.queue + QUEUE_KNOCK, struct.pack("<I", 1))  # at the resume
            # Silent, as the program's resume it rides on; GDB's handling as it was is kept.
            if S.handle_saved is None:
                S.handle_saved = (S.queue_sig, handle_of(S.queue_sig))
            gdb.execute("handle SIG%d nostop noprint pass" % S.queue_sig, to_string=True)
            if _libc.syscall(SYS_TGKILL, inf.pid, th.ptid[1], S.queue_sig):
                return False
        inf.write_memory(S.queue + QUEUE_N, struct.pack("<I", n + 1))  # the request is in
    except (gdb.error, gdb.MemoryError, OSError):
        return False
    w.queued, w.cancel = True, False
    S.queued.append(w)
    listen()            # the results are read at the next stop
    return True


def handle_of(sig):
    """GDB's handling of sig, as `handle' takes it: "stop print pass" and so on."""
    words = gdb.execute("info signals SIG%d" % sig, to_string=True).split("\n")[1].split()
    yes = [w == "Yes" for w in words[1:4]]
    return " ".join(a if y else b for y, a, b in zip(yes, ("stop", "print", "pass"),
                                                      ("nostop", "noprint", "nopass")))


def restore_handle():
    """GDB's handling of the batches' signal back as it was, once the program has it."""
    if S.handle_saved is not None:
        sig, how = S.handle_saved
        S.handle_saved = None
        gdb.execute("handle SIG%d %s" % (sig, how), to_string=True)


def signal_blocked(pid, tid, sig):
    """Whether thread tid blocks sig (or its status cannot be read)."""
    try:
        with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError):
        pass
    return True


def harvest(call=False):
    """The results of the queued requests: ids into by_agent, failures reported (as GDB
    reports a hardware watchpoint it could not insert at the resume) and their watchpoints
    deleted. Those the agent has not started yet wait, unless call: then it starts them now."""
    if not S.queued:
        return
    inf = gdb.selected_inferior()
    try:
        done = QUEUE_HEAD.unpack(bytes(inf.read_memory(S.queue, QUEUE_HEAD.size)))[3]
        if done < len(S.queued):
            if not call:
                return
            # No knock: the batch's signal comes inside the call, whose stops are not ours.
            inf.write_memory(S.queue + QUEUE_KNOCK, struct.pack("<I", 0))
            agent_call("((int (*)(void)) ulpt_gdb_flush)()")
            done = QUEUE_HEAD.unpack(bytes(inf.read_memory(S.queue, QUEUE_HEAD.size)))[3]
        raw = bytes(inf.read_memory(S.queue + QUEUE_HEAD.size, len(S.queued) * QUEUE_REQ.size))
        inf.write_memory(S.queue + QUEUE_N, b"\0" * 8)  # n, done: the queue is empty
    except (gdb.error, gdb.MemoryError):
        raw, done = b"", 0
    queued, S.queued = S.queued, []
    for i, w in enumerate(queued):
        r = QUEUE_REQ.unpack_from(raw, i * QUEUE_REQ.size)[4] if i < done else -errno.EIO
        w.queued = False
        if w.cancel or S.watches.get(w.num) is not w:
            if r >= 0:
                S.unwatch.append(r)
            continue
        if r < 0:
            gdb.write("ulpt: watchpoint %d: cannot watch %s (0x%x, %d bytes): %s\n"
                      % (w.num, w.expr, w.addr, w.size, errno_text(r)))
            delete_watch(w, call=False)
            continue
        w.agent_id = r
        S.by_agent[r] = w
    agent_first_watch()


def flush_queue():
    """The queued requests started now (a call), where a command needs their ids."""
    harvest(call=True)


# ---- the proxy breakpoint (GDB's `commands` right after ulpt watch) ------------------------

def drop_proxy():
    p, S.proxy = S.proxy, None
    proxy_events(False)
    if p is not None and p.is_valid():
        take_commands(p)
        p.delete()


def proxy_events(on):
    """The events that end a proxy (its `commands`, the program going on) reach Python only
    while there is one: a handler costs GDB a call into Python at each stop (the door's hit
    count changes) and at each resume."""
    if on != S.proxy_events:
        S.proxy_events = on
        for reg, fn in ((gdb.events.cont, on_cont), (gdb.events.breakpoint_modified, on_modified)):
            (reg.connect if on else reg.disconnect)(fn)


def listen(on=True):
    """The stop event reaches Python (on_stop) unless the last stop was a quiet one
    (quiet_stop): GDB makes no event, and calls no Python, with no listener. Every stop()
    of ours that may stop, and every command that leaves work for a stop, turns it on."""
    if on != S.listening:
        S.listening = on
        (gdb.events.stop.connect if on else gdb.events.stop.disconnect)(on_stop)


def quiet_stop():
    """Whether on_stop would do nothing at the stop that decided() has just made: its
    watchpoints are all `silent' (their commands print, and most often continue), and
    nothing waits for a stop (a batch's results, breakpoints to delete, the placeholder,
    another thread's stop, a scope's end). Its work for the stop is then done here."""
    reports = S.last_reports
    if (not reports or S.queued or S.done or S.proxy is not None or S.pending or
            S.signal_stop or S.step_from or S.scope_ended is not None):
        return False
    for w, _, _, _ in reports:
        if not w.silent:
            return False
    S.last_reports = None
    S.bp_addrs = None
    return True


def take_commands(bp):
    w = S.watches.get(bp.number)
    if w is not None and bp.commands:
        w.commands = bp.commands


def new_number():
    """A GDB breakpoint number for a new watchpoint, held by a disabled placeholder (made
    quietly: GDB announces a new breakpoint, "Breakpoint N at ...")."""
    drop_proxy()
    gdb.execute("python gdb.ulpt_gdb_make_proxy()", to_string=True)
    return S.proxy.number


def make_proxy():
    # Made at address 0 and disabled at once; under `set breakpoint always-inserted on` GDB
    # would insert it as it is made (and fail to), so that mode is off meanwhile.
    inserted = gdb.parameter("breakpoint always-inserted")
    if inserted:
        gdb.execute("set breakpoint always-inserted off", to_string=True)
    try:
        p = gdb.Breakpoint("*0", internal=False)
        p.enabled = False
    finally:
        if inserted:
            gdb.execute("set breakpoint always-inserted on", to_string=True)
    S.proxy = p
    proxy_events(True)
    listen()


gdb.ulpt_gdb_make_proxy = make_proxy


def on_modified(bp):
    if S.proxy is not None and bp is S.proxy:
        # GDB's `commands' has given it the watchpoint's: it has served (and GDB is done
        # with it once this returns: map_breakpoint_numbers goes no further).
        if bp.commands:
            drop_proxy()


HW_TYPES = (gdb.BP_HARDWARE_WATCHPOINT, gdb.BP_READ_WATCHPOINT, gdb.BP_ACCESS_WATCHPOINT,
            getattr(gdb, "BP_HARDWARE_BREAKPOINT", -1))


def on_breakpoints_changed(bp):
    if bp.visible:
        S.bp_addrs = None
    # The door takes one of the 4 debug registers: the user's hardware watchpoints and
    # breakpoints come first (the trap stub needs none).
    if bp.visible and S.door_bp is not None and bp.type in HW_TYPES and hw_in_use() >= 4:
        close_door()


def hw_in_use():
    """The user's enabled hardware watchpoints and breakpoints (a debug register each)."""
    return sum(1 for b in gdb.breakpoints() if b.is_valid() and b.enabled and b.type in HW_TYPES)


# ---- the stops -----------------------------------------------------------------------------

def program_frame():
    """The frame the agent's handler will return to, and its stack pointer."""
    f = gdb.newest_frame()
    while f is not None:
        older = f.older()
        if f.type() == gdb.SIGTRAMP_FRAME or f.name() == "ulpt_after_tramp_":
            return older
        f = older
    return None


class Pending:
    """A thread's stop to come at its next instruction: the hits to report there, and whether
    it ends a step of GDB's (which then stops there even with nothing to report; from is the
    instruction the step ran, for how the stop is shown)."""

    def __init__(self, pc, thread):
        self.bp = ResumeBreakpoint(pc, thread)
        self.hits = []
        self.step = False
        self.step_from = 0


class ResumeBreakpoint(gdb.Breakpoint):
    """The program's next instruction after a hit, in the thread that made it."""

    def __init__(self, pc, thread):
        super().__init__("*0x%x" % pc, internal=True)
        self.thread = thread
        self.silent = True
        self.pc = pc

    def stop(self):
        listen()
        th = gdb.selected_thread()
        p = S.pending.get(th.global_num)
        if p is None or p.bp is not self:
            return False
        del S.pending[th.global_num]
        S.done.append(self)         # deleted at the stop event: not inside stop()
        reports = take_reports(p.hits)
        if not reports and not p.step:
            return False
        set_commands(self, reports)
        S.last_reports = reports
        S.step_from = p.step_from
        if reports and self.pc in user_breakpoints():
            # GDB shows a watchpoint's report before the stop of a breakpoint at the same
            # instruction, which it prints itself after this.
            text = report_text(reports)
            if text:
                gdb.write(text)
                S.reported_early = True
        return True


def take_reports(hits):
    """The hits (watchpoint, kind, value now) that stop, in the program's frame: their
    conditions hold. Each is (watchpoint, kind, old value, value now)."""
    reports = []
    for w, kind, data in hits:
        if w.num not in S.watches or not w.enabled:
            continue
        old = w.old
        if kind == WL_WRITE:
            w.old = data
        if w.cond:
            try:
                if not bool(gdb.parse_and_eval(w.cond)):
                    continue
            except gdb.error as e:
                gdb.write("Error in testing condition for watchpoint %d:\n%s\n"
                          % (w.num, e))
        w.hits += 1
        reports.append((w, kind, old, data))
    return reports


def set_commands(bp, reports):
    """The stop's breakpoint runs the commands of the watchpoints it reports. What it has is
    kept beside it: reading bp.commands makes GDB print them, a good part of a stop's time."""
    if len(reports) == 1:       # the common case, without the join's generator (a stop's
        cmds = reports[0][0].commands or ""     # time in the guest goes with its calls)
    else:
        cmds = "\n".join(w.commands for w, _, _, _ in reports if w.commands)
    if cmds != getattr(bp, "ulpt_commands", None):
        bp.commands = cmds
        bp.ulpt_commands = cmds


class StopBreakpoint(gdb.Breakpoint):
    """ulpt_gdb_stop: a hit the agent saw. Decides, and sends the stop to ResumeBreakpoint.
    Inside a step of GDB's (the agent took it over: see gdb.c) it stops here, silently, and
    its command continues to the program's next instruction, where the step ends."""

    def __init__(self):
        super().__init__("*ulpt_gdb_stop", internal=True)
        self.silent = True

    def stop(self):
        listen()
        if S.queued:
            harvest()
        # The arguments in registers, and struct wl_hit's first two fields (watchlib.h: int id,
        # unsigned kind), read raw: an expression per hit costs more than the rest of stop().
        try:
            f = gdb.newest_frame()
            hit = int(f.read_register("rdi"))
            stepping = int(f.read_register("rsi")) & 0xffffffff != 0
            resume = int(f.read_register("rdx"))
            ip = int(f.read_register("rcx"))
            if not hit:
                return self.step_end(stepping, resume, ip)
            raw = bytes(gdb.selected_inferior().read_memory(hit, 8))
        except (gdb.error, gdb.MemoryError):
            return False
        w = S.by_agent.get(int.from_bytes(raw[:4], "little", signed=True))
        kind = int.from_bytes(raw[4:], "little")
        data = read_bytes(w.addr, w.size) if w is not None else None
        report = self.decide(w, kind, data)
        th = gdb.selected_thread()
        p = S.pending.get(th.global_num)
        if p is None and (report or stepping):
            if not resume:
                f = program_frame()
                if f is None:
                    return False
                resume = f.pc()
            p = S.pending[th.global_num] = Pending(resume, th.num)
        if report:
            p.hits.append((w, kind, data))
        if not stepping:
            return False
        p.step = True
        if self.commands != "continue":
            self.commands = "continue"
        return True

    def step_end(self, stepping, resume, ip):
        """mprotect: GDB's single step ran into an access to a watched page that is not a hit
        to report (gdb.c): the step ends at the program's next instruction, unless GDB was
        stepping over a breakpoint of its own or ours at the instruction, for a `continue'
        (the program then goes on)."""
        if not stepping or not resume or breakpoint_at(ip):
            return False
        th = gdb.selected_thread()
        p = S.pending.get(th.global_num)
        if p is None:
            p = S.pending[th.global_num] = Pending(resume, th.num)
        p.step = True
        p.step_from = ip
        if self.commands != "continue":
            self.commands = "continue"
        return True

    @staticmethod
    def decide(w, kind, data):
        """Whether the hit is one GDB would report (the condition aside: it is evaluated at
        the program's next instruction); data is the watched value now."""
        if w is None or not w.enabled:
            return False
        if w.thread is not None and gdb.selected_thread().num != w.thread:
            return False
        if kind == WL_WRITE:
            return w.kind != "rwatch" and (w.kind != "watch" or data != w.old)
        return w.kind != "watch"


def user_breakpoints():
    """Where the user's enabled breakpoints have enabled locations."""
    if S.bp_addrs is None:
        # Made again after a change of the user's breakpoints, not at every stop.
        S.bp_addrs = set()
        for bp in gdb.breakpoints():
            if not bp.enabled or bp.type != gdb.BP_BREAKPOINT or bp is S.proxy:
                continue
            S.bp_addrs.update(loc.address for loc in bp.locations if loc.enabled)
    return S.bp_addrs


def breakpoint_at(pc):
    """Whether an enabled breakpoint (the user's, or a ulpt stop) has a location at pc."""
    if pc in user_breakpoints():
        return True
    ours = [p.bp for p in S.pending.values()] + S.done
    return any(isinstance(bp, ResumeBreakpoint) and bp.is_valid() and bp.location == "*0x%x" % pc
               for bp in ours)


def ensure_stop_bp():
    """The breakpoints where the agent's hits stop, for its backend: the fewer, the cheaper
    each stop (GDB takes every breakpoint out at a stop and puts it back to go on)."""
    if S.backend and (S.trap_bp is None or not S.trap_bp.is_valid()):
        S.trap_bp = TrapBreakpoint()
    if S.mprotect and (S.stop_bp is None or not S.stop_bp.is_valid()):
        S.stop_bp = StopBreakpoint()
    if S.mprotect and (S.signal_bp is None or not S.signal_bp.is_valid()):
        S.signal_bp = SignalBreakpoint()


def set_pc(pc):
    """The selected thread's PC. GDB then looks for the frame that was selected (the stub's)
    in the program's stack, unwinding it to its end, which costs more than the rest of the
    stop: with a backtrace limit of 1 it stops at the first frame (the limit is the user's
    again once the PC is written, and it is never cached)."""
    lim = gdb.parameter("backtrace limit")
    gdb.execute("set backtrace limit 1", to_string=True)
    try:
        gdb.parse_and_eval("$pc = %d" % pc)
    finally:
        gdb.execute("set backtrace limit %s" % (lim or "unlimited"), to_string=True)


# struct gdb_rec (gdb.c): resume, ip, n, stepping, then 8 hits of (id, kind).
REC = struct.Struct("<QQII16i")
# struct ulpt_gdb_last (gdb.c): a thread id, its record's address.
LAST = struct.Struct("<qQ")
# struct gdb_door (gdb.c): on, lock, wanted, n, resume, ip, then 8 hits of (id, kind, value).
DOOR = struct.Struct("<iiiIQQ" + "iI8s" * 8)
DOOR_HEAD = struct.Struct("<iii")      # its on, lock and wanted
DOOR_ON = struct.Struct("<i")
DOOR_WATCHED, DOOR_TRAPS, DOOR_PROBING = 1, 2, 3


def record_stop(bp):
    """A hit's stop at the trap stub (gdb.c): reads the thread's record, moves the PC to the
    program's next instruction if it may stop there, and decides. Where it does not stop,
    the PC stays in the stub, whose own code goes on to the program: GDB steps over the
    breakpoint that stopped at the PC it finds, and a step at the next instruction would
    pass over a breakpoint there (the user's, or a Pending's), whose stop would be lost."""
    try:
        # The record of the last thread sent here, if it is this one: no registers
        # read (FS_BASE would make GDB build the stub's frame, most of stop()'s time
        # once the PC is set), else through the thread pointer.
        inf = gdb.selected_inferior()
        tid, addr = LAST.unpack(bytes(inf.read_memory(S.last, LAST.size)))
        if tid != gdb.selected_thread().ptid[1]:
            addr = int(gdb.newest_frame().read_register("fs_base")) + S.tpoff
        rec = REC.unpack(bytes(inf.read_memory(addr, REC.size)))
        resume, ip, n = rec[0], rec[1], min(rec[2], 8)
        # GDB_STEPPED: its single step covered the access; GDB_STEP_END (mprotect): GDB
        # waits at the access for the signal handler's return, and its step ends here,
        # as StopBreakpoint.step_end decides.
        stepping = rec[3] & 1 != 0
        step_end = rec[3] & 2 != 0 and not breakpoint_at(ip)
    except (gdb.error, gdb.MemoryError, TypeError):
        return False        # the stub's own code goes on to the program
    hits = []
    for k in range(n):
        w = S.by_agent.get(rec[4 + 2 * k])
        kind = rec[5 + 2 * k] & 0xffffffff
        data = read_bytes(w.addr, w.size) if w is not None else None
        if StopBreakpoint.decide(w, kind, data):
            hits.append((w, kind, data))
    th = gdb.selected_thread()
    if hits and breakpoint_at(resume):
        # A breakpoint at the next instruction: the stop there shows both, as GDB's own
        # watchpoint's does (the program traps there at once).
        p = S.pending.get(th.global_num)
        if p is None:
            p = S.pending[th.global_num] = Pending(resume, th.num)
        p.hits.extend(hits)
        return False
    if not hits and not stepping and not step_end:
        return False
    try:
        set_pc(resume)      # before the conditions, which are the program's frame's
    except gdb.error:
        return False
    return decided(bp, hits, stepping, step_end, ip)


def decided(bp, hits, stepping=False, step_end=False, ip=0):
    """The stop of bp for hits (watchpoint, kind, value now), if one reports or a step ends."""
    reports = take_reports(hits)
    if not reports and not stepping and not step_end:
        return False
    set_commands(bp, reports)
    S.last_reports = reports
    S.step_from = ip if step_end else 0
    return True


class TrapBreakpoint(gdb.Breakpoint):
    """ulpt_gdb_trap, the agent's stub that a hit's after-call sends the program
    through, every register the program's (gdb.c). stop() moves the PC to the program's next
    instruction, where the stop is, as a hardware watchpoint's: GDB never steps over this
    breakpoint, since the PC has left it."""

    def __init__(self):
        super().__init__("*ulpt_gdb_trap", internal=True)
        self.silent = True

    def stop(self):
        listen()
        if S.queued:
            harvest()
        if S.door_bp is not None:
            door_check()
        return record_stop(self)


def door_check():
    """At the trap stub: frees the door (gdb.c: ulpt_gdb_door) if this thread holds it (a
    probe that did not trap, a step), or if another thread wants it and its holder has
    exited."""
    inf = gdb.selected_inferior()
    try:
        _, lock, wanted = DOOR_HEAD.unpack(bytes(inf.read_memory(S.door, DOOR_HEAD.size)))
        if lock and (lock == gdb.selected_thread().ptid[1] or
                     wanted and all(t.ptid[1] != lock for t in inf.threads())):
            inf.write_memory(S.door + 4, b"\0" * 8)
    except (gdb.error, gdb.MemoryError):
        pass


class DoorWatchpoint(gdb.Breakpoint):
    """The agent's door (gdb.c): a hardware access watchpoint on the slot that its last jump
    reads, so the stop is at the program's next instruction with nothing to write. Its stop()
    frees the door for the next thread, then decides as at the trap stub; at the agent's probe
    of the door it says that the door traps, and the probe goes on to the trap stub; at a
    batch's end (the agent's knock, whose first is the probe) it reads the batch's results."""

    def __init__(self, slot):
        super().__init__("*(long *) 0x%x" % slot, gdb.BP_WATCHPOINT, gdb.WP_ACCESS,
                         internal=True)
        self.silent = True
        self.inf = gdb.selected_inferior()      # its process's, made there (open_door)

    def stop(self):
        if S.queued:
            harvest()
        # The whole record in one read: the stop's cost is mostly GDB's, per call (and in
        # an emulated machine, the code each call runs: the inferior is the door's own).
        inf = self.inf
        try:
            d = DOOR.unpack(inf.read_memory(S.door, DOOR.size))
            if d[0] == DOOR_PROBING:
                inf.write_memory(S.door, DOOR_ON.pack(DOOR_TRAPS) + b"\0" * 8)
                return False        # the probe goes on to the trap stub
            if d[2]:
                inf.write_memory(S.door + 4, b"\0" * 8)     # for the thread that wants it
        except (gdb.error, gdb.MemoryError):
            return False
        if not d[4]:
            return False            # a batch's end (gdb.c: door_knock): its results are read
        hits = []
        for k in range(d[3] if d[3] < 8 else 8):
            w = S.by_agent.get(d[6 + 3 * k])
            kind = d[7 + 3 * k] & 0xffffffff
            data = None
            if w is not None:
                data = d[8 + 3 * k][:w.size] if w.size <= 8 else read_bytes(w.addr, w.size)
            if StopBreakpoint.decide(w, kind, data):
                hits.append((w, kind, data))
        if not decided(self, hits):
            return False
        listen(not quiet_stop())
        return True


def open_door():
    """The door's watchpoint, once per process (the agent tries it at the first hit); none if
    no debug register is left for it: the trap stub then serves every hit."""
    if hw_in_use() >= 4:
        return
    try:
        slot = int(gdb.parse_and_eval("*(long *) &ulpt_gdb_door_slot"))
        S.door = int(gdb.parse_and_eval("(long) &ulpt_gdb_door"))
        S.door_bp = DoorWatchpoint(slot)
        gdb.selected_inferior().write_memory(S.door, DOOR_ON.pack(DOOR_WATCHED))
    except (gdb.error, gdb.MemoryError):
        close_door()


def close_door():
    """No door: the agent's hits go to the trap stub (before a resume only)."""
    if S.door_bp is not None and S.door_bp.is_valid():
        S.door_bp.delete()
    if S.door_bp is not None and S.door is not None and inferior_live():
        try:
            gdb.selected_inferior().write_memory(S.door, DOOR_ON.pack(0))
        except (gdb.error, gdb.MemoryError):
            pass
    S.door_bp = None


class SignalBreakpoint(gdb.Breakpoint):
    """mprotect: where libulpt passes a signal on to the program (ulpt_signal_passed_). GDB
    passes SIGSEGV on silently there, the agent's faults being SIGSEGVs too: the program's own
    stops here, shown as GDB shows a signal, in the program's frame."""

    def __init__(self):
        super().__init__("*ulpt_signal_passed_", internal=True)
        self.silent = True

    def stop(self):
        listen()
        try:
            sig = int(gdb.newest_frame().read_register("rdi")) & 0xffffffff
        except gdb.error:
            return False
        if sig != 11:
            return False
        S.signal_stop = True
        return True


def thread_prefix():
    th = gdb.selected_thread()
    if th is None or len(gdb.selected_inferior().threads()) < 2 and th.num < 2:
        return ""
    name = th.name or ""
    return 'Thread %s "%s" hit ' % (th.num, name) if name else "Thread %s hit " % th.num


def delete_done():
    done, S.done = S.done, []
    for bp in done:
        if bp.is_valid():
            bp.delete()


def on_cont(event):
    # The program goes on: no `commands' can come for the last watchpoint now.
    if not S.calling:
        drop_proxy()


def on_stop(event):
    # One handler for the stop event: each costs GDB a call into Python at every stop.
    report_stop(event)
    on_stop_scope(event)


def report_stop(event):
    # The user's breakpoints change only while the program is stopped: where they are is
    # found again at the first need after this stop (breakpoint_at).
    S.bp_addrs = None
    if S.queued:
        harvest()
    delete_done()
    if not S.calling:
        drop_proxy()
    reports, S.last_reports = S.last_reports, None
    step_from, S.step_from = S.step_from, 0
    early, S.reported_early = S.reported_early, False
    if not isinstance(event, gdb.BreakpointEvent):
        return
    if S.signal_stop:
        S.signal_stop = False
        f = program_frame()
        if f is not None:
            f.select()
        gdb.write("\nProgram received signal SIGSEGV, Segmentation fault.\n" + frame_text())
        return
    # Whether the stop is one of ours: looked at only when it prints (event.breakpoints is
    # made for each look).
    ours = (ResumeBreakpoint, TrapBreakpoint, DoorWatchpoint)
    if reports is None or reports and all(w.silent for w, _, _, _ in reports):
        return
    if not any(isinstance(b, ours) for b in event.breakpoints):
        return
    if not reports:         # a step of GDB's that ended here: where, as after a step
        gdb.write(step_text(step_from) if step_from else frame_text())
        return
    if early:
        # The reports are out (ResumeBreakpoint.stop), and GDB has shown where, at its
        # breakpoint's stop, unless that one is silent too.
        if not any(not isinstance(b, ours) and b.visible and not silent_bp(b)
                   for b in event.breakpoints):
            gdb.write(frame_text())
        return
    text = report_text(reports)
    if text:
        gdb.write(text + frame_text())


def report_text(reports):
    """What GDB's watchpoints print at a stop for reports, the frame's line aside."""
    out = []
    prefix = None
    for w, kind, old, data in reports:
        if w.silent:
            continue                # GDB's `silent': the commands say what to
        if prefix is None:
            prefix = thread_prefix()
        out.append("\n%s%s %d: %s\n\n" % (prefix, KINDS[w.kind][1], w.num, w.title()))
        if kind == WL_WRITE and old != data:
            out.append("Old value = %s\nNew value = %s\n" % (w.value(old), w.value(data)))
        else:
            out.append("Value = %s\n" % w.value(data))
    return "".join(out)


def silent_bp(bp):
    """Whether GDB's stop at bp prints nothing of its own (`silent', or its commands')."""
    return bp.silent or silent_commands(bp.commands)


def frame_text():
    """The selected frame as a stop shows it (`frame' without its "#N  ")."""
    frame = gdb.execute("frame", to_string=True)
    if frame.startswith("#"):
        frame = frame.split(" ", 1)[1].lstrip() if " " in frame else frame
    return frame


def function_at(pc):
    """Where the function whose code holds pc starts, or None."""
    b = gdb.block_for_pc(pc)
    while b is not None and b.function is None:
        b = b.superblock
    return b.start if b is not None else None


def step_text(step_from):
    """Where a step ended, as GDB shows it: the source line alone at a line's start in the
    function the step began in, with the address before it inside a line; the frame when the
    step went into another function."""
    f = gdb.selected_frame()
    pc = f.pc()
    sal = f.find_sal()
    start, here = function_at(step_from), function_at(pc)
    if start is None or start != here or sal.symtab is None:
        return frame_text()
    src = frame_text().split("\n", 1)
    line = src[1] if len(src) > 1 else "%d\n" % sal.line
    if sal.pc == pc:
        return line
    return "0x%016x\t%s" % (pc, line)


def on_exited(event):
    S.checked_pid = 0
    delete_done()
    # The breakpoints in the agent go with its process; the next one's start makes them anew.
    for bp in (S.stop_bp, S.ready_bp, S.signal_bp, S.trap_bp, S.door_bp):
        if bp is not None and bp.is_valid():
            bp.delete()
    S.stop_bp = S.ready_bp = S.signal_bp = S.trap_bp = S.door_bp = None
    S.mprotect = False
    S.backend = 0
    S.tpoff = S.last = S.door = None
    for p in S.pending.values():
        if p.bp.is_valid():
            p.bp.delete()
    S.queue, S.queued = None, []
    for w in list(S.watches.values()):
        w.agent_id = None
        w.queued = False
        if w.scope is not None:
            delete_watch(w, call=False)
    S.by_agent.clear()
    S.pending.clear()
    S.unwatch = []


def on_new_objfile(event):
    """The agent just loaded (a run, or -p's dlopen)."""
    if "ulpt-watch-agent" not in os.path.basename(event.new_objfile.filename or ""):
        return
    try:
        ensure_stop_bp()
        if S.ready_bp is None or not S.ready_bp.is_valid():
            S.ready_bp = ReadyBreakpoint()
    except gdb.error:
        pass        # not resolvable yet (a dlopen under way): agent_watch makes them


class ReadyBreakpoint(gdb.Breakpoint):
    """The agent's start is done: the watchpoints made before the program ran go in. It stops
    silently and its commands watch and continue (stop() may not call the program)."""

    def __init__(self):
        super().__init__("*ulpt_gdb_ready", internal=True)
        self.silent = True

    def stop(self):
        listen()
        if S.loading or not any(w.enabled and w.agent_id is None and not w.queued
                                for w in S.watches.values()):
            return False
        self.commands = "python gdb.ulpt_gdb_apply()\ncontinue"
        return True


def ulpt_gdb_apply():
    for w in sorted(S.watches.values(), key=lambda w: w.num):
        if w.enabled and w.agent_id is None and not w.queued:
            try:
                # Made before the program ran, the address was the file's (a PIE's
                # unrelocated one): the expression again, now that the program is there.
                v = gdb.parse_and_eval(w.expr)
                if v.address is None:
                    raise gdb.GdbError("Cannot watch constant value `%s'." % w.expr)
                w.addr = int(v.address)
                agent_watch(w)
                w.old = read_bytes(w.addr, w.size)
            except (gdb.GdbError, gdb.error) as e:
                gdb.write("ulpt: watchpoint %d: %s\n" % (w.num, e))


gdb.ulpt_gdb_apply = ulpt_gdb_apply


# ---- the commands --------------------------------------------------------------------------

def parse_watch(arg):
    """EXPR [thread N] [if COND], with -l/-location first: (location, expr, thread, cond)."""
    words = arg.strip()
    location = False
    for flag in ("-location ", "-l "):
        if words.startswith(flag):
            location, words = True, words[len(flag):].strip()
    cond = None
    i = find_word(words, "if")
    if i >= 0:
        words, cond = words[:i].strip(), words[i + 2:].strip()
        if not cond:
            raise gdb.GdbError("Argument required (boolean expression).")
    thread = None
    i = find_word(words, "thread")
    if i >= 0:
        t = words[i + 6:].strip()
        words = words[:i].strip()
        if not t.isdigit() or not any(th.num == int(t)
                                      for th in gdb.selected_inferior().threads()):
            raise gdb.GdbError("Unknown thread %s." % t)
        thread = int(t)
    if not words:
        raise gdb.GdbError("Argument required (expression to compute).")
    return location, words, thread, cond


def find_word(s, word):
    """Where the keyword word stands alone in s, outside brackets and quotes, or -1."""
    depth, quote = 0, None
    for i, c in enumerate(s):
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif (depth == 0 and s.startswith(word, i) and (i == 0 or s[i - 1].isspace())
              and (i + len(word) == len(s) or s[i + len(word)].isspace())):
            return i
    return -1


class UlptPrefix(gdb.Command):
    """ulpt-gdb: watchpoints of any number and size (the ulpt-watch agent in the program).
ulpt watch, ulpt rwatch, ulpt awatch, ulpt info watchpoints, ulpt delete, ulpt disable,
ulpt enable, ulpt condition; GDB's `commands' right after a ulpt watch."""

    def __init__(self):
        super().__init__("ulpt", gdb.COMMAND_BREAKPOINTS, prefix=True)


class WatchCommand(gdb.Command):
    def __init__(self, kind):
        super().__init__("ulpt " + kind, gdb.COMMAND_BREAKPOINTS, gdb.COMPLETE_EXPRESSION)
        self.kind = kind

    def invoke(self, arg, from_tty):
        location, expr, thread, cond = parse_watch(arg)
        try:
            v = gdb.parse_and_eval(expr)
        except gdb.error as e:
            raise gdb.GdbError(str(e))
        if v.type.code == gdb.TYPE_CODE_FUNC:
            raise gdb.GdbError("Cannot watch a function: `%s'." % expr)
        if v.address is None:
            if expr.lstrip().startswith("$"):
                raise gdb.GdbError("Cannot watch a register or convenience variable with "
                                   "ulpt %s: `%s' has no address." % (self.kind, expr))
            raise gdb.GdbError("Cannot watch constant value `%s'." % expr)
        size = v.type.sizeof
        if size <= 0:
            raise gdb.GdbError("Cannot watch `%s': its type has no size." % expr)
        addr = int(v.address)
        scope = None
        if not location and inferior_live():
            scope = local_frame(expr)
        flush_unwatch()
        num = new_number()
        w = Watch(num, self.kind, expr, location, addr, size, v.type.strip_typedefs(), thread,
                  cond)
        S.watches[num] = w
        if inferior_live():
            try:
                agent_watch(w)
            except gdb.GdbError:
                del S.watches[num]
                drop_proxy()
                raise
        w.old = read_bytes(addr, size) if inferior_live() else None
        if scope is not None:
            w.scope = ScopeBreakpoint(scope, w)
        gdb.write("%s %d: %s\n" % (KINDS[self.kind][1], num, w.title()))


def local_frame(expr):
    """The selected frame if expr names one of its locals or arguments (the watchpoint's scope,
    as GDB's innermost block of the expression), else None."""
    try:
        f = gdb.selected_frame()
        block = f.block()
    except (gdb.error, RuntimeError):
        return None
    for name in identifiers(expr):
        sym = gdb.lookup_symbol(name, block)[0]
        if sym is not None and sym.needs_frame:
            return f
    return None


def identifiers(expr):
    """The C identifiers of expr outside quotes (member names after . and -> included: a
    lookup of one that is not a local finds nothing, or a global)."""
    out, word, quote = [], "", None
    for c in expr + " ":
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c.isalnum() or c in "_$":
            word += c
            continue
        if word and not word[0].isdigit() and word[0] != "$":
            out.append(word)
        word = ""
    return out


class ScopeBreakpoint(gdb.FinishBreakpoint):
    """A local's watchpoint ends with its frame, as GDB's does."""

    def __init__(self, frame, w):
        super().__init__(frame, internal=True)
        self.silent = True
        self.w = w

    def stop(self):
        listen()
        w = self.w
        if w.num not in S.watches:
            return False
        S.last_reports = None
        S.scope_ended = w
        return True

    def out_of_scope(self):
        if self.w.num in S.watches:
            delete_watch(self.w, call=False)


def on_stop_scope(event):
    w = S.scope_ended
    S.scope_ended = None
    if w is None or not isinstance(event, gdb.BreakpointEvent):
        return
    gdb.write("\nWatchpoint %d deleted because the program has left the block in\n"
              "which its expression is valid.\n" % w.num)
    delete_watch(w, call=False)
    gdb.write(frame_text())


def delete_watch(w, call=True):
    listen()            # its scope's breakpoint is deleted at the next stop
    S.watches.pop(w.num, None)
    agent_unwatch(w, call)
    if w.scope is not None and w.scope.is_valid():
        sc, w.scope = w.scope, None
        S.done.append(sc)
    if S.proxy is not None and S.proxy.is_valid() and S.proxy.number == w.num:
        drop_proxy()


def numbers(arg):
    """The watchpoint numbers of arg (N, N-M, or none for all)."""
    drop_proxy()
    flush_unwatch()
    if not arg.strip():
        return sorted(S.watches)
    out = []
    for word in arg.split():
        lo, _, hi = word.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise gdb.GdbError("Convenience variable must have integer value.\n"
                               "Args must be numbers or '$' variables."
                               if word.startswith("$") else "Bad watchpoint number '%s'" % word)
        for n in range(int(lo), int(hi or lo) + 1):
            if n in S.watches:
                out.append(n)
            else:
                gdb.write("No ulpt watchpoint number %d.\n" % n)
    return out


class DeleteCommand(gdb.Command):
    """Delete ulpt watchpoints: ulpt delete [N...] (all without N)."""

    def __init__(self):
        super().__init__("ulpt delete", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        for n in numbers(arg):
            delete_watch(S.watches[n])


class EnableCommand(gdb.Command):
    """Enable (or disable) ulpt watchpoints: ulpt enable|disable [N...]."""

    def __init__(self, on):
        super().__init__("ulpt " + ("enable" if on else "disable"), gdb.COMMAND_BREAKPOINTS)
        self.on = on

    def invoke(self, arg, from_tty):
        for n in numbers(arg):
            w = S.watches[n]
            if w.enabled == self.on:
                continue
            w.enabled = self.on
            if not self.on:
                agent_unwatch(w)        # a disabled watchpoint costs the program nothing
            elif inferior_live():
                agent_watch(w)
                w.old = read_bytes(w.addr, w.size)


class ConditionCommand(gdb.Command):
    """Set or remove a ulpt watchpoint's condition: ulpt condition N [COND]."""

    def __init__(self):
        super().__init__("ulpt condition", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        n, _, cond = arg.strip().partition(" ")
        if not n.isdigit():
            raise gdb.GdbError("Argument required (breakpoint number).")
        w = S.watches.get(int(n))
        if w is None:
            raise gdb.GdbError("No ulpt watchpoint number %s." % n)
        w.cond = cond.strip() or None
        if w.cond is None:
            gdb.write("Watchpoint %d now unconditional.\n" % w.num)


class InfoCommand(gdb.Command):
    """List the ulpt watchpoints, as info watchpoints does."""

    def __init__(self):
        super().__init__("ulpt info", gdb.COMMAND_BREAKPOINTS, prefix=True)


class InfoWatchpoints(gdb.Command):
    """List the ulpt watchpoints: ulpt info watchpoints [N...]."""

    def __init__(self):
        super().__init__("ulpt info watchpoints", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        nums = numbers(arg)
        if not nums:
            gdb.write("No watchpoints.\n" if not arg.strip() else "")
            return
        out = ["Num     Type            Disp Enb Address            What\n"]
        for n in nums:
            w = S.watches[n]
            out.append("%-7d %-15s keep %s   %-18s %s\n"
                       % (n, KINDS[w.kind][2], "y" if w.enabled else "n", "", w.title()))
            if w.cond:
                out.append("\tstop only if %s\n" % w.cond)
            if w.thread is not None:
                out.append("\tstop only in thread %d\n" % w.thread)
            if w.hits:
                out.append("\tbreakpoint already hit %d time%s\n"
                           % (w.hits, "" if w.hits == 1 else "s"))
            if w.commands:
                out.extend("        %s\n" % line for line in w.commands.splitlines())
        gdb.write("".join(out))


UlptPrefix()
for _k in KINDS:
    WatchCommand(_k)
DeleteCommand()
EnableCommand(True)
EnableCommand(False)
ConditionCommand()
InfoCommand()
InfoWatchpoints()
# GDB steps over a breakpoint by running a copy of its instruction elsewhere (displaced
# stepping): an instruction that hits a watchpoint would fault there, and the agent's stop in
# the middle of that step would leave GDB's fix-up of the copy wrong. In place instead (GDB
# takes the breakpoint out for that one step), as in all-stop mode GDB can.
gdb.execute("set displaced-stepping off")
gdb.events.stop.connect(on_stop)
gdb.events.exited.connect(on_exited)
gdb.events.new_objfile.connect(on_new_objfile)
gdb.events.breakpoint_created.connect(on_breakpoints_changed)
gdb.events.breakpoint_deleted.connect(on_breakpoints_changed)
