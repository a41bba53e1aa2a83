# GDB's commands right after ulpt watch: silent, then print and continue at each stop; info
# breakpoints then shows no placeholder for the watchpoint's number.
break steps
run
ulpt watch counter
commands
  silent
  print counter
  continue
end
ulpt info watchpoints
info breakpoints
continue
