# watch on a global: old and new values; a write of the same value does not stop; bt starts
# in the program; info watchpoints counts the stops; info breakpoints shows only the user's.
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
