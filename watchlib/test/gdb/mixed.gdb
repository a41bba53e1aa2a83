# GDB's own hardware watchpoint beside a ulpt watchpoint: each stops at its writes, as usual.
break steps
run
watch counter
ulpt watch total
continue
continue
continue
continue
continue
