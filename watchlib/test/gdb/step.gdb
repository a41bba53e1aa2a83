# Stepping: stepi over a write to a watched line that is not a hit is one instruction; next
# over the line that writes a watched variable ends at the watchpoint's stop, right after the
# write, as at GDB's hardware watchpoint; stepping goes on from there.
break steps
run
ulpt watch total
next
next
stepi
next
next
next
next
next
next
next
continue
