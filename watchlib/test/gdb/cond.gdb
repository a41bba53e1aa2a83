# Conditions: a false one goes on silently (the value seen is kept as the old one); ulpt
# condition sets and removes one.
break steps
run
ulpt watch counter if counter == 2
ulpt info watchpoints
continue
ulpt condition 2
ulpt info watchpoints
continue
