# delete, disable and enable: a disabled watchpoint does not stop, an enabled one does.
break steps
run
ulpt watch counter
ulpt watch total
ulpt disable 2
ulpt info watchpoints
continue
ulpt enable 2
ulpt delete 3
ulpt info watchpoints
continue
ulpt delete 2
ulpt info watchpoints
continue
