# Quiet stops: on ULPT a silent watchpoint's stop through the door with nothing else to do reaches no Python at GDB's stop event (counter = 3's); a hit whose next instruction has a breakpoint stops there, both shown, as GDB's own watchpoint does (counter = 2's)
break steps
run
ulpt watch counter
commands
  silent
  python print("listening %s" % S.listening)
  print counter
  continue
end
ulpt watch total
break gdbwatch.c:46
continue
continue
