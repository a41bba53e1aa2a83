# The knock: watchpoints queued in a batch make the agent knock on the door at the resume
# (gdb.c), where the extension reads their results and the probe is made: on ULPT every hit then
# stops through the door, the first too; on mprotect the door stays shut.
break steps
run
ulpt watch counter
ulpt watch total
continue
continue
continue
continue
print ulpt_gdb_door.on
maint info breakpoints
