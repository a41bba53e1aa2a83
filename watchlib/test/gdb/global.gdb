# watch on a global: old and new values; a write of the same value does not stop; bt starts
# in the program; info watchpoints counts the stops.
break steps
run
ulpt watch counter
continue
bt
continue
ulpt info watchpoints
continue
continue
