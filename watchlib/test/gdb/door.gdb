# The door: on ULPT, where the debug registers trap, the first hit tries it and every later hit
# stops through it (its hardware watchpoint, no breakpoint, no PC written); on mprotect it is off.
break steps
run
ulpt watch counter
continue
continue
continue
print ulpt_gdb_door.on
maint info breakpoints
