# GDB's commands right after ulpt watch: silent, then print and continue at each stop.
break steps
run
ulpt watch counter
commands
  silent
  print counter
  continue
end
ulpt info watchpoints
continue
