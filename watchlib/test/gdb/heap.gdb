# A heap block's element, through the pointer that holds it (a local: the watchpoint is
# scoped to its frame, as GDB's).
break steps
run
next
next
ulpt watch h[3]
continue
continue
print h[3]
