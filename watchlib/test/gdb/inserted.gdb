# The global case, the same output, under `set breakpoint always-inserted on'.
# GDB then inserts a breakpoint as it is made and keeps them in while the program is stopped.
set breakpoint always-inserted on
break steps
run
ulpt watch counter
continue
bt
continue
ulpt info watchpoints
info breakpoints
continue
continue
