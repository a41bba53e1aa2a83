# A hit whose next instruction has a breakpoint: one stop there, the watchpoint's report first and then the breakpoint's stop, as GDB's own watchpoint shows them (counter = 2's)
break steps
run
ulpt watch counter
break gdbwatch.c:46
continue
continue
continue
